"""Search on queries written less like the site's own words (issue 40): the
survey's queries in ``search_queries.json`` borrow the pages' wording; these say
the same things as a reader who has not read the pages would.

* ``search_queries_reworded.json``: 22 ("adding up" for accumulate, "prediction"
  for output, "a thousand points" for many points), which the ranking was
  tuned on.
* ``search_queries_heldout.json``: 15 more, written before that tuning and held
  out from it, each with the pages that answer it read off the pages; since
  then the development set the next tuning was measured on.
* ``search_queries_heldout2.json``: 15 more in a reader's words (slang, error
  fragments, goals), written before that next tuning and not tuned on; since
  then, with ``search_queries_heldout.json``, a development set.
* ``search_queries_heldout3.json``: 30 more in a reader's words, over 24 pages,
  written before the tuning on both development sets and never tuned on: how
  far the ranking carries to phrasings nobody tuned it on.
* ``search_queries_heldout4.json``: 30 more, written by a reader of the pages
  who saw no other query file, after all tuning: scored once, never tuned on;
  since then, with the others, a development set.
* ``search_queries_heldout5.json``: 30 more over 29 pages, written the same way
  while the ranking was being tuned on the sets above and scored once after it.
* ``search_queries_heldout6.json`` and ``search_queries_heldout7.json``: 30 each,
  written by a reader who saw neither a query file nor a page's readers' questions,
  after all tuning, and scored once; since then, with the others, development sets.
* ``search_queries_heldout8.json`` and ``search_queries_heldout9.json``: 30 each,
  written the same way while heldout6 and heldout7 were being tuned on, by a reader
  who saw no query file, and scored once after that tuning (28 and 24 of 30 first);
  since then development sets.
* ``search_queries_heldout10.json`` and ``search_queries_heldout11.json``: 30 each,
  written the same way by a reader who saw no query file, while the ranking was
  tuned on all the sets above, and scored once after (the tuner never saw them):
  what the ranking does on phrasings nobody tuned it on.

The aim is the survey's: an answering page first for 0.9 of each set, and in
the top 3 for every query.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_search_ranking import FIRST_AT_LEAST, answering_ranks

pytestmark = [pytest.mark.browser, pytest.mark.build]

HERE = Path(__file__).parent


@pytest.mark.parametrize("queries", [
    "search_queries_reworded.json",
    pytest.param("search_queries_heldout.json", marks=pytest.mark.xfail(
        strict=True, reason="issue 40: 12 of 15 development queries rank an answering page "
                            "first (10 before they were tuned on), 15 of 15 in the top 3")),
    pytest.param("search_queries_heldout2.json", marks=pytest.mark.xfail(
        strict=True, reason="issue 40: 13 of 15 development queries rank an answering page "
                            "first (11 before they were tuned on), 15 of 15 in the top 3")),
    # 27 of 30 first (17 before the readers' questions were a field and headings
    # matched as typed; 25 before BM25's k1 went from 1.2 to 4, 26 before a word
    # only code holds counted less toward a section holding the query), 30 of 30
    # in the top 3 (26 before).
    "search_queries_heldout3.json",
    # 29 of 30 first (24 before the readers' questions were a field and headings
    # matched as typed; 27 before BM25's k1 went from 1.2 to 4), 30 of 30 in the
    # top 3 (29 before).
    "search_queries_heldout4.json",
    # 27 of 30 first (20 before the tuning it was held out from; 24 before heldout6
    # and heldout7 were tuned on; 26 before BM25's k1 went from 1.2 to 4), 30 of 30
    # in the top 3; 26 from the 32nd reading to the 57th, whose debug-nan text ranks
    # 'loss looks fine but grads become nan after backward …' first again.
    "search_queries_heldout5.json",
    # 30 of 30 first (27 before they were tuned on; 29 before a word only code holds
    # counted less toward a section holding the query), 30 of 30 in the top 3 (28 before).
    "search_queries_heldout6.json",
    # 29 of 30 first (26 before they were tuned on), 30 of 30 in the top 3 (29 before).
    "search_queries_heldout7.json",
    # 28 of 30 first when scored untuned, 30 of 30 in the top 3; the same since.
    "search_queries_heldout8.json",
    pytest.param("search_queries_heldout9.json", marks=pytest.mark.xfail(
        strict=True, reason="issue 40: 24 of 30 development queries rank an answering page "
                            "first (24 when scored untuned), 29 of 30 in the top 3 (28)")),
    pytest.param("search_queries_heldout10.json", marks=pytest.mark.xfail(
        strict=True, reason="issue 40: 27 of 30 never-tuned queries rank an answering page "
                            "first (26 before the tuning on heldout8 and 9), 30 of 30 in the top 3 "
                            "when scored; the 20th reading's new accumulate text moved 'what "
                            "pytorch version were these outputs generated with' to 4th")),
    pytest.param("search_queries_heldout11.json", marks=pytest.mark.xfail(
        strict=True, reason="issue 40: 29 of 30 never-tuned queries rank an answering page "
                            "first, but 'leaf tensor meaning' ranks its page 4th: 29 of 30 "
                            "in the top 3 (29 and 29 before the tuning on heldout8 and 9)")),
])
def test_reworded_queries_find_the_answering_page_first(page, traffic, queries):
    ranks = answering_ranks(page, json.loads((HERE / queries).read_text("utf8")))
    first = sum(rank == 1 for rank in ranks.values())
    table = "\n".join(f"  {rank!s:>4}  {q}" for q, rank in ranks.items() if rank != 1)
    print(f"\n{queries}: first {first}/{len(ranks)}; not first:\n{table}")
    assert not traffic.console_errors and not traffic.foreign_requests
    assert all(rank is not None and rank <= 3 for rank in ranks.values()), table
    assert first >= FIRST_AT_LEAST * len(ranks), table
