// The record viewer's deep link: #chars=START-END names characters of the stored document text (the offsets
// chunks, citations and evidence use). Each rendered block carries its own [data-start, data-end) and raw
// text, so we find the blocks the range touches, find that slice in each block's rendered text, wrap it in
// <mark>, scroll to it and move focus to it. Without this script the whole document is still there.
(function () {
  "use strict";

  var article = document.getElementById("document-text");
  if (!article) return;
  var status = document.getElementById("highlight-status");
  var WORD = /[\p{L}\p{N}]+/gu;

  function parseHash(hash) {
    var m = /^#chars=(\d+)-(\d+)$/.exec(hash || "");
    if (!m) return null;
    var start = parseInt(m[1], 10), end = parseInt(m[2], 10);
    return end > start ? [start, end] : null;
  }

  function clearMarks() {
    article.querySelectorAll("mark.kn-js-mark").forEach(function (mark) {
      var parent = mark.parentNode;
      while (mark.firstChild) parent.insertBefore(mark.firstChild, mark);
      parent.removeChild(mark);
      parent.normalize();
    });
    article.querySelectorAll(".kn-js-target").forEach(function (block) {
      block.classList.remove("kn-js-target", "is-target");
      block.removeAttribute("tabindex");
    });
  }

  function textNodes(root) {
    var nodes = [], walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) nodes.push(walker.currentNode);
    return nodes;
  }

  function escapeRegExp(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  // Where `slice` (raw text of the block, from `offset`) is in the block's rendered text `full`.
  function locate(full, slice, offset) {
    var trimmed = slice.trim();
    if (!trimmed) return null;
    var lead = slice.length - slice.replace(/^\s+/, "").length;
    if (full.substr(offset + lead, trimmed.length) === trimmed) return [offset + lead, offset + lead + trimmed.length];
    var at = full.indexOf(trimmed);
    if (at >= 0) return [at, at + trimmed.length];
    // Markdown: syntax characters are gone from the rendered text; match the same words in order.
    var words = trimmed.match(WORD);
    if (!words) return null;
    var pattern = new RegExp(words.map(escapeRegExp).join("[^\\p{L}\\p{N}]*"), "u");
    var found = pattern.exec(full);
    return found ? [found.index, found.index + found[0].length] : null;
  }

  var NO_MARK_PARENT = /^(UL|OL|TABLE|THEAD|TBODY|TR)$/;

  function wrap(block, range) {
    var marks = [], position = 0;
    textNodes(block).forEach(function (node) {
      var length = node.data.length, from = Math.max(range[0], position), to = Math.min(range[1], position + length);
      position += length;
      if (from >= to) return;
      var piece = node.data.slice(from - (position - length), to - (position - length));
      if (!piece.trim() && NO_MARK_PARENT.test(node.parentNode.nodeName)) return;
      var target = node;
      if (from > position - length) target = target.splitText(from - (position - length));
      if (to < position) target.splitText(to - from);
      var mark = document.createElement("mark");
      mark.className = "kn-js-mark";
      target.parentNode.insertBefore(mark, target);
      mark.appendChild(target);
      marks.push(mark);
    });
    return marks;
  }

  function focusOn(element) {
    element.setAttribute("tabindex", "-1");
    element.focus({ preventScroll: true });
    element.scrollIntoView({ block: "center" });
  }

  function say(message) { if (status) status.textContent = message; }

  function highlight() {
    var range = parseHash(location.hash);
    if (!range) return;
    clearMarks();
    var first = null;
    article.querySelectorAll(".kn-block").forEach(function (block) {
      var start = parseInt(block.dataset.start, 10), end = parseInt(block.dataset.end, 10);
      if (!(range[0] < end && range[1] > start)) return;
      var raw = block.dataset.text || "";
      var a = Math.max(range[0], start) - start, b = Math.min(range[1], end) - start;
      var full = textNodes(block).map(function (n) { return n.data; }).join("");
      var where = locate(full, raw.slice(a, b), a);
      var marks = where ? wrap(block, where) : [];
      if (!marks.length && raw.slice(a, b).trim()) {
        block.classList.add("kn-js-target", "is-target");  // found the block, not the exact words
        marks = [block];
      }
      if (!first && marks.length) first = marks[0];
    });
    if (first) {
      focusOn(first);
      say("The cited passage is highlighted.");
    } else {
      say("That passage is no longer in this document; it may have changed since it was cited.");
    }
  }

  window.addEventListener("hashchange", highlight);
  if (parseHash(location.hash)) {
    highlight();
  } else {
    var served = article.querySelector("mark, .is-target");  // ?chars= highlighted on the server
    if (served) focusOn(served);
  }
})();
