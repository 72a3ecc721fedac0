// "Show checked claims": the sentences hidden checks proved, revealed on demand.
//
// The build (autograd_docs/html/checked_claims.py) marks the element each
// checked sentence sits in, puts the toggle beside "view source", and writes the
// claims into the page as JSON (#checked-claims-data): nothing is fetched, so it
// works offline and from file://. Off, this script adds nothing to the layout;
// on, it highlights each sentence (the CSS Custom Highlight API, else its whole
// paragraph) and puts a button after it that opens what proved it. The state is
// not remembered across pages: turning it on by itself on load would move the
// text under the reader, and the reveal is something one looks at, then closes.
"use strict";
(function () {
  var MATH = "\uE000"; // a drawn equation, as the build's patterns spell it
  var ATOMIC = ".math, mjx-container, svg, img";
  var UNREAD = "mjx-assistive-mml, script, style, .headerlink, .claim-marker";
  var HIGHLIGHT = "checked-claim";
  var HOW = {
    check_close: "compared with an independent computation",
    check_text: "compared with the exact text expected",
    check_raised: "the error it raises, and its message",
    check_differs: "a counterexample, shown to differ from the belief",
    check_property: "run over a family of cases",
  };

  // The element's text as one string, each equation one character, with where
  // each piece of it lives, so a match in the string maps back to a Range.
  function flatten(element) {
    var text = "", pieces = [];
    (function walk(node) {
      for (var child = node.firstChild; child; child = child.nextSibling) {
        if (child.nodeType === Node.TEXT_NODE) {
          pieces.push({node: child, at: text.length, length: child.data.length});
          text += child.data;
        } else if (child.nodeType === Node.ELEMENT_NODE && !child.matches(UNREAD)) {
          if (child.matches(ATOMIC)) {
            pieces.push({node: child, at: text.length, length: 1, atomic: true});
            text += MATH;
          } else walk(child);
        }
      }
    })(element);
    return {text: text, pieces: pieces};
  }

  function setBoundary(range, pieces, index, isEnd) {
    for (var i = 0; i < pieces.length; i++) {
      var p = pieces[i];
      var inside = isEnd ? index > p.at && index <= p.at + p.length
                         : index >= p.at && index < p.at + p.length;
      if (!inside) continue;
      if (p.atomic) {
        if (isEnd) range.setEndAfter(p.node); else range.setStartBefore(p.node);
      } else if (isEnd) range.setEnd(p.node, index - p.at);
      else range.setStart(p.node, index - p.at);
      return true;
    }
    return false;
  }

  function sentenceRange(element, pattern) {
    var flat = flatten(element), match;
    try {
      match = new RegExp(pattern).exec(flat.text);
    } catch (error) {
      return null; // a pattern this browser cannot read: mark the whole element
    }
    if (!match || !match[0].length) return null;
    var range = document.createRange();
    var ok = setBoundary(range, flat.pieces, match.index, false) &&
             setBoundary(range, flat.pieces, match.index + match[0].length, true);
    return ok ? range : null;
  }

  // Where the marker goes: right after the sentence, but never inside a link,
  // code or an equation (a button inside a link is two controls in one). It is
  // wrapped with the sentence's last word in a span that does not break, or a
  // line could end just before it and leave it alone on the next.
  var SHORT = 30; // longer than this, a last word or phrase is left to wrap
  function placeMarker(marker, element, range) {
    var glue = document.createElement("span");
    glue.className = "claim-end";
    if (!range) {
      element.appendChild(marker);
      return;
    }
    var node = range.endContainer, offset = range.endOffset;
    if (node.nodeType === Node.TEXT_NODE && node.parentNode === element) {
      node.splitText(offset);
      var word = node.data.search(/\S+$/);
      if (word < 0 || node.data.length - word > SHORT) {
        node.after(marker);
        return;
      }
      node.after(glue);
      glue.append(node.splitText(word), marker);
      return;
    }
    if (node === element) {
      element.insertBefore(marker, element.childNodes[offset] || null);
      return;
    }
    while (node.parentNode !== element) node = node.parentNode;
    if (node.textContent.length > SHORT) {
      node.after(marker);
      return;
    }
    node.after(glue);
    glue.append(node, marker);
  }

  function removeMarker(marker) {
    var glue = marker.parentNode;
    marker.remove();
    if (glue.classList.contains("claim-end")) glue.replaceWith.apply(glue, glue.childNodes);
  }

  function add(parent, tag, className, text) {
    var child = document.createElement(tag);
    if (className) child.className = className;
    if (text) child.textContent = text;
    parent.appendChild(child);
    return child;
  }

  function describe(detail, claim, source) {
    var how = add(detail, "p");
    how.appendChild(document.createTextNode("Checked by "));
    add(how, "code", "", claim.check);
    var words = HOW[claim.check] || "a hidden check";
    if (claim.check === "check_property" && claim.families) {
      words = "run over " + claim.families.join(" × ") +
              (claim.examples ? ", " + claim.examples + " examples" : "");
    }
    how.appendChild(document.createTextNode(": " + words + "."));
    if (claim.claim) add(detail, "p", "", "It checks: " + claim.claim);
    var where = add(detail, "p");
    where.appendChild(document.createTextNode("Ran against torch " + claim.torch +
                                              " when this page was built. "));
    var link = add(where, source.href ? "a" : "span", "", "The check is line " +
                   claim.check_line + " of " + source.name + ".");
    if (source.href) link.href = source.href;
  }

  function start() {
    var script = document.getElementById("checked-claims-data");
    var toggle = document.querySelector(".checked-claims-toggle button");
    if (!script || !toggle) return;
    var page = JSON.parse(script.textContent);
    // Says what happened to screen reader users; takes no room (visually-hidden).
    var status = add(document.body, "div", "visually-hidden");
    status.setAttribute("role", "status");
    var shown = [];

    function reveal() {
      var after = new Map();
      page.claims.forEach(function (claim, index) {
        var element = document.getElementById(claim.target);
        if (!element) return;
        var range = sentenceRange(element, claim.pattern);
        if (range) {
          // A highlight paints text only: an equation in the sentence gets a background.
          element.querySelectorAll(".math").forEach(function (math) {
            if (range.intersectsNode(math)) math.classList.add("claim-math");
          });
        } else element.classList.add("claim-whole");
        var marker = document.createElement("button");
        marker.type = "button";
        marker.className = "claim-marker";
        marker.setAttribute("aria-expanded", "false");
        marker.innerHTML = '<svg aria-hidden="true" viewBox="0 0 16 16"><path d="M3.5 8.5l3 3 6-7" ' +
          'fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" ' +
          'stroke-linejoin="round"/></svg>';
        var detail = document.createElement("div");
        detail.className = "claim-detail";
        detail.id = "claim-detail-" + (index + 1);
        detail.hidden = true;
        describe(detail, claim, page.source);
        marker.setAttribute("aria-controls", detail.id);
        // A paragraph holds no block: the detail goes after it; a cell or term holds it.
        var anchor = after.get(element) || element;
        if (element.tagName === "P") anchor.after(detail);
        else element.appendChild(detail);
        after.set(element, detail);
        shown.push({marker: marker, detail: detail, element: element, range: range,
                    claim: claim});
      });
      // Markers from the last sentence back: placing one splits and moves the text
      // that the ranges of sentences after it point into. Then find every
      // sentence again, in the text as it now is, for the highlight.
      shown.filter(function (item) { return item.range; }).sort(function (a, b) {
        return b.range.compareBoundaryPoints(Range.END_TO_END, a.range);
      }).concat(shown.filter(function (item) { return !item.range; })).forEach(function (item) {
        placeMarker(item.marker, item.element, item.range);
      });
      // Numbered in reading order: the claims come in the order of their checks, and
      // two sentences of one paragraph may be checked in the other order.
      shown.map(function (item) { return item.marker; }).sort(function (a, b) {
        return a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
      }).forEach(function (marker, index) {
        add(marker, "span", "visually-hidden",
            "How checked claim " + (index + 1) + " of " + page.claims.length + " was proved");
      });
      var ranges = shown.map(function (item) {
        return item.range && sentenceRange(item.element, item.claim.pattern);
      }).filter(Boolean);
      if (ranges.length && window.CSS && CSS.highlights && window.Highlight) {
        CSS.highlights.set(HIGHLIGHT, new Highlight(...ranges));
      } else {
        shown.forEach(function (item) { item.element.classList.add("claim-whole"); });
      }
      document.body.classList.add("claims-revealed");
      status.textContent = shown.length + " checked sentences marked; a button after each " +
                           "says how it was checked.";
    }

    function conceal() {
      shown.forEach(function (item) {
        removeMarker(item.marker);
        item.detail.remove();
        item.element.classList.remove("claim-whole");
        item.element.querySelectorAll(".claim-math").forEach(function (math) {
          math.classList.remove("claim-math");
        });
        item.element.normalize(); // rejoin the text the markers split
      });
      shown = [];
      if (window.CSS && CSS.highlights) CSS.highlights.delete(HIGHLIGHT);
      document.body.classList.remove("claims-revealed");
      status.textContent = "Checked sentences no longer marked.";
    }

    function open(marker, detail, opened) {
      marker.setAttribute("aria-expanded", String(opened));
      detail.hidden = !opened;
    }

    toggle.addEventListener("click", function () {
      var on = toggle.getAttribute("aria-pressed") !== "true";
      toggle.setAttribute("aria-pressed", String(on));
      if (on) reveal(); else conceal();
    });
    document.addEventListener("click", function (event) {
      var marker = event.target.closest && event.target.closest(".claim-marker");
      if (!marker) return;
      var detail = document.getElementById(marker.getAttribute("aria-controls"));
      open(marker, detail, marker.getAttribute("aria-expanded") !== "true");
    });
    // Escape closes the detail the focus is in or on, and returns to its marker.
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape" || !event.target.closest) return;
      var detail = event.target.closest(".claim-detail");
      var marker = detail ? document.querySelector('[aria-controls="' + detail.id + '"]')
                          : event.target.closest(".claim-marker");
      if (!marker || marker.getAttribute("aria-expanded") !== "true") return;
      open(marker, document.getElementById(marker.getAttribute("aria-controls")), false);
      marker.focus();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
