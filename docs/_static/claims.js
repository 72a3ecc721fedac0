// "Show checked claims": the sentences hidden checks quote, revealed on demand,
// each with what its check compared and over what.
//
// The build (autograd_docs/html/checked_claims.py) marks the element each
// checked sentence sits in, puts the toggle beside "view source", and writes the
// claims into the page as JSON (#checked-claims-data): nothing is fetched, so it
// works offline and from file://. Off, this script adds nothing to the layout;
// on, it highlights each sentence (the CSS Custom Highlight API, else its whole
// paragraph) and puts a button after it that opens what its check compared. The state is
// not remembered across pages: turning it on by itself on load would move the
// text under the reader, and the reveal is something one looks at, then closes.
"use strict";
(function () {
  var MATH = "\uE000"; // a drawn equation, as the build's patterns spell it
  var ATOMIC = ".math, mjx-container, svg, img";
  var UNREAD = "mjx-assistive-mml, script, style, .headerlink, .claim-marker";
  var HIGHLIGHT = "checked-claim";
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

  // What a check compared and over what, as its record says (snippets/oracle.py):
  // "checked on this example" or "checked over N members of ...", never more.
  function scope(claim) {
    if (claim.scope === "family") {
      var members = claim.members || claim.examples;
      return "Checked over " + members + " member" + (members === 1 ? "" : "s") + " of " +
             (claim.families || ["a family"]).join(" × ");
    }
    return claim.runs > 1 ? "Checked on " + claim.runs + " examples (one check run in a loop; the first shown)"
                          : "Checked on this example";
  }

  function describe(detail, claim, source) {
    var head = add(detail, "p");
    add(head, "strong", "", scope(claim) + (claim.outside.length ? ", partly" : "") + ".");
    if (claim.compared) head.appendChild(document.createTextNode(" Compared: " + claim.compared + "."));
    // What the check kept the same for every member: the sentence may say more.
    if (claim.fixed) add(detail, "p", "claim-fixed", "The same for every member: " + claim.fixed + ".");
    if (claim.drawn) {
      var ends = "smallest" in claim ? " Numbers drawn ran from " + claim.smallest + " to " +
                                       claim.largest + "." : "";
      // Hypothesis draws its first members from across the family, not in order of size.
      var count = claim.members || claim.examples;
      var listed = claim.drawn.length < count ? "The first " + claim.drawn.length + " of the " +
                   count + " members drawn: " : "The members drawn: ";
      add(detail, "p", "", listed + claim.drawn.join("; ") + "." + ends);
    }
    if (claim.outside.length) {
      add(detail, "p", "claim-outside", "Not checked: no check quotes these words of the " +
          "sentence: " + claim.outside.join(", ") + ".");
    }
    if (claim.claim) add(detail, "p", "", "The check's own words: " + claim.claim);
    var where = add(detail, "p");
    where.appendChild(document.createTextNode("Ran against torch " + claim.torch +
                                              " when this page was built. "));
    var link = add(where, "a", "", "Read the check: line " + claim.check_line + " of " +
                   source.name + ".");
    link.href = source.lines + "#L-" + claim.check_line;
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

    // A quote over a table row's cells: the cells before its last are only
    // highlighted; the marker and detail of its one check go on the last.
    var checks = page.claims.filter(function (claim) { return !claim.highlight_only; });
    var highlighted = [];

    function reveal() {
      var after = new Map();
      page.claims.forEach(function (claim) {
        var element = document.getElementById(claim.target);
        if (!element) return;
        var range = sentenceRange(element, claim.pattern);
        if (range) {
          // A highlight paints text only: an equation in the sentence gets a background.
          element.querySelectorAll(".math").forEach(function (math) {
            if (range.intersectsNode(math)) math.classList.add("claim-math");
          });
        } else element.classList.add("claim-whole");
        if (claim.highlight_only) {
          highlighted.push({element: element, claim: claim, range: range});
          return;
        }
        var index = checks.indexOf(claim);
        var marker = document.createElement("button");
        marker.type = "button";
        marker.className = "claim-marker" + (claim.outside.length ? " claim-partial" : "");
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
            "What check " + (index + 1) + " of " + checks.length + " compared" +
            (marker.classList.contains("claim-partial") ? " (partly checked)" : ""));
      });
      var ranges = shown.concat(highlighted).map(function (item) {
        return item.range && sentenceRange(item.element, item.claim.pattern);
      }).filter(Boolean);
      if (ranges.length && window.CSS && CSS.highlights && window.Highlight) {
        CSS.highlights.set(HIGHLIGHT, new Highlight(...ranges));
      } else {
        shown.concat(highlighted).forEach(function (item) {
          item.element.classList.add("claim-whole");
        });
      }
      document.body.classList.add("claims-revealed");
      status.textContent = shown.length + " checked sentences marked; a button after each " +
                           "says what its check compared.";
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
      highlighted.forEach(function (item) {
        item.element.classList.remove("claim-whole");
        item.element.querySelectorAll(".claim-math").forEach(function (math) {
          math.classList.remove("claim-math");
        });
      });
      shown = [];
      highlighted = [];
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
