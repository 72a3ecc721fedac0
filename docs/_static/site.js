// Keyboard access to anything that scrolls sideways: a wide output, a long code
// line or a wide equation gets tabindex="0", so it can be focused and scrolled
// with the arrow keys (axe: scrollable-region-focusable). Whether a box scrolls
// depends on the reader's fonts and screen, and can change after the page has
// loaded (fonts, a rotated phone), so every box is looked at again whenever its
// size changes.
"use strict";
(function () {
  function label(element) {
    if (element.closest(".cell_output, .output")) return "Code output";
    if (element.closest(".math, mjx-container")) return "Equation";
    return "Code";
  }
  var selector = "div.highlight pre, .cell_output pre, .output pre, mjx-container[display=\"true\"], .table-wrapper";
  function scrolls(element) {
    return element.scrollWidth > element.clientWidth + 1 || element.scrollHeight > element.clientHeight + 1;
  }
  // Every size is read before any attribute is written: a write between two
  // reads would make the browser lay the whole page out again for the next read
  // (hundreds of times on a long page).
  function mark(elements) {
    elements.filter(function (element) {
      return !element.hasAttribute("tabindex") && scrolls(element);
    }).forEach(function (element) {
      element.setAttribute("tabindex", "0");
      if (!element.hasAttribute("aria-label") && !element.hasAttribute("role")) {
        element.setAttribute("role", "region");
        element.setAttribute("aria-label", label(element));
      }
    });
  }
  function start() {
    var boxes = Array.prototype.slice.call(document.querySelectorAll(selector));
    if (!window.ResizeObserver) return mark(boxes);
    // A ResizeObserver reports each box once as it starts watching it, after the
    // browser's own first layout, so looking costs no layout of its own; then
    // again whenever the box or its contents (fonts arriving) change size.
    var observer = new ResizeObserver(function (entries) {
      mark(entries.map(function (entry) {
        return entry.target.matches(selector) ? entry.target : entry.target.parentElement;
      }));
    });
    boxes.forEach(function (box) {
      observer.observe(box);
      if (box.firstElementChild) observer.observe(box.firstElementChild);
    });
    // A box inside a closed toggle is not laid out again when the window
    // changes size, so no observer hears of it: look at every box then.
    window.addEventListener("resize", function () { mark(boxes); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// A figure is drawn wider than a phone shows it: a tap opens the image itself,
// full size, where the reader can zoom and pan.
(function () {
  function link() {
    document.querySelectorAll(".cell_output img").forEach(function (img) {
      if (img.closest("a")) return;
      var a = document.createElement("a");
      a.href = img.getAttribute("src");
      a.className = "figure-full-size";
      a.setAttribute("aria-label", "Open the figure full size: " + (img.alt || "figure"));
      img.replaceWith(a);
      a.appendChild(img);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", link);
  else link();
})();
