"""Search finds the page that answers a reader's query first.

``search_queries.json`` holds 72 queries readers type or paste (issue 23's
survey: error messages, forum wording, words the pages never use), then 15
written before the ranking's last change was tuned (held out from it), each
with the pages that answer it. Ranking happens in the browser (docs/_static/
site-search.js over the build's searchdata.js), so the queries are ranked in
search.html by the function its results list comes from: the first typed into
the search box, and the list it shows held to that function's order; the rest
all in one loaded page, a navigation each costing more than their ranking.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.build]

QUERIES = json.loads((Path(__file__).with_name("search_queries.json")).read_text("utf8"))
SURVEY = 72  # the first 72 queries are the survey's; the other 15 were held out
# Issue 23's aim: an answering page first for 0.9 of the survey's queries (70
# of 72 today, 85 of all 87), and in the top 3 for every query.
FIRST_AT_LEAST = 0.9


def results(page, base_url) -> list[str]:
    """The result pages, in rank order, as paths without .html."""
    expect(page.locator(".search-summary")).to_have_text(
        re.compile("Search finished|did not match"))
    hrefs = page.eval_on_selector_all("#search-results li a", "as => as.map(a => a.href)")
    return [href.removeprefix(base_url).split("#")[0].removesuffix(".html") for href in hrefs]


def test_a_query_typed_into_the_search_box_lists_its_page_first(page, traffic, base_url):
    page.goto("index.html")
    box = page.locator("input[name=q]").locator("visible=true").first
    box.fill("zero_grad")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"search\.html\?q=zero_grad"))
    listed = results(page, base_url)
    assert listed[0] == "how-to/accumulate-zero-and-reuse-gradients"
    # The list is the ranking the query sets are scored by (answering_ranks).
    assert listed == page.evaluate("q => SiteSearch.rank(q).map(r => r.doc)", "zero_grad")
    assert not traffic.console_errors and not traffic.foreign_requests


def answering_ranks(page, queries: list[dict]) -> dict[str, int | None]:
    """query -> the rank of its first answering page (None: not listed).

    Ranked by the function search.html lists its results with, all in one
    loaded search.html: a navigation per query cost some 0.5 s each, and the
    box, the URL and the rendered list are the test above's."""
    page.goto("search.html")
    found = page.evaluate("queries => queries.map(q => SiteSearch.rank(q).map(r => r.doc))",
                          [query["q"] for query in queries])
    return {
        query["q"]: next((rank for rank, doc in enumerate(docs, 1) if doc in query["pages"]), None)
        for query, docs in zip(queries, found, strict=True)
    }


def test_readers_queries_find_the_answering_page_first(page, traffic):
    ranks = answering_ranks(page, QUERIES)
    first = sum(rank == 1 for rank in ranks.values())
    survey_first = sum(ranks[query["q"]] == 1 for query in QUERIES[:SURVEY])
    top3 = sum(rank is not None and rank <= 3 for rank in ranks.values())
    table = "\n".join(f"  {rank!s:>4}  {q}" for q, rank in ranks.items() if rank != 1)
    print(f"\nfirst {first}/{len(QUERIES)} ({survey_first}/{SURVEY} of the survey), "
          f"top 3 {top3}/{len(QUERIES)}; not first:\n{table}")
    assert top3 == len(QUERIES), f"an answering page is not in the top 3:\n{table}"
    assert survey_first >= FIRST_AT_LEAST * SURVEY, (
        f"an answering page first for {survey_first} of the survey's {SURVEY} queries:\n{table}")
    assert first >= FIRST_AT_LEAST * len(QUERIES), (
        f"an answering page first for {first} of {len(QUERIES)} queries:\n{table}")
    assert not traffic.console_errors and not traffic.foreign_requests



# A synonym group the survey's queries do not type, whose page phrase the
# pages hold in a row ("memory grows", 7 times).
UNTYPED_GROUP = ["leak", "memory grows"]


def test_a_new_synonym_moves_no_query_that_does_not_type_it(page, traffic):
    """The data with the group against the data the build wrote without it
    (its phrase's counts left out of every section): the same scores."""
    page.goto("search.html")
    stripped, before, after = page.evaluate("""async ([queries, group]) => {
        const text = await (await fetch("searchdata.js")).text();
        const raw = JSON.parse(text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")));
        const rank = () => queries.map(q => SiteSearch.rank(q).map(r => [r.doc, r.score]));
        SiteSearch.setData(JSON.parse(JSON.stringify(raw)));
        const withIt = rank();
        const stemmer = new Stemmer();
        const key = group[1].split(" ").map(w => stemmer.stemWord(w)).join(" ");
        const id = String(raw.vocabulary.indexOf(key));
        let stripped = 0;
        const strip = counts => counts.split(",").filter(pair => {
            const drop = pair.split(":")[0] === id;
            stripped += drop;
            return !drop;
        }).join(",");
        raw.pages.forEach(p => p.s.forEach(s => { s.p = strip(s.p); s.c = strip(s.c); }));
        raw.synonyms = raw.synonyms.filter(g => g[0] !== group[0]);
        SiteSearch.setData(raw);
        return [stripped, rank(), withIt];
    }""", [[query["q"] for query in QUERIES], UNTYPED_GROUP])
    assert stripped > 0, "the phrase is on no page: the test could not fail"
    assert before == after
    assert not traffic.console_errors and not traffic.foreign_requests
