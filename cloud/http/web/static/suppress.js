// edgetriage page, suppressions: what the cloud learned from benign events at one place of a camera, with its
// evidence (the crops, the count), for the operator to accept (sent to the device) or reject. Every text goes
// in through textContent, never as HTML.
"use strict";

(function () {
  const { $, el } = window.edgetriageDom;

  function card(s) {
    const box = el("div", "supp " + s.status + (s.expired ? " expired" : ""));
    const region = s.region.map((v) => v.toFixed(2)).join(", ");
    box.append(el("div", "supp-head", s.device + "/" + s.camera + " · " + s.label + " at [" + region + "] · " +
      s.status + (s.expired ? " (expired)" : "")));
    box.append(el("div", "muted", s.count + " benign events alike (" + Object.entries(s.sources || {})
      .map(([k, n]) => k + " " + n).join(", ") + ") · by " + s.appearance + " · until " +
      new Date(s.expires_ms).toLocaleString()));
    const crops = el("div", "supp-crops");
    s.evidence.slice(-8).forEach((e) => {
      const img = el("img");
      img.src = "thumbs/" + encodeURIComponent(e.event_id) + ".jpg";
      img.alt = "event " + e.event_id;
      img.title = "event " + e.event_id;
      crops.append(img);
    });
    box.append(crops);
    if (!s.expired) {
      const actions = el("div", "supp-actions");
      if (s.status !== "accepted") actions.append(button(s.id, "accept", "Accept: answer it on the device"));
      if (s.status !== "rejected") actions.append(button(s.id, "reject", "Reject"));
      box.append(actions);
    }
    return box;
  }

  function button(id, action, text) {
    const b = el("button", null, text);
    b.addEventListener("click", async () => {
      b.disabled = true;
      await fetch("suppressions/" + encodeURIComponent(id) + "/" + action, { method: "POST", credentials: "same-origin" });
      load();
    });
    return b;
  }

  async function load() {
    const out = $("supp");
    if (!out) return;
    const response = await fetch("suppressions", { credentials: "same-origin" }).catch(() => null);
    if (!response || !response.ok) return;
    const list = await response.json();
    out.replaceChildren(...(list.length ? list.slice(0, 20).map(card) : [el("p", "muted", "none proposed yet")]));
  }

  document.addEventListener("DOMContentLoaded", () => { load(); setInterval(load, 15000); });
})();
