// edgetriage page: a card's "wrong?" control (POST feedback/<event id>, this page's session) and the line
// that says an operator confirmed or corrected its verdict. Every text goes in through textContent.
"use strict";

window.edgetriageFeedback = (function () {
  const { el } = window.edgetriageDom;

  function mark(e) {
    const f = e.feedback;
    const what = f.was !== e.verdict ? "corrected (was " + f.was + ")" : "confirmed";
    return el("div", "fb-mark", what + " by " + f.by + (f.note ? ": " + f.note : ""));
  }

  async function send(e, select, note, out) {
    const body = select.value === "" ? { correct: true } : { verdict: select.value };
    if (note.value.trim()) body.note = note.value.trim();
    out.textContent = "sending…";
    try {
      const response = await fetch("feedback/" + encodeURIComponent(e.id), {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      const answer = await response.json();
      out.textContent = response.ok ? answer.kind + ": " + answer.verdict.verdict : (answer.error || "HTTP " + response.status);
    } catch (err) {
      out.textContent = "the service did not answer (" + err + ")";
    }
  }

  function control(e) {
    const box = el("div", "fb");
    if (e.feedback) box.appendChild(mark(e));
    if (!e.verdict || e.id.includes("~")) return box;  // nothing the cloud decided on yet
    const details = el("details", "fb-form");
    details.appendChild(el("summary", null, "wrong?"));
    const form = el("form");
    const select = el("select");
    select.add(new Option("it is right", ""));
    for (const v of ["alert", "benign", "unknown"]) if (v !== e.verdict) select.add(new Option("should be " + v, v));
    const note = el("input");
    note.maxLength = 300;
    note.placeholder = "note (optional)";
    const out = el("span", "fb-out");
    form.append(select, note, el("button", null, "send"), out);
    form.addEventListener("submit", (ev) => { ev.preventDefault(); send(e, select, note, out); });
    details.appendChild(form);
    box.appendChild(details);
    return box;
  }

  return Object.freeze({ control });
})();
