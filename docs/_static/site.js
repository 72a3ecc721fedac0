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
  function mark(element) {
    if (element.hasAttribute("tabindex")) return;
    if (element.scrollWidth > element.clientWidth + 1 || element.scrollHeight > element.clientHeight + 1) {
      element.setAttribute("tabindex", "0");
      if (!element.hasAttribute("aria-label") && !element.hasAttribute("role")) {
        element.setAttribute("role", "region");
        element.setAttribute("aria-label", label(element));
      }
    }
  }
  function start() {
    var boxes = document.querySelectorAll(selector);
    boxes.forEach(mark);
    if (window.ResizeObserver) {
      // Also sees a box's contents growing (fonts arriving): the box resizes
      // with them until it reaches the column's width.
      var observer = new ResizeObserver(function (entries) {
        entries.forEach(function (entry) {
          var target = entry.target;
          mark(target.matches(selector) ? target : target.parentElement);
        });
      });
      boxes.forEach(function (box) {
        observer.observe(box);
        if (box.firstElementChild) observer.observe(box.firstElementChild);
      });
    }
    window.addEventListener("resize", function () { document.querySelectorAll(selector).forEach(mark); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
