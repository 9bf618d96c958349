// edgetriage page, the Ask box: a question in words -> POST ask (this page's session) -> the answer, its
// route, and links to the events it cites. The microphone button records a spoken question (MediaRecorder:
// press, speak, press again; at most MAX_RECORD_MS) and posts the recording; the page shows what was heard,
// then the answer. Every text goes in through textContent, never as HTML.
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

  const MAX_RECORD_MS = 15000;

  function show(answer) {
    const out = $("ask-out");
    out.replaceChildren();
    out.className = "";
    if (answer.transcript !== undefined) out.append(el("p", "ask-heard", "heard: \u201c" + answer.transcript + "\u201d"));
    if (answer.reading) out.append(el("p", "ask-reading muted", "read as: " + answer.reading));
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
    await post("application/json", JSON.stringify({ question: question }), "asking…");
  }

  async function post(type, body, waiting) {
    const out = $("ask-out");
    out.className = "muted";
    out.textContent = waiting;
    try {
      const response = await fetch("ask", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": type }, body: body,
      });
      const answer = await response.json();
      if (!response.ok) {
        out.className = "ask-error";
        out.textContent = answer.error || ("HTTP " + response.status);
        return;
      }
      show(answer);
    } catch (err) {
      out.className = "ask-error";
      out.textContent = "the service did not answer (" + err + ")";
    }
  }

  // the microphone: one recording at a time; the button shows whether it is listening
  let recorder = null;

  async function listen() {
    const mic = $("ask-mic");
    const out = $("ask-out");
    if (recorder) {
      recorder.stop();
      return;
    }
    if (!navigator.mediaDevices || !window.MediaRecorder) {
      out.className = "ask-error";
      out.textContent = "this browser cannot record here (it needs https or localhost, and MediaRecorder)";
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      out.className = "ask-error";
      out.textContent = "no microphone: " + err.name + " (allow the page to use it, then press again)";
      return;
    }
    const chunks = [];
    recorder = new MediaRecorder(stream);
    const timer = setTimeout(() => { if (recorder) recorder.stop(); }, MAX_RECORD_MS);
    recorder.addEventListener("dataavailable", (e) => { if (e.data && e.data.size) chunks.push(e.data); });
    recorder.addEventListener("stop", () => {
      clearTimeout(timer);
      stream.getTracks().forEach((t) => t.stop());
      const type = (recorder.mimeType || "audio/webm").split(";")[0];
      recorder = null;
      mic.setAttribute("aria-pressed", "false");
      mic.textContent = "\ud83c\udfa4 Speak";
      post(type, new Blob(chunks, { type: type }), "listening to the recording…");
    });
    recorder.start();
    mic.setAttribute("aria-pressed", "true");
    mic.textContent = "\u25a0 Stop";
    out.className = "muted";
    out.textContent = "listening… press Stop when done";
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = $("ask-form");
    if (form) form.addEventListener("submit", ask);
    const mic = $("ask-mic");
    if (mic) mic.addEventListener("click", listen);
    fetch("ask", { credentials: "same-origin" }).then((r) => (r.ok ? r.json() : null))
      .then((body) => { if (body) figures(body.figures); }).catch(() => {});
  });
})();
