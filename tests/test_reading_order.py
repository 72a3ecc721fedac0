"""The order pages are read in with parallel readers (autograd_docs/reading_order.py):
pure functions, checked against a replay of Sphinx's own chunking."""

from __future__ import annotations

import random

from sphinx.util.parallel import make_chunks

from autograd_docs import reading_order as ro


def chunks_of(order, nproc):
    return make_chunks(list(order), nproc)


def site(n_executed=31, n_plain=4, seed=0):
    """A site shaped like the real one: pages of 0.7 to 4.2 s, a few without code."""
    rng = random.Random(seed)
    costs = {f"page-{i:02d}": round(rng.uniform(0.7, 4.2), 2) for i in range(n_executed)}
    costs |= {f"index-{i}": ro.READ_SECONDS for i in range(n_plain)}
    return costs, {name for name in costs if name.startswith("page")}


def test_start_order_is_the_first_chunks_then_the_waiting_ones_last_first():
    assert ro.start_order(3, 2) == [0, 1, 2]
    assert ro.start_order(6, 2) == [0, 1, 5, 4, 3, 2]
    assert ro.start_order(2, 4) == [0, 1]


def test_chunk_sizes_are_sphinx_s():
    assert ro.chunk_sizes(35, 2) == [13, 13, 9]
    assert ro.chunk_sizes(3, 2) == [1, 1, 1]


def test_simulate_replays_two_readers():
    costs = {"a": 4, "b": 1, "c": 1}
    # a on one reader; b, then c (started when b's reader is free) on the other.
    assert ro.simulate([["a"], ["b"], ["c"]], costs, set(), 2, server_ready=0) == 4
    # An executed page waits for the server: c waits until 10.
    assert ro.simulate([["a"], ["b"], ["c"]], costs, {"c"}, 2, server_ready=10) == 11


def test_the_plan_is_a_permutation_and_deterministic():
    costs, executed = site()
    names = sorted(costs)
    first = ro.plan(names, costs, executed, 2)
    assert sorted(first) == names
    assert ro.plan(list(reversed(names)), costs, executed, 2) == first


def test_the_plan_finishes_no_later_than_name_order_and_near_the_bound():
    for seed in range(5):
        costs, executed = site(seed=seed)
        names = sorted(costs)
        planned = ro.plan(names, costs, executed, 2)
        by_name = ro.simulate(chunks_of(names, 2), costs, executed, 2)
        best = ro.simulate(chunks_of(planned, 2), costs, executed, 2)
        assert best <= by_name
        # Sphinx's chunks of 13, 13 and 9 leave one reader 13 pages: it can do no
        # better than the 13 costliest pages, nor than half of everything.
        heaviest = sum(sorted(costs.values())[-13:])
        bound = ro.SERVER_READY_SECONDS + max(sum(costs.values()) / 2,
                                              min(heaviest, sum(costs.values())))
        assert best <= bound * 1.05, (seed, best, bound)


def test_a_reader_alone_with_one_chunk_gets_the_heaviest_pages():
    costs, executed = site()
    planned = ro.plan(sorted(costs), costs, executed, 2)
    chunks = chunks_of(planned, 2)
    # Chunk 1 runs alone on its reader while the other reads chunks 0 and 2.
    load = [sum(costs[p] for p in chunk) for chunk in chunks]
    assert load[1] >= load[0] and load[1] >= load[2]


def test_each_chunk_begins_with_the_pages_that_do_not_execute():
    costs, executed = site(n_plain=6)
    for chunk in chunks_of(ro.plan(sorted(costs), costs, executed, 2), 2):
        flags = [page in executed for page in chunk]
        assert flags == sorted(flags), chunk  # False (not executed) first


def test_the_pages_without_code_go_where_they_overlap_the_server_s_imports():
    # Two chunks of two, started at once: one page without code in each, read
    # while the server imports, beats both in one chunk (3.5 s against 4.5 s).
    costs = {"a": 1.0, "b": 1.0, "index": 0.1, "glossary": 0.1}
    executed = {"a", "b"}
    planned = ro.plan(sorted(costs), costs, executed, 2, server_ready=2.5)
    chunks = chunks_of(planned, 2)
    assert [[p in executed for p in chunk] for chunk in chunks] == [[False, True]] * 2
    assert ro.simulate(chunks, costs, executed, 2, server_ready=2.5) == 3.5


def test_one_reader_reads_the_pages_that_do_not_execute_first():
    costs, executed = site()
    planned = ro.plan(sorted(costs), costs, executed, 1)
    flags = [page in executed for page in planned]
    assert flags == sorted(flags)


def test_a_large_site_is_planned_quickly():
    import time

    costs, executed = site(n_executed=400, n_plain=40)
    start = time.perf_counter()
    ro.plan(sorted(costs), costs, executed, 4)
    assert time.perf_counter() - start < 5


def test_cost_estimate():
    text = ("---\nfile_format: mystnb\n---\n# T\n\n```{code-cell} ipython3\n"
            ":tags: [remove-cell]\nx = 1\n\ny = 2\n```\n\nprose\n\n"
            "````{code-cell} ipython3\nprint(x)\n````\n")
    assert ro.code_lines(text) == (2, 3)
    assert ro.estimate(0, 0, None, True) == ro.READ_SECONDS
    assert ro.estimate(2, 3, None, False) == ro.READ_SECONDS
    assert ro.estimate(2, 3, 2.0, True) == ro.READ_SECONDS + 2.0
    assert ro.estimate(2, 3, None, True) > ro.estimate(2, 0, None, True)


class Pages:
    """A builder's stand-in: records what reads and writes its pages, and how."""

    def __init__(self):
        self.calls = []

    def _read_serial(self, docnames):
        self.calls.append(("read in the main process", list(docnames)))

    def _write_serial(self, docnames):
        self.calls.append(("written in the main process", list(docnames)))


def test_pages_that_make_one_chunk_are_read_and_written_without_a_fork(monkeypatch):
    from sphinx.builders import Builder

    from autograd_docs import _compat

    for name in ("_read_parallel", "_write_parallel"):  # put back after the test
        monkeypatch.setattr(Builder, name, getattr(Builder, name))
    _compat.one_chunk_in_the_main_process()  # what reading_order's setup does
    pages = Pages()
    Builder._read_parallel(pages, ["edited"], 2)
    Builder._read_parallel(pages, [], 2)
    # The first page is written in the main process anyway; the 9 after it make one chunk.
    Builder._write_parallel(pages, [f"page-{i}" for i in range(10)], 1)
    assert pages.calls == [("read in the main process", ["edited"]),
                           ("read in the main process", []),
                           ("written in the main process", [f"page-{i}" for i in range(10)])]


def test_pages_that_make_two_chunks_or_more_go_to_sphinxs_forks():
    from autograd_docs._compat.sphinx import _serial_for_one_chunk

    pages, forked = Pages(), []
    read = _serial_for_one_chunk("_read_serial", list)(
        lambda builder, docnames, nproc: forked.append(("read", docnames, nproc)))
    write = _serial_for_one_chunk("_write_serial", lambda docnames: docnames[1:])(
        lambda builder, docnames, nproc: forked.append(("write", docnames, nproc)))
    read(pages, ["a", "b"], 2)  # two readers, a page each
    many = [f"page-{i}" for i in range(12)]
    write(pages, many, 1)  # 11 after the first: chunks of 10 and 1
    assert len(chunks_of(many[1:], 1)) == 2
    assert forked == [("read", ["a", "b"], 2), ("write", many, 1)] and pages.calls == []
