// edgetriage page, the Ask box: a question in words -> POST ask (this page's session) -> the answer, its
// route, and links to the events it cites. Every text goes in through textContent, never as HTML.
"use strict";

(function () {
  const { $, el, fmtMs: ms } = window.edgetriageDom;

  function figures(f) {
    const box = $("ask-figures");
    if (!box || !f || f.alpha === null || f.alpha === undefined) return;
    box.textContent = "questions: α " + Math.round(f.alpha * 100) + "% · L_total " + ms(f.L_total_ms) +
      " = L_sched " + ms(f.L_sched_ms) + " + α·L_fast " + ms(f.L_fast_ms) + " + (1−α)·L_llm " + ms(f.L_llm_ms) +
      " · t_max " + ms(f.t_max_ms) + " · " + f.answers + " asked";
  }

  function show(answer) {
    const out = $("ask-out");
    out.replaceChildren();
    out.className = "";
    const text = el("p", "ask-answer" + (answer.partial ? " partial" : ""), answer.answer);
    const meta = el("div", "ask-meta");
    meta.append(el("span", "route r-" + answer.route, answer.route));
    meta.append(el("span", "muted", " " + ms(answer.latency_ms) + (answer.cached ? " · cached" : "") +
      (answer.partial ? " · partial answer" : "")));
    const links = el("div", "ask-events");
    (answer.events || []).slice(0, 30).forEach((id, i) => {
      const a = el("a", null, "[" + (i + 1) + "]");
      a.href = "thumbs/" + encodeURIComponent(id) + ".jpg";
      a.target = "_blank";
      a.rel = "noopener";
      a.title = "event " + id;
      links.append(a, document.createTextNode(" "));
    });
    if ((answer.events || []).length > 30) links.append(el("span", "muted", "… " + answer.events.length + " events"));
    out.append(text, meta, links);
    figures(answer.figures);
  }

  async function ask(event) {
    event.preventDefault();
    const input = $("ask-q");
    const question = input.value.trim();
    if (!question) return;
    const out = $("ask-out");
    out.className = "muted";
    out.textContent = "asking…";
    try {
      const response = await fetch("ask", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ question: question }),
      });
      const body = await response.json();
      if (!response.ok) {
        out.className = "ask-error";
        out.textContent = body.error || ("HTTP " + response.status);
        return;
      }
      show(body);
    } catch (err) {
      out.className = "ask-error";
      out.textContent = "the service did not answer (" + err + ")";
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = $("ask-form");
    if (form) form.addEventListener("submit", ask);
    fetch("ask", { credentials: "same-origin" }).then((r) => (r.ok ? r.json() : null))
      .then((body) => { if (body) figures(body.figures); }).catch(() => {});
  });
})();
