// edgetriage page: the Thresholds section. Each camera's proposed score floor with what it would have done
// (GET thresholds), and an accept button that pushes it to the device (POST thresholds/<device>/<camera>).
// Nothing changes on a device until the button is pressed. Every text goes in through textContent.
"use strict";

(function () {
  const { $, el } = window.edgetriageDom;

  async function accept(p, out) {
    out.textContent = "pushing…";
    try {
      const r = await fetch("thresholds/" + encodeURIComponent(p.device) + "/" + encodeURIComponent(p.camera),
        { method: "POST", credentials: "same-origin" });
      const body = await r.json();
      out.textContent = r.ok ? "pushed as version " + body.version + " (" + body.outcome + ")" : (body.error || "HTTP " + r.status);
    } catch (err) {
      out.textContent = "the service did not answer (" + err + ")";
    }
  }

  function row(p, canAccept) {
    const li = el("li");
    const now = p.current;
    li.appendChild(el("b", null, p.device + "/" + p.camera + ": "));
    if (!p.proposed) {
      li.appendChild(el("span", "muted", "floor " + now.min_score.toFixed(2) + " stays (" + now.escalations + " escalations)"));
      return li;
    }
    const n = p.proposed;
    li.appendChild(el("span", null, "floor " + now.min_score.toFixed(2) + " → " + n.min_score.toFixed(2) + ": " +
      n.escalations_avoided + " of " + n.escalations + " escalations avoided, " + n.people_missed + " people missed"));
    if (canAccept) {
      const out = el("span", "muted");
      const button = el("button", null, "accept");
      button.addEventListener("click", () => accept(p, out));
      li.append(" ", button, " ", out);
    }
    return li;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const list = $("thresholds");
    if (!list) return;
    fetch("thresholds", { credentials: "same-origin" }).then((r) => (r.ok ? r.json() : null)).then((body) => {
      if (!body) return;
      list.replaceChildren(...body.proposals.map((p) => row(p, body.can_accept)));
      if (!body.proposals.length) list.appendChild(el("li", "muted", "no escalations with verdicts yet"));
    }).catch(() => {});
  });
})();
