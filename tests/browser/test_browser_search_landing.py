"""The page a search result opens: the section it lands on, and the words marked.

* The highlighter (site.js, in place of Sphinx's) marks the query's whole words,
  a plural's "s" allowed, never a stop word, never part of a longer word ("is"
  in ``is_leaf``, "grad" in "gradient"), and never throws: Sphinx's threw
  ``parent.getBBox is not a function`` on any word of an SVG ``<title>`` (furo's
  "Light mode", "Dark mode") and stopped halfway.
* A one-word query lands on a section named for the word (the ranking prefers
  one whose heading or index entries hold it), never on a "Next steps" or
  "Summary" section.
"""

from __future__ import annotations

import re
from urllib.parse import quote_plus

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.build]

# The review's queries: substrings and stop words flooded the page, or a word of
# an SVG title made the highlighter throw.
QUERIES = ["grad is None", "forward mode", "jacobian of a batch", "grad in a loop",
           "backward seed", "dark mode"]
# The site's frame: a result that lands here says nothing of its page.
FRAME = {"Next steps", "Summary", "Check yourself"}

MARKS = """() => [...document.querySelectorAll('.highlighted')].map(mark => {
  const before = mark.previousSibling ? mark.previousSibling.textContent.slice(-1) : '';
  const after = mark.nextSibling ? mark.nextSibling.textContent.slice(0, 1) : '';
  return [mark.textContent, before, after, Boolean(mark.closest('svg, mjx-container'))];
})"""
WORD_CHARACTER = re.compile(r"[\w]")


def open_first_result(page, query: str) -> tuple[str, set[str]]:
    """Search, open the first result: its link's text, and the search page's stop words."""
    page.goto(f"search.html?q={quote_plus(query)}")
    expect(page.locator(".search-summary")).to_have_text(
        re.compile("Search finished"))
    stop_words = set(page.evaluate("[...stopwords]"))
    first = page.locator("#search-results li a").first
    heading = first.text_content()
    first.click()
    page.wait_for_load_state("load")
    page.wait_for_timeout(100)  # Sphinx runs the highlighter on its ready event
    return heading, stop_words


@pytest.mark.parametrize("query", QUERIES)
def test_the_highlighter_marks_whole_query_words_and_never_throws(page, traffic, query):
    _heading, stop_words = open_first_result(page, query)
    marks = page.evaluate(MARKS)
    wanted = {w for w in re.split(r"[^\w]+", query.lower()) if w and w not in stop_words}
    assert marks, f"nothing marked for {query!r} on {page.url}"
    for text, before, after, in_svg in marks:
        word = text.lower()
        # A query word, or its plural ("modes" for "mode", "matches" for "match").
        assert any(word in (w, w + "s", w + "es") for w in wanted), (query, text)
        assert not WORD_CHARACTER.match(before) and not WORD_CHARACTER.match(after), (
            f"{text!r} marked inside a word: {before}{text}{after}")
        assert not in_svg, f"{text!r} marked inside an SVG"
    print(f"{query!r}: {len(marks)} marks on {page.url}")
    assert not traffic.console_errors, traffic.console_errors


def test_a_word_of_an_svg_title_is_highlighted_without_an_error(page, traffic):
    # ?highlight= is what older links carry; "mode" is in furo's icons' titles.
    page.goto("how-to/stop-gradients.html?highlight=mode+light+detach")
    page.wait_for_timeout(100)
    assert page.locator("svg title").count(), "no SVG <title> on the page to try"
    assert page.locator(".highlighted").count() > 0
    assert not traffic.console_errors, traffic.console_errors


@pytest.mark.parametrize("word", ["jacobian", "seed", "detach", "leaf", "hessian"])
def test_a_one_word_query_lands_on_the_section_named_for_it(page, traffic, word):
    heading, _stop_words = open_first_result(page, word)
    section = heading.split(" › ")[-1]
    print(f"{word!r} lands on {heading!r}")
    assert section not in FRAME, f"{word!r} lands on {heading!r}"
    assert word in section.lower(), f"{word!r} lands on {heading!r}, not named for it"
    assert not traffic.console_errors
