"""The search data's per-page cache (autograd_docs/html/search.py's FactsCache):
a rebuild takes an unchanged page's facts from the last build and recomputes a
changed page's, and what it keeps is what a fresh reading gives.
(That the whole searchdata.js of an edited-then-reverted site is a clean build's
bytes, tests/test_reproducible.py checks: facts kept stale would show there.)
And which pages' links lend their headings to the pages they point to, and
where a synonym's phrase counts: only where its words stand in a row; and a
page's readers' questions, read from its front matter."""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from hypothesis import given, settings
from hypothesis import strategies as st
from sphinx.search.en import SearchEnglish

from autograd_docs.html import search


def doctree(heading: str, prose: str) -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    section = nodes.section(ids=[heading.lower()])
    section += nodes.title(text=heading)
    section += nodes.paragraph(text=prose)
    document += section
    return document


class Site:
    """What FactsCache asks of the application (the doctree folder, the search
    options), and the pages whose facts it computed (``read``: their docnames)."""

    def __init__(self, folder: Path, monkeypatch, options: dict | None = None) -> None:
        self.pages: set[str] = set()
        self.loaded: list[str] = []
        self.doctreedir = str(folder)
        self.config = SimpleNamespace(html_search_options=options or {})
        computed = search.page_facts

        def counted(tree, words):
            self.loaded.append(tree["docname"])
            return computed(tree, words)

        monkeypatch.setattr(search, "page_facts", counted)

    def write(self, docname: str, heading: str, prose: str) -> None:
        tree = doctree(heading, prose)
        tree["docname"] = docname
        self.pages.add(docname)
        Path(self.doctreedir, f"{docname}.doctree").write_bytes(pickle.dumps(tree))

    def facts(self) -> dict[str, dict]:
        cache, words = search.FactsCache(self), search.Words(SearchEnglish({}))
        found = {name: cache.facts(name, words) for name in sorted(self.pages)}
        cache.save(sorted(self.pages))
        return found


def test_a_rebuild_reads_only_the_pages_whose_doctree_changed(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    site.write("a", "Jacobians", "A Jacobian holds every partial derivative.")
    site.write("b", "Seeds", "The seed weights the outputs.")
    first = site.facts()
    assert site.loaded == ["a", "b"]

    kept = tmp_path / search.FactsCache.FILE
    written = kept.stat().st_mtime_ns
    site.loaded.clear()
    assert site.facts() == first and site.loaded == [], "nothing changed: nothing read"
    assert kept.stat().st_mtime_ns == written, "nothing changed: nothing written"

    site.write("b", "Seeds", "The gradient argument weights the outputs.")
    again = site.facts()
    assert site.loaded == ["b"]
    assert again["a"] == first["a"]
    assert "argument" in again["b"]["sections"][0]["prose"], again["b"]

    site.pages.remove("a")
    site.facts()
    assert json.loads(kept.read_text())["pages"].keys() == {"b"}, "a removed page's facts go"


def test_kept_facts_are_dropped_when_the_rules_that_made_them_change(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    site.write("a", "Jacobians", "prose")
    site.facts()
    other_options = Site(tmp_path, monkeypatch, {"type": "default", "scorer": "other.js"})
    other_options.pages = site.pages
    other_options.facts()
    assert other_options.loaded == ["a"], "other search options: the page is read again"
    other_packages = Site(tmp_path, monkeypatch, {"type": "default", "scorer": "other.js"})
    other_packages.pages = site.pages
    monkeypatch.setattr(search, "environment_fingerprint", lambda: "another stemmer")
    other_packages.facts()
    assert other_packages.loaded == ["a"], "other packages (a stemmer, docutils): read again"


# What the cache file may hold instead of facts, and whether the build says so
# (facts kept under other rules are no fault: they are dropped without a word).
@pytest.mark.parametrize(("kept", "said"), [("{not json", True), ("[]", True),
                                            ('{"rules": "other", "pages": []}', True),
                                            ('{"rules": "other", "pages": {}}', False)])
def test_an_unreadable_cache_is_said_and_every_page_read(tmp_path, monkeypatch, caplog, kept,
                                                         said):
    caplog.set_level(logging.INFO)
    site = Site(tmp_path, monkeypatch)
    site.write("a", "Jacobians", "prose")
    (tmp_path / search.FactsCache.FILE).write_text(kept)
    site.facts()
    assert site.loaded == ["a"]
    assert (f"{search.FactsCache.FILE} unreadable" in caplog.text) == said, caplog.text
    assert json.loads((tmp_path / search.FactsCache.FILE).read_text())["pages"].keys() == {"a"}


def test_only_a_hub_pages_headings_are_read_as_link_texts():
    """A question on a hub names the page it links; a checklist heading on a
    content page names that page, not the pages its items point on to."""
    hub = {"search": "hub"}
    app = SimpleNamespace(env=SimpleNamespace(metadata={"questions": hub, "howto": {}, "answer": {}}))
    facts = {
        "questions": {"links": [["doc", "answer", "Why is x None?"]]},
        "howto": {"links": [["doc", "answer", "Why x is None: a checklist"]]},
        "answer": {"links": []},
    }
    assert search.anchor_texts(app, facts, frame=set()) == {"answer": ["Why is x None?"]}


def test_a_pages_readers_questions_are_read_from_its_front_matter():
    """MyST hands a front matter list over as its JSON text; a page without
    the key has none; anything but a list of strings is None (the build then
    says where: tests/test_faults.py)."""
    app = SimpleNamespace(env=SimpleNamespace(metadata={
        "asked": {"search_questions": json.dumps(["grad is None", "freeze layers"])},
        "plain": {},
        "wrong": {"search_questions": "grad is None"},
    }))
    assert search.reader_questions(app, "asked") == ["grad is None", "freeze layers"]
    assert search.reader_questions(app, "plain") == []
    assert search.reader_questions(app, "wrong") is None


WORDS = search.Words(SearchEnglish({}))
PHRASES = search.phrase_stems(
    [["stop tracking", "no_grad", "detach"], ["hand-written gradient", "check gradients"],
     ["create graph", "create_graph"]], WORDS)


def test_a_synonym_phrase_is_two_words_or_more():
    # "create_graph" is one word (its parts are searched as it), "no_grad" too
    assert sorted(PHRASES) == ["check gradient", "creat graph", "hand written gradient",
                               "stop track"]


@given(st.lists(st.sampled_from(["check", "gradients", "finite", "the", "create_graph"]),
                max_size=12))
@settings(max_examples=60, database=None, deadline=None)
def test_a_phrase_counts_where_its_words_stand_in_a_row(typed):
    # Stop words fall out first, as on the pages: "check the gradients" holds it.
    content = [word for word in typed if word != "the"]
    in_a_row = sum(content[i:i + 2] == ["check", "gradients"] for i in range(len(content)))
    made = sum(content[i:i + 1] == ["create_graph"] for i in range(len(content)))
    hits = search.phrase_hits(WORDS(" ".join(typed)), PHRASES)
    assert hits.count("check gradient") == in_a_row
    assert hits.count("creat graph") == made  # the parts of create_graph, in a row
    assert set(hits) <= {"check gradient", "creat graph"}
