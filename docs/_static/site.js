// Keyboard access to anything that scrolls sideways: a wide output, a long code
// line or a wide equation gets tabindex="0", so it can be focused and scrolled
// with the arrow keys (axe: scrollable-region-focusable).
"use strict";
(function () {
  function label(element) {
    if (element.closest(".cell_output, .output")) return "Code output";
    if (element.closest(".math, mjx-container")) return "Equation";
    return "Code";
  }
  function mark() {
    var selector = "div.highlight pre, .cell_output pre, .output pre, mjx-container[display=\"true\"], .table-wrapper";
    document.querySelectorAll(selector).forEach(function (element) {
      if (element.scrollWidth > element.clientWidth + 1 || element.scrollHeight > element.clientHeight + 1) {
        if (!element.hasAttribute("tabindex")) {
          element.setAttribute("tabindex", "0");
          if (!element.hasAttribute("aria-label") && !element.hasAttribute("role")) {
            element.setAttribute("role", "region");
            element.setAttribute("aria-label", label(element));
          }
        }
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  window.addEventListener("resize", mark);
})();
