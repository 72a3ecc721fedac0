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

// A link into a long page lands on its section. site.css leaves the sections
// below the screen unrendered until they come near it; above a linked section
// they came near (or were measured by a script) only after the browser had
// scrolled to the link, grew past their placeholders and pushed the section
// down (314 px to 6 screens, on a desktop), with the browser's scroll anchoring
// holding on to an unrendered top. Render every section above the link before
// the page has loaded, while the browser still aims at the link.
(function () {
  function renderAbove() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    var section = target && target.closest("article > section > section");
    for (var above = section && section.previousElementSibling; above; above = above.previousElementSibling) {
      if (above.tagName === "SECTION") above.style.contentVisibility = "visible";
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", renderAbove);
  else renderAbove();
})();

// A table stacks on a phone (site.css): each cell is shown under its column's
// name, copied here from the table's head. Only attributes change: nothing
// moves on a wider screen.
(function () {
  function label() {
    document.querySelectorAll("article table.docutils").forEach(function (table) {
      var names = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
        return th.textContent.trim();
      });
      if (!names.length) return;
      table.querySelectorAll("tbody tr").forEach(function (row) {
        Array.prototype.forEach.call(row.children, function (cell, k) {
          if (names[k]) cell.setAttribute("data-label", names[k]);
        });
      });
      table.classList.add("stacks");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", label);
  else label();
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

// The words of the search that opened this page, marked on it. In place of
// Sphinx's highlighter, which marks every substring ("is" inside is_leaf, "grad"
// inside "gradient"), stop words too, and throws on text inside an SVG <title>
// (an icon's name), stopping halfway: this one marks whole words (a plural's
// "s" or "es" allowed), never inside an SVG or an equation, and reads every
// match before it changes the page.
(function () {
  if (typeof SphinxHighlight === "undefined") return;
  var SKIP = "svg, mjx-container, script, style, button, select, textarea, .highlighted, .nohighlight";
  // The words to mark: search.html stored them without its stop words
  // (site-search.js); a ?highlight= link gives them as it likes.
  function terms(text) {
    return text.toLowerCase().split(/[^\p{Letter}\p{Number}_]+/u).filter(Boolean);
  }
  function escape(word) { return word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }
  function matcher(words) {
    // A word character on either side means the term is part of a longer word.
    return new RegExp("(?<![\\p{Letter}\\p{Number}_])(?:" + words.map(escape).join("|") +
                      ")(?:e?s)?(?![\\p{Letter}\\p{Number}_])", "giu");
  }
  function mark(root, words) {
    var pattern = matcher(words), found = [];
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentElement;
        return !parent || parent.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      },
    });
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      pattern.lastIndex = 0;
      var ranges = [], match;
      while ((match = pattern.exec(node.nodeValue))) ranges.push([match.index, match[0].length]);
      if (ranges.length) found.push([node, ranges]);
    }
    // Last match first, so the offsets before it still hold.
    found.forEach(function (entry) {
      entry[1].reverse().forEach(function (range) {
        var word = entry[0].splitText(range[0]);
        word.splitText(range[1]);
        var span = document.createElement("span");
        span.className = "highlighted";
        word.replaceWith(span);
        span.appendChild(word);
      });
    });
    return found.length;
  }
  SphinxHighlight.highlightSearchWords = function () {
    var url = new URL(window.location);
    var query = localStorage.getItem("sphinx_highlight_terms") || url.searchParams.get("highlight") || "";
    localStorage.removeItem("sphinx_highlight_terms");
    if (url.searchParams.has("highlight")) {
      url.searchParams.delete("highlight");
      window.history.replaceState({}, "", url);
    }
    var words = terms(query);
    var body = document.querySelector("div.body, article[role=main]");
    if (!words.length || !body) return;
    try {
      if (!mark(body, words)) return;
    } catch (error) {
      console.warn("search highlighting stopped:", error);  // the page still reads
      return;
    }
    var searchBox = document.getElementById("searchbox");
    if (searchBox) {
      var p = searchBox.appendChild(document.createElement("p"));
      p.className = "highlight-link";
      var a = p.appendChild(document.createElement("a"));
      a.href = "javascript:SphinxHighlight.hideSearchWords()";
      a.textContent = _("Hide Search Matches");
    }
  };
})();
