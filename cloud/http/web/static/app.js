// edgetriage page: one EventSource ("stream"), cards upserted by id, the figures panel redrawn on each
// "stats" message. Plain DOM and SVG; every text goes in through textContent, never as HTML.
"use strict";

(function () {
  const MAX_CARDS = 300;
  const cards = new Map();          // entry id -> {el, entry}
  const seen = { device: new Set(), camera: new Set(), label: new Set() };
  const filters = { device: "", camera: "", label: "", verdict: "" };
  let history = [];

  const { $, el, fmtMs } = window.edgetriageDom;
  const svg = (tag, attrs) => {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  };
  const fmtPct = (v) => (v === null || v === undefined ? "—" : Math.round(v * 100) + "%");
  const fmtNum = (v) => (v === null || v === undefined ? "—" : String(v));
  const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });

  // -- cards ---------------------------------------------------------------------------------------
  function verdictClass(e) {
    if (e.verdict) return e.verdict;
    return e.outcome === "waiting" ? "waiting" : "none";
  }

  function verdictText(e) {
    if (e.provisional && e.outcome === "waiting") return e.verdict ? "first answer: " + e.verdict : "first answer";
    if (e.verdict && e.provisional) return e.verdict + " (provisional)";
    if (e.verdict) return e.verdict + (e.confidence !== null ? " " + Math.round(e.confidence * 100) + "%" : "");
    if (e.outcome === "waiting") return "waiting";
    return e.outcome === "dropped" ? "dropped" : "on device";
  }

  function thumbNode(e) {
    const box = el("div", "thumb");
    if (!e.thumb) {
      box.appendChild(el("div", "nothumb", "no image"));
      return box;
    }
    const img = el("img");
    img.alt = e.label + " on " + e.camera;
    img.loading = "lazy";
    img.src = e.thumb;
    box.appendChild(img);
    for (const b of e.boxes || []) {
      const r = el("div", "box" + (b.main ? " main" : "") + (b.y1 < 0.1 ? " top" : ""));  // label inside at the top edge
      r.style.left = (b.x1 * 100).toFixed(2) + "%";
      r.style.top = (b.y1 * 100).toFixed(2) + "%";
      r.style.width = ((b.x2 - b.x1) * 100).toFixed(2) + "%";
      r.style.height = ((b.y2 - b.y1) * 100).toFixed(2) + "%";
      r.appendChild(el("span", null, b.label + " " + b.score.toFixed(2)));
      box.appendChild(r);
    }
    return box;
  }

  function pathNode(e) {
    const path = el("div", "path");
    e.path.forEach((step, i) => {
      if (i) path.appendChild(el("span", "arrow", "→"));
      const last = i === e.path.length - 1;
      const cls = "step" + (last ? " last " + (step.step === "llm" || step.step === "fallback" ? "model" : step.step) : "");
      const chip = el("span", cls);
      chip.appendChild(el("b", null, step.label || step.step));
      if (step.detail) chip.appendChild(el("span", "d", step.detail));
      path.appendChild(chip);
    });
    return path;
  }

  function cardNode(e) {
    const card = el("article", "card " + verdictClass(e));
    card.dataset.id = e.id;
    card.appendChild(thumbNode(e));
    const info = el("div", "info");
    const row = el("div", "row1");
    row.appendChild(el("span", "where", e.camera + " @ " + e.device));
    // the event's own local time where it has one: the time its facts and description give
    const when = el("span", "when", (e.local_time || clock(e.at_ms)) + (e.track_id !== null ? " · track " + e.track_id : ""));
    if (e.local_time) when.title = "device's local time; here " + clock(e.at_ms);
    row.appendChild(when);
    row.appendChild(el("span", "verdict " + verdictClass(e), verdictText(e)));
    info.appendChild(row);
    info.appendChild(pathNode(e));
    const desc = el("div", "desc");
    if (e.description) desc.appendChild(el("q", null, e.description));
    else if (e.outcome === "waiting") desc.appendChild(el("span", "muted", "asking the model…"));
    info.appendChild(desc);
    if (e.facts && e.facts.length) info.appendChild(el("div", "facts", "facts: " + e.facts.join(" ")));
    if (e.checked) info.appendChild(el("div", "checked", "overruled by the check: " + e.checked));
    if (e.policy) {  // the compiled policy beside the verdict, and which clause decided
      const line = el("div", "policy", "policy: " + e.policy);
      line.appendChild(el("b", null, " · decided by " + (e.decided_by || "model") + (e.clause ? ": " + e.clause : "")));
      info.appendChild(line);
    }
    const meta = [];
    if (e.latency_ms !== null) meta.push("verdict in " + fmtMs(e.latency_ms));
    if (e.model) meta.push(e.model + (e.routed_by ? " (" + e.routed_by.replace(/_/g, " ") + ")" : ""));
    if (e.provisional_was) meta.push("final; provisional said " + e.provisional_was);
    meta.push(e.id.includes("~") ? "not sent to the cloud" : "event " + e.id.slice(0, 13) + "…");
    info.appendChild(el("div", "meta", meta.join(" · ")));
    if (window.edgetriageFeedback) info.appendChild(window.edgetriageFeedback.control(e));  // "wrong?" (feedback.js)
    card.appendChild(info);
    return card;
  }

  function remember(kind, value) {
    if (!value || seen[kind].has(value)) return;
    seen[kind].add(value);
    const select = $("f-" + kind);
    const options = [...seen[kind]].sort();
    const current = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const v of options) select.add(new Option(v, v));
    select.value = current;
  }

  function matches(e) {
    if (filters.device && e.device !== filters.device) return false;
    if (filters.camera && e.camera !== filters.camera) return false;
    if (filters.label && e.label !== filters.label) return false;
    if (filters.verdict && verdictClass(e) !== filters.verdict) return false;
    return true;
  }

  function upsert(e, live) {
    remember("device", e.device);
    remember("camera", e.camera);
    remember("label", e.label);
    const node = cardNode(e);
    node.hidden = !matches(e);
    const old = cards.get(e.id);
    const list = $("timeline");
    if (old) {
      list.replaceChild(node, old.el);
    } else {
      // newest first, by the card's wall time
      let before = null;
      for (const child of list.querySelectorAll("article.card")) {
        const other = cards.get(child.dataset.id);
        if (other && other.entry.at_ms <= e.at_ms) { before = child; break; }
      }
      list.insertBefore(node, before);
    }
    if (live) {
      node.classList.add("fresh");
      node.dataset.live = "1";  // arrived or changed while the page was open
    }
    cards.set(e.id, { el: node, entry: e });
    while (cards.size > MAX_CARDS) {
      const oldest = list.querySelector("article.card:last-of-type");
      if (!oldest) break;
      cards.delete(oldest.dataset.id);
      oldest.remove();
    }
    $("empty").hidden = cards.size > 0;
    countShown();
  }

  function countShown() {
    let n = 0;
    for (const { el: node } of cards.values()) if (!node.hidden) n += 1;
    $("shown").textContent = n + " of " + cards.size + " shown";
  }

  function applyFilters() {
    for (const { el: node, entry } of cards.values()) node.hidden = !matches(entry);
    countShown();
  }

  for (const kind of Object.keys(filters)) {
    $("f-" + kind).addEventListener("change", (ev) => { filters[kind] = ev.target.value; applyFilters(); });
  }

  // -- figures -------------------------------------------------------------------------------------
  function setTile(id, text, cls) {
    const node = $(id);
    node.textContent = text;
    node.className = "v" + (cls ? " " + cls : "");
  }

  function drawChart(points) {
    const chart = $("chart");
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    const W = 400, H = 150, L = 42, R = 6, T = 8, B = 18;
    const values = points.flatMap((p) => [p.l_total, p.measured]).filter((v) => v !== null && v !== undefined);
    if (points.length === 0 || values.length === 0) {
      chart.appendChild(svg("text", { x: L, y: H / 2 })).textContent = "no verdicts yet";
      return;
    }
    const max = Math.max(...values) * 1.1 || 1;
    const t0 = points[0].t, t1 = points[points.length - 1].t;
    const span = Math.max(1, t1 - t0);
    const x = (t) => (points.length === 1 ? (L + W - R) / 2 : L + ((t - t0) / span) * (W - L - R));
    const y = (v) => T + (1 - v / max) * (H - T - B);
    for (const frac of [0, 0.5, 1]) {
      const v = max * frac;
      chart.appendChild(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
      chart.appendChild(svg("text", { x: 2, y: y(v) + 3 })).textContent = fmtMs(v);
    }
    chart.appendChild(svg("text", { x: L, y: H - 4 })).textContent = clock(t0);
    chart.appendChild(svg("text", { x: W - R - 44, y: H - 4 })).textContent = clock(t1);
    for (const [key, cls] of [["l_total", "total"], ["measured", "measured"]]) {
      const pts = points.filter((p) => p[key] !== null && p[key] !== undefined);
      if (!pts.length) continue;
      const coords = pts.map((p) => x(p.t).toFixed(1) + "," + y(p[key]).toFixed(1));
      if (coords.length === 1) coords.push((W - R) + "," + y(pts[0][key]).toFixed(1));
      chart.appendChild(svg("polyline", { points: coords.join(" "), class: cls }));
    }
  }

  function drawStats(s) {
    if (s.history) history = s.history;
    else if (s.point && (!history.length || history[history.length - 1].t !== s.point.t)) {
      history.push(s.point);
      if (history.length > 600) history.shift();
    }
    setTile("s-alpha", s.alpha === null ? "—" : s.alpha.toFixed(2));
    setTile("s-hit-device", fmtPct(s.hit_rate.device_cache));
    setTile("s-hit-cloud", fmtPct(s.hit_rate.cloud_cache));
    const st = s.status || {};
    const claims = $("site-claims");  // what devices announce that the cloud's [[sites]] says otherwise
    claims.hidden = !(st.site_claims && st.site_claims.length);
    claims.textContent = claims.hidden ? "" : "Devices say otherwise than [[sites]]: " + st.site_claims.join(" · ");
    setTile("s-queue", fmtNum(st.queue_depth));
    if (st.overloaded === undefined) setTile("s-load", "—");
    else setTile("s-load", st.overloaded ? "overloaded" : "normal", st.overloaded ? "bad" : "good");
    if (st.capacity_per_s === undefined || st.capacity_per_s === null) setTile("s-capacity", "—");
    else setTile("s-capacity", st.verdicts_per_s + " of " + st.capacity_per_s + "/s, wait " + fmtMs(st.queue_wait_ms),
                 st.headroom_per_s > 0 ? "good" : "bad");
    if (st.mqtt_connected === undefined) setTile("s-broker", "—");
    else setTile("s-broker", st.mqtt_connected ? "connected" : "down", st.mqtt_connected ? "good" : "bad");

    const body = $("s-latency");
    while (body.firstChild) body.removeChild(body.firstChild);
    const rows = [["device_cache", "device cache (lookup)"], ["cloud_cache", "cloud cache"], ["llm", "model"],
      ["all", "all verdicts"], ["device_end_to_end", "escalated, at the device"]];
    for (const [name, label] of rows) {
      const l = s.latency_ms[name];
      if (name === "device_end_to_end" && !l.n) continue;
      const tr = el("tr");
      tr.appendChild(el("td", null, label));
      tr.appendChild(el("td", null, l.n));
      for (const q of ["p50", "p95", "p99"]) tr.appendChild(el("td", null, fmtMs(l[q])));
      body.appendChild(tr);
    }

    const f = $("s-formula");
    if (s.l_total_ms === null) f.textContent = "waiting for verdicts…";
    else {
      const a = s.alpha;
      f.textContent = fmtMs(s.l_sched_ms || 0) + " + " + a.toFixed(2) + "·" + fmtMs(s.l_light_ms || 0) +
        " + " + (1 - a).toFixed(2) + "·" + fmtMs(s.l_llm_ms || 0) + " = " + fmtMs(s.l_total_ms) +
        "   ·   measured median " + fmtMs(s.measured_median_ms);
    }
    drawChart(history);
    drawRouting(s.routing);

    const cams = $("s-cameras");
    while (cams.firstChild) cams.removeChild(cams.firstChild);
    for (const c of s.cameras) {
      const tr = el("tr");
      const name = el("td", null, c.device + "/" + c.camera);
      name.title = c.device + "/" + c.camera;
      tr.appendChild(name);
      for (const k of ["frames_read", "frames_detected", "escalated", "device_cache", "cloud_cache", "llm", "alerts", "corrections"]) {
        tr.appendChild(el("td", null, fmtNum(c[k])));
      }
      cams.appendChild(tr);
    }
  }

  // several back-ends (cloud.ops.figures' routing): per back-end L_llm and expected answer time, L_total vs T_max,
  // first answers, provisional share, provisional-vs-final agreement
  function drawRouting(r) {
    const box = $("s-routing");
    while (box.firstChild) box.removeChild(box.firstChild);
    if (!r || Object.keys(r.backends).length < 2) { box.appendChild(el("span", "muted", "one back-end")); return; }
    for (const [name, b] of Object.entries(r.backends)) {
      box.appendChild(el("div", null, name + " (" + b.cost + (b.up ? "" : ", down") + "): L_llm " + fmtMs(b.L_llm_ms) +
        ", next answer in ~" + fmtMs(b.expected_answer_ms) + ", " + b.queue_depth + " waiting, " + b.answered + " answered"));
    }
    const pct = (v) => (v === null || v === undefined ? "—" : Math.round(v * 100) + "%");
    box.appendChild(el("div", null, "L_total " + fmtMs(r.L_total_ms) + " vs T_max " + (r.t_max_ms === null ? "none" : fmtMs(r.t_max_ms)) +
      " · first answers " + r.first_answers + " · provisional " + pct(r.provisional_share) +
      " · finals " + r.finals + ", agreeing " + pct(r.final_agreement)));
  }

  // -- the stream ----------------------------------------------------------------------------------
  let opened = false;
  function connect() {
    const source = new EventSource("stream");
    const live = $("live");
    source.onopen = () => { live.textContent = "live"; live.className = "live on"; };
    source.onerror = () => {
      live.textContent = "reconnecting…";
      live.className = "live off";
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    };
    source.addEventListener("entry", (ev) => upsert(JSON.parse(ev.data), opened));
    source.addEventListener("stats", (ev) => { opened = true; drawStats(JSON.parse(ev.data)); });
  }
  connect();
})();
