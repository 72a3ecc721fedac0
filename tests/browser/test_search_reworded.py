"""Search on queries written less like the site's own words (issue 40): the
survey's queries in ``search_queries.json`` borrow the pages' wording; these
22 say the same things as a reader who has not read the pages would
("adding up" for accumulate, "prediction" for output, "a thousand points"
for many points). The aim is the survey's: an answering page first for 0.9 of
them, and in the top 3 for every one. Not yet held: 14 of 22 first today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_search_ranking import FIRST_AT_LEAST, answering_ranks

pytestmark = [pytest.mark.browser, pytest.mark.build]

REWORDED = json.loads(Path(__file__).with_name("search_queries_reworded.json").read_text("utf8"))


@pytest.mark.xfail(reason="issue 40: 14 of 22 reworded queries rank an answering page first")
def test_reworded_queries_find_the_answering_page_first(page, traffic, base_url):
    ranks = answering_ranks(page, base_url, REWORDED)
    first = sum(rank == 1 for rank in ranks.values())
    table = "\n".join(f"  {rank!s:>4}  {q}" for q, rank in ranks.items() if rank != 1)
    print(f"\nreworded: first {first}/{len(REWORDED)}; not first:\n{table}")
    assert not traffic.console_errors and not traffic.foreign_requests
    assert all(rank is not None and rank <= 3 for rank in ranks.values()), table
    assert first >= FIRST_AT_LEAST * len(REWORDED), table
