// edgetriage page: the DOM helpers both scripts use (app.js, ask.js), loaded before them. Every text goes
// in through textContent, never as HTML.
"use strict";

window.edgetriageDom = (function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const fmtMs = (v) => (v === null || v === undefined ? "—" : v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(v < 10 ? 1 : 0) + " ms");
  return Object.freeze({ $, el, fmtMs });
})();
