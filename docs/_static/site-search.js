// Ranks the pages for search.html?q=... with the data in searchdata.js
// (autograd_docs/html/search.py), in place of Sphinx's ranking, which scores
// nearly every hit the same and then sorts by title. A page scores by BM25F:
// each query word counts by how rare it is across pages, more in the page's
// title, its index entries and headings than in its prose, and less in code;
// a page matching more of the query's words scores more, but a word no page
// has is left out rather than emptying the results. A heading, title or index
// entry holding the query's words in a row (a pasted error message) counts
// extra, the title most; one word the reader added between two is passed
// over. A title or heading holding four or more of the typed words as typed,
// stop words and all ("does not require grad"), counts more again: the reader
// pasted it, and the stemmed words alone cannot tell it from "requires_grad". A synonym's phrase of two words or more ("check gradients") counts
// only where a page has its words in a row, as one word of its own that adds
// nothing to a page's length: words that stand apart ("check" here, "gradient"
// there) do not say it. A page counts by the share of the matched words one
// of its sections holds: a long page with each word somewhere, in sections
// about other things, is not about the query. The words of a page's readers'
// questions (its front matter's search_questions) are a field of their own,
// each word once however many questions ask it; a page one of whose questions
// holds two or more of the query's words scores a little more. Each page is listed once,
// linked to its best-matching section.
// Sphinx's search.html still parses the URL and draws the box; this replaces
// only Search.query. Loaded by a script tag: the search works from file://.
"use strict";
var SiteSearch = (function () {
  // The weights, in one place (tests/browser/test_search_ranking.py measures them).
  var tuning = {
    fields: { title: 8, index: 6, glossary: 2, heading: 3, anchor: 3, question: 2, prose: 1, code: 0.4 },
    // BM25's saturation: high, so a word a page says again and again counts
    // nearly as often as it is said (1.2, the textbook value, let one mention in
    // a long traceback count almost as much as a page about the word).
    k1: 4,
    // Length normalisation: a long page, or one with many headings (the
    // questions page), counts each occurrence less. A title is one line: none.
    b: { index: 0.5, glossary: 0.5, heading: 0.5, anchor: 0.5, question: 0.5, prose: 0.75, code: 0.75 },
    synonym: 0.8,                  // a synonym counts a little less than the word typed
    phrase: 0.5,                   // a heading holding the query's words in a row
    titlePhrase: 1,                // the page's title holding them: the page is about them
    verbatim: 0.75,                // a title or heading holding the typed words as typed
    verbatimWords: 4,              // ... at least this many of them
    asked: 0.1,                    // one of the page's readers' questions holding the query's words
    hub: 0.6,                      // a page that routes to others (section indexes, the questions page)
    defines: 2,                    // a section whose heading or index entries hold a query word
    frame: 0.01,                   // a "Next steps" or "Summary" section, as a landing
    together: 1,                   // the share of the matched words one section holds, to this power
    togetherCode: 0.3,             // ... a word only its code (an output, a traceback) holds, as this much of one
  };
  var FIELDS = tuning.fields, B = tuning.b;
  var data = null, stemmer = null;
  // The synonyms' phrases: counted where a page holds them, but no words of its
  // length (a new synonym moves no other query's ranking).
  var phraseIds = new Set();

  function words(text) {
    // Sphinx's splitQuery, stop words and stemmer: the pages' rules (search.py).
    var out = [];
    splitQuery(text.toLowerCase()).forEach(function (word) {
      var parts = word.replace(/^_+|_+$/g, "").indexOf("_") >= 0 ? [word].concat(word.split("_")) : [word];
      parts.forEach(function (part) {
        if (part && !stopwords.has(part)) out.push(stemmer.stemWord(part));
      });
    });
    return out;
  }
  // Words as typed, an apostrophe's kept: a contraction ("doesn't") is one
  // word, a stop word, not "doesn" and "t", which the pages hold as words of
  // their own in every "doesn't" and "can't"; a possessive ("the model's",
  // "the weights'") is the word itself.
  function rawWords(text) {
    return text.toLowerCase().replace(/[\u2018\u2019`]/g, "'").split(/[^\p{Letter}\p{Number}_']+/u)
      .map(function (word) {
        word = word.replace(/^'+|'+$/g, "");
        return stopwords.has(word) ? word : word.replace(/'s$/, "");
      }).filter(Boolean);
  }
  function counts(text) {
    var map = new Map();
    if (text) text.split(",").forEach(function (pair) {
      var parts = pair.split(":");
      map.set(+parts[0], parts.length > 1 ? +parts[1] : 1);
    });
    return map;
  }

  function prepare(raw) {
    var ids = new Map(raw.vocabulary.map(function (stem, id) { return [stem, id]; }));
    // Each synonym phrase as the ids of its words and its own id (search.py's key).
    var phrases = [];
    raw.synonyms.forEach(function (group) {
      group.forEach(function (phrase) {
        var stems = words(phrase), key = stems.join(" ");
        if (isPhrase(phrase, stems) && ids.has(key) && stems.every(function (s) { return ids.has(s); }))
          phrases.push({ id: ids.get(key), ids: stems.map(function (s) { return ids.get(s); }) });
      });
    });
    phraseIds = new Set(phrases.map(function (phrase) { return phrase.id; }));
    // A title's, heading's or entry's ids, and the phrases it holds in a row.
    function bag(sequence) {
      var out = sequence.slice();
      phrases.forEach(function (phrase) {
        for (var at = 0; at + phrase.ids.length <= sequence.length; at++)
          if (holdsAt(sequence, phrase.ids, at)) out.push(phrase.id);
      });
      return out;
    }
    var pages = raw.pages.map(function (page) {
      var fields = { title: new Map(), index: new Map(), glossary: new Map(), heading: new Map(),
                     anchor: new Map(), question: new Map(), prose: new Map(), code: new Map() };
      // Each word of the readers' questions once: a page asked "backprop" three
      // ways is not three times about it (counted per question, a held-out
      // query about argmax lost its page to the one asked "backprop" thrice).
      var asked = new Set();
      page.q.forEach(function (ids) { bag(ids).forEach(function (id) { asked.add(id); }); });
      add(fields.question, Array.from(asked));
      page.an.forEach(function (ids) { add(fields.anchor, bag(ids)); });
      var sections = page.s.map(function (s) {
        var section = { anchor: s.a, heading: s.h, summary: s.x, headingIds: s.ht, frame: s.f,
                        headingBag: bag(s.ht), prose: counts(s.p), code: counts(s.c),
                        // [ids, anchor, glossary?, ids and phrases]
                        entries: s.ix.map(function (e) { return e.concat([bag(e[0])]); }) };
        add(fields.heading, section.headingBag);
        section.entries.forEach(function (e) { add(e[2] ? fields.glossary : fields.index, e[3]); });
        section.headingMap = new Map(); add(section.headingMap, section.headingBag);
        section.entryMap = new Map(); section.entries.forEach(function (e) { add(section.entryMap, e[3]); });
        section.prose.forEach(function (n, id) { fields.prose.set(id, (fields.prose.get(id) || 0) + n); });
        section.code.forEach(function (n, id) { fields.code.set(id, (fields.code.get(id) || 0) + n); });
        return section;
      });
      add(fields.title, bag(page.t));
      return { doc: page.doc, title: page.title, titleIds: page.t, anchors: page.an, hub: page.hub,
               // The readers' questions of the page's front matter (search.py).
               questionBags: page.q.map(function (ids) { return new Set(bag(ids)); }),
               sections: sections, fields: fields,
               // Title and headings word for word, stop words kept (verbatim()).
               headingWords: [rawWords(page.title)].concat(page.s.map(function (s) { return rawWords(s.h); })),
               length: lengths(fields) };
    });
    var average = {};
    Object.keys(B).forEach(function (f) { average[f] = mean(pages, f); });
    var frequency = new Map();
    pages.forEach(function (page) {
      var seen = new Set();
      Object.keys(page.fields).forEach(function (f) { page.fields[f].forEach(function (_, id) { seen.add(id); }); });
      // A word of the readers' questions too: one they ask of many pages tells little.
      page.questionBags.forEach(function (ids) { ids.forEach(function (id) { seen.add(id); }); });
      seen.forEach(function (id) { frequency.set(id, (frequency.get(id) || 0) + 1); });
    });
    return { ids: ids, pages: pages, average: average, frequency: frequency, synonyms: raw.synonyms };
  }
  // Two words or more, as search.py's phrase_stems reads them ("create_graph" is one).
  function isPhrase(text, stems) { return rawWords(text).length > 1 && stems.length > 1; }
  function add(map, ids) { ids.forEach(function (id) { map.set(id, (map.get(id) || 0) + 1); }); }
  function lengths(fields) {
    var out = {};
    Object.keys(B).forEach(function (f) { out[f] = total(fields[f]); });
    return out;
  }
  function total(map) {
    var n = 0;
    map.forEach(function (v, id) { if (!phraseIds.has(id)) n += v; });
    return n;
  }
  function mean(pages, field) {
    return pages.reduce(function (sum, p) { return sum + p.length[field]; }, 0) / Math.max(pages.length, 1);
  }

  // A typed word is a synonym's word as itself or by its stem ("if statements"
  // is "if statement"); a stop word only as itself.
  function sameWord(typed, word) {
    return typed === word || (typed !== undefined && !stopwords.has(word) &&
                              stemmer.stemWord(typed) === stemmer.stemWord(word));
  }
  // The query as slots: a word, or a synonym's phrase, each with the stem
  // lists that satisfy it (the words typed first, at full weight).
  function parse(query) {
    var raw = rawWords(query), slots = [], seen = new Set(), i = 0;
    while (i < raw.length) {
      var matched = null;
      data.synonyms.forEach(function (group) {
        var phrase = rawWords(group[0]);
        if (!matched || phrase.length > matched.length) {
          if (phrase.every(function (w, k) { return sameWord(raw[i + k], w); })) matched = { length: phrase.length, group: group };
        }
      });
      if (matched) {
        slots.push(matched.group.map(function (phrase, k) {
          var stems = words(phrase);
          return { stems: stems, weight: k ? tuning.synonym : 1, typed: matched.length,
                   phrase: isPhrase(phrase, stems) };
        }));
        i += matched.length;
      } else {
        var stems = stopwords.has(raw[i]) ? [] : words(raw[i]);
        // A word typed twice ("side by side") counts once.
        if (stems.length && !seen.has(stems.join(" ")))
          slots.push([{ stems: stems, weight: 1, typed: 1, phrase: false }]);
        seen.add(stems.join(" "));
        i += 1;
      }
    }
    var out = slots.map(function (alternatives) {
      return alternatives.map(function (alt) {
        var ids = alt.stems.map(function (s) { return data.ids.has(s) ? data.ids.get(s) : -1; });
        // What it scores by: its words (a typed `retain_grad` is three), or a
        // phrase as one word of its own, -1 where no page has it.
        var key = alt.stems.join(" "), phrase = data.ids.has(key) ? data.ids.get(key) : -1;
        return { weight: alt.weight, typed: alt.typed, ids: ids,
                 terms: alt.phrase ? [data.frequency.has(phrase) ? phrase : -1] : ids };
      }).filter(function (alt) {
        // A word or phrase no page has: left out.
        return alt.ids.concat(alt.terms).every(function (id) { return id >= 0; });
      });
    });
    out.typed = raw;                // the words as typed, for verbatim()
    return out;
  }

  function idf(id) {
    var n = data.pages.length, df = data.frequency.get(id) || 0;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }
  function termScore(fields, lengths, id) {
    var tf = 0;
    Object.keys(FIELDS).forEach(function (f) {
      var n = fields[f].get(id) || 0;
      if (!n) return;
      var norm = f in B ? 1 - B[f] + B[f] * lengths[f] / Math.max(data.average[f], 1) : 1;
      tf += FIELDS[f] * n / norm;
    });
    return tf ? idf(id) * tf * (tuning.k1 + 1) / (tuning.k1 + tf) : 0;
  }
  function slotScore(slot, fields, lengths) {
    var best = 0;
    slot.forEach(function (alt) {
      var score = 0;
      alt.terms.forEach(function (id) { score += termScore(fields, lengths, id); });
      // A typed word split at its underscores counts when all its parts are there.
      if (alt.terms.some(function (id) { return !termScore(fields, lengths, id); })) score = 0;
      best = Math.max(best, alt.weight * score);
    });
    return best;
  }
  // How many of the query's typed words, in a row, a title, heading or entry
  // holds. Words, not slots: a typed phrase with synonyms ("gradient
  // argument") is one slot, which the page's words for it satisfy too.
  function holdsAt(sequence, ids, at) {
    return ids.every(function (id, j) { return sequence[at + j] === id; });
  }
  function run(sequence, slots) {
    var best = 0;
    for (var start = 0; start < slots.length; start++) {
      var length = 0, at = -1, skipped = false;
      for (var k = start; k < slots.length && slots[k].length; k++) {
        // The first slot anywhere, each next one right after the last; one
        // word the reader added between two ("two different losses") is passed over.
        var end = -1, from = at + 1, to = at < 0 ? sequence.length - 1 : at + 1;
        slots[k].some(function (alt) {
          for (var i = from; i <= to; i++) {
            if (holdsAt(sequence, alt.ids, i)) { end = i + alt.ids.length - 1; return true; }
          }
          return false;
        });
        if (end < 0 && length && !skipped) { skipped = true; continue; }
        if (end < 0) break;
        at = end; skipped = false;
        length += slots[k][0].typed;
      }
      best = Math.max(best, length);
    }
    return best;
  }
  function phraseBonus(sequences, slots, weight) {
    var known = slots.reduce(function (n, slot) { return n + (slot.length ? slot[0].typed : 0); }, 0);
    if (known < 2) return 0;
    var best = 0;
    sequences.forEach(function (seq) { best = Math.max(best, run(seq, slots)); });
    return best >= 2 ? weight * best / known : 0;
  }

  function score(page, slots) {
    var known = 0, matched = 0, sum = 0;
    slots.forEach(function (slot) {
      if (!slot.length) return;     // a word no page has: left out
      known += 1;
      var s = slotScore(slot, page.fields, page.length);
      if (s > 0) { matched += 1; sum += s; }
    });
    if (!matched) return null;
    var sequences = page.anchors.slice();
    page.sections.forEach(function (s) {
      sequences.push(s.headingIds);
      s.entries.forEach(function (e) { sequences.push(e[0]); });
    });
    var coverage = matched / known;
    return (page.hub ? tuning.hub : 1) * sum * coverage * coverage *
      Math.pow(together(page, slots) / matched, tuning.together) *
      (1 + Math.max(tuning.phrase * phraseBonus(sequences, slots, 1),
                    tuning.titlePhrase * phraseBonus([page.titleIds], slots, 1))) *
      (1 + tuning.asked * asked(page, slots, known)) *
      (1 + tuning.verbatim * verbatim(page, slots.typed));
  }
  // The share of the typed words that the title or a heading holds in a row as
  // typed, when that is verbatimWords or more: a pasted error message or
  // heading, whose stop words ("does not", "a second time") say which one.
  function verbatim(page, typed) {
    if (typed.length < tuning.verbatimWords) return 0;
    var best = 0;
    page.headingWords.forEach(function (heading) {
      for (var i = 0; i < typed.length; i++) {
        for (var j = 0; j < heading.length; j++) {
          var n = 0;
          while (i + n < typed.length && j + n < heading.length && typed[i + n] === heading[j + n]) n++;
          best = Math.max(best, n);
        }
      }
    });
    return best >= tuning.verbatimWords ? best / typed.length : 0;
  }
  // The share of the query's words one of the readers' questions of the page
  // holds, in any order, when it holds two or more (or the one typed): a page
  // readers ask this of. One shared word ("backprop") says little.
  function asked(page, slots, known) {
    var best = 0;
    page.questionBags.forEach(function (ids) {
      var n = 0;
      slots.forEach(function (slot) {
        if (slot.some(function (alt) {
          return alt.terms.every(function (id) { return ids.has(id); });
        })) n += 1;
      });
      best = Math.max(best, n);
    });
    return best >= Math.min(2, known) ? best / known : 0;
  }
  // How many of the query's slots one section holds, with the page's title and
  // the links' words that apply to all of it: a long page that has each word
  // somewhere, in sections about other things, is not about the query. A word
  // only the section's code holds counts togetherCode of one: a long output or
  // traceback holds nearly any word ("variable", "cause"), and does not say
  // the section is about it.
  function together(page, slots) {
    function has(alt, maps) {
      return alt.terms.every(function (id) { return maps.some(function (m) { return m.has(id); }); });
    }
    var whole = [page.fields.title, page.fields.anchor], best = 0;
    page.sections.forEach(function (section) {
      var maps = whole.concat([section.headingMap, section.entryMap, section.prose]), n = 0;
      slots.forEach(function (slot) {
        if (slot.some(function (alt) { return has(alt, maps); })) n += 1;
        else if (slot.some(function (alt) { return has(alt, maps.concat([section.code])); })) n += tuning.togetherCode;
      });
      best = Math.max(best, n);
    });
    return best;
  }
  // The section a result opens on: the best-matching one, but never a frame
  // section ("Next steps", "Summary": links and recaps that name every term)
  // while another matches; a section whose heading or index entries hold a
  // query word (the one that defines it) scores double.
  function defines(sequences, slots) {
    return slots.some(function (slot) {
      return slot.some(function (alt) {
        return sequences.some(function (seq) {
          return alt.ids.every(function (id) { return seq.indexOf(id) >= 0; });
        });
      });
    });
  }
  function bestSection(page, slots) {
    var best = null, bestScore = 0;
    page.sections.forEach(function (section) {
      var fields = { title: new Map(), index: new Map(), glossary: new Map(), heading: new Map(),
                     anchor: new Map(), question: new Map(), prose: section.prose, code: section.code };
      add(fields.heading, section.headingBag);
      section.entries.forEach(function (e) { add(e[2] ? fields.glossary : fields.index, e[3]); });
      var s = 0, sizes = lengths(fields);
      slots.forEach(function (slot) { if (slot.length) s += slotScore(slot, fields, sizes); });
      var sequences = [section.headingIds].concat(section.entries.map(function (e) { return e[0]; }));
      s *= 1 + tuning.phrase * phraseBonus(sequences, slots, 1);
      if (defines(sequences, slots)) s *= tuning.defines;
      if (section.frame) s *= tuning.frame;
      if (s > bestScore) { best = section; bestScore = s; }
    });
    return best;
  }

  function rank(query) {
    var slots = parse(query);
    var results = [];
    data.pages.forEach(function (page) {
      var s = score(page, slots);
      if (s !== null) results.push({ page: page, score: s });
    });
    results.sort(function (a, b) { return b.score - a.score || (a.page.doc < b.page.doc ? -1 : 1); });
    return results.map(function (r) {
      var section = bestSection(r.page, slots) || r.page.sections[0];
      return { doc: r.page.doc, title: r.page.title, score: r.score,
               anchor: section.anchor ? "#" + section.anchor : "",
               heading: section.heading, summary: section.summary };
    });
  }

  function show(query) {
    var results = rank(query);
    Search.stopPulse();
    var progress = document.getElementById("search-progress");
    if (progress) progress.textContent = "";
    Search.title.innerText = _("Search Results");
    results.forEach(function (r) {
      var item = Search.output.appendChild(document.createElement("li"));
      var link = item.appendChild(document.createElement("a"));
      link.href = r.doc + DOCUMENTATION_OPTIONS.LINK_SUFFIX + r.anchor;
      link.dataset.score = r.score.toFixed(3);
      link.textContent = r.heading ? r.title + " › " + r.heading : r.title;
      if (r.summary) {
        var context = item.appendChild(document.createElement("p"));
        context.className = "context";
        context.textContent = r.summary;
      }
    });
    Search.status.innerText = results.length
      ? "Search finished, found " + results.length + (results.length === 1 ? " page" : " pages") + " matching the search query."
      : "Your search did not match any documents. Please make sure that all words are spelled correctly.";
    // The page a result opens marks the query's words (site.js), stop words
    // left out here, where Sphinx's list of them is loaded.
    if (typeof SPHINX_HIGHLIGHT_ENABLED !== "undefined" && SPHINX_HIGHLIGHT_ENABLED)
      localStorage.setItem("sphinx_highlight_terms", rawWords(query).filter(function (word) {
        return !stopwords.has(word);
      }).join(" "));
  }

  return {
    setData: function (raw) { stemmer = new Stemmer(); data = prepare(raw); },
    rank: function (query) { return rank(query); },
    tuning: tuning,
    install: function () { Search.query = show; },
  };
})();
SiteSearch.install();
