"""Balanced parallel reading: the order Sphinx reads the pages in.

With ``-j N`` Sphinx cuts the list of pages to read into chunks
(``sphinx.util.parallel.make_chunks``: 35 pages on 2 readers make chunks of 13,
13 and 9), starts the first N chunks at once and each later one, last chunk
first, when a reader finishes (``ParallelTasks`` takes the waiting chunk it was
given last). Read in name order, one reader got most of the executed pages, and
the first page of each chunk waited for the fork server's imports.

``env-before-read-docs`` hands the list to this module before the chunks are cut,
and it reorders the list in place so that

- the executed pages spread over the readers to finish together: the plan
  (``plan``) is scored by replaying Sphinx's own chunking and start order
  (``simulate``) and improved by moving pages between chunks;
- each chunk starts with the pages that do not execute (no code cells), which
  are read while the fork server is still importing torch.

What a page costs is an estimate (``page_costs``): myst-nb's last measured
execution time of the page when the saved environment has one (the best guess
of the next: pages differ tenfold, 0.1 to 1.2 s), else a fixed cost per executed
page plus a little per line of code (the cells as myst-nb reads them,
``code_cells``; read only for a page with nothing measured). A clean build has nothing measured; fitted
on this site's clean build (31 pages, run by the page runner from a server that
preloads what pages import), a page costs about 0.24 s plus 0.0006 s per line
(lines predict a page's time weakly, r = 0.19, and better than its count of
cells, r = 0.03), so the plan mostly balances how many pages each reader
executes. A page myst-nb will not execute (``_compat.executes_page``, the
decision the build log counts with) costs a read. Whether a page that executes
will be a cache hit is not guessed: it is read because its source or a snippet
it imports changed, and then it usually executes.

A serial build (``-j 1``) reads the pages that do not execute first, for the
same overlap with the server's imports. A parallel build reads a lone page (an
author's one-page edit) in the main process, and writes there the pages that
would go to one writer (``_compat.one_chunk_in_the_main_process``): a lone
chunk in a fork only waits longer.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sphinx.application import Sphinx
from sphinx.util.parallel import make_chunks, parallel_available

from autograd_docs import _compat
from autograd_docs.code_cells import code_cells

if TYPE_CHECKING:
    from nbformat import NotebookNode

# Seconds, from the clean build's own log on a 2-core machine (bench/README.md):
READ_SECONDS = 0.1  # reading a page that does not execute
EXECUTE_SECONDS = 0.24  # an executed page's fixed part: fork, shell, figures
LINE_SECONDS = 0.0006  # and per line of code
SERVER_READY_SECONDS = 2.5  # the fork server's imports: no page executes before


def code_lines(text: str, notebook: NotebookNode | None = None) -> tuple[int, int]:
    """A MyST page's code cells (as myst-nb reads them; ``notebook``: already
    read) and their lines, not blank: code and a YAML block of options, not
    ``:key:`` options (the count the per-line cost was fitted on)."""
    cells = code_cells(text, notebook=notebook)
    lines = text.splitlines()
    counted = [
        line
        for cell in cells
        for line in lines[cell.fence_line : cell.body_line - 1] + cell.source.split("\n")
        if line.strip() and not line.startswith(":")
    ]
    return len(cells), len(counted)


def estimate(cells: int, lines: int, measured: float | None, executes: bool) -> float:
    """A page's cost in seconds: measured if known, else from its lines of code."""
    if not executes or not cells:
        return READ_SECONDS
    if measured is not None:
        return READ_SECONDS + measured
    return READ_SECONDS + EXECUTE_SECONDS + LINE_SECONDS * lines


def chunk_sizes(n: int, nproc: int) -> list[int]:
    """The sizes of the chunks Sphinx cuts ``n`` pages into (its own function)."""
    return [len(chunk) for chunk in make_chunks([str(i) for i in range(n)], nproc)]


def start_order(nchunks: int, nproc: int) -> list[int]:
    """The order Sphinx starts chunks in: the first ``nproc`` at once, then the
    waiting ones last first (``ParallelTasks._join_one`` pops the newest)."""
    first = list(range(min(nproc, nchunks)))
    return first + list(range(nchunks - 1, len(first) - 1, -1))


def simulate(
    chunks: Sequence[Sequence[str]],
    costs: Mapping[str, float],
    executed: set[str],
    nproc: int,
    server_ready: float = SERVER_READY_SECONDS,
) -> float:
    """When the last reader finishes, reading ``chunks`` as Sphinx does.

    Each chunk goes to the reader free first, in ``start_order``; an executed
    page starts no earlier than ``server_ready``.
    """
    free = [0.0] * min(nproc, len(chunks))
    heapq.heapify(free)
    end = 0.0
    for index in start_order(len(chunks), nproc):
        t = heapq.heappop(free)
        for page in chunks[index]:
            if page in executed:
                t = max(t, server_ready)
            t += costs[page]
        heapq.heappush(free, t)
        end = max(end, t)
    return end


def _within_chunk(chunk: list[str], executed: set[str]) -> list[str]:
    """Pages that do not execute first (they overlap the server's imports)."""
    return sorted(chunk, key=lambda page: (page in executed, page))


def plan(
    docnames: Sequence[str],
    costs: Mapping[str, float],
    executed: set[str],
    nproc: int,
    server_ready: float = SERVER_READY_SECONDS,
    max_evaluations: int | None = None,
) -> list[str]:
    """The pages in the order to read them with ``nproc`` readers.

    Pure: the same arguments give the same order. The chunks keep Sphinx's sizes;
    pages are dealt heaviest first to the chunk that would finish earliest, then
    swapped between chunks while a swap shortens the simulated build (at most
    ``max_evaluations`` simulations, by default about 300,000 page steps in all,
    so a large site stays quick).
    """
    pages = sorted(docnames)
    if max_evaluations is None:
        max_evaluations = max(200, 300_000 // max(len(pages), 1))
    if nproc <= 1 or len(pages) <= 1:
        return _within_chunk(pages, executed)
    sizes = chunk_sizes(len(pages), nproc)
    if len(sizes) == 1:
        return _within_chunk(pages, executed)

    # Deal: heaviest first, each to the chunk with room whose reader would be
    # free earliest. Chunks run in start order on readers; a chunk's end is
    # when its reader's earlier chunks end plus its own pages.
    chunks: list[list[str]] = [[] for _ in sizes]
    order = start_order(len(sizes), nproc)
    for page in sorted(pages, key=lambda p: (-costs[p], p)):
        best = min(
            (i for i in range(len(sizes)) if len(chunks[i]) < sizes[i]),
            key=lambda i: (_dealt_end(chunks, i, order, costs, nproc), i),
        )
        chunks[best].append(page)

    def score(candidate):
        ordered = [_within_chunk(chunk, executed) for chunk in candidate]
        return (
            simulate(ordered, costs, executed, nproc, server_ready),
            # tie-break: the non-executed pages where the server is not ready
            -sum(p not in executed for i in order[:nproc] for p in candidate[i][:1]),
        )

    best_score = score(chunks)
    evaluations = 1
    improved = True
    while improved and evaluations < max_evaluations:
        improved = False
        for a in range(len(chunks)):
            for b in range(a + 1, len(chunks)):
                for i, page_a in enumerate(chunks[a]):
                    for j, page_b in enumerate(chunks[b]):
                        if evaluations >= max_evaluations:
                            break
                        if costs[page_a] == costs[page_b] and (page_a in executed) == (
                            page_b in executed
                        ):
                            continue
                        chunks[a][i], chunks[b][j] = page_b, page_a
                        evaluations += 1
                        candidate = score(chunks)
                        if candidate < best_score:
                            best_score, improved = candidate, True
                            page_a = page_b
                        else:
                            chunks[a][i], chunks[b][j] = page_a, page_b
    return [page for chunk in chunks for page in _within_chunk(chunk, executed)]


def _dealt_end(chunks, index, order, costs, nproc) -> float:
    """Roughly when chunk ``index`` would end if its pages were read now: the
    chunks started before it on the same reader, in a greedy replay."""
    free = [(0.0, r) for r in range(min(nproc, len(chunks)))]
    heapq.heapify(free)
    for position in order:
        t, reader = heapq.heappop(free)
        t += sum(costs[p] for p in chunks[position])
        if position == index:
            return t
        heapq.heappush(free, (t, reader))
    return 0.0


def page_costs(app: Sphinx, env, docnames: Sequence[str]) -> tuple[dict[str, float], set[str]]:
    """Each page's estimated cost, and which pages execute (myst-nb's own
    decision, ``_compat.executes_page``, which the build log counts too)."""
    costs, executed = {}, set()
    for docname in docnames:
        executes = _compat.executes_page(app, docname)
        measured = _compat.execution_seconds(env, docname)
        if executes and measured is None:  # a clean build, a new page: estimate
            text = env.doc2path(docname).read_text(encoding="utf8")
            cells, lines = code_lines(text, _compat.page_notebook(app, docname))
        else:  # what was measured is the estimate: no need to read the cells (10 ms)
            cells, lines = int(executes), 0
        costs[docname] = estimate(cells, lines, measured, executes)
        if executes:
            executed.add(docname)
    return costs, executed


def _reorder(app: Sphinx, env, docnames: list[str]) -> None:
    if len(docnames) < 2:
        return
    nproc = app.parallel if parallel_available else 1
    costs, executed = page_costs(app, env, docnames)
    docnames[:] = plan(docnames, costs, executed, nproc)


def setup(app: Sphinx) -> dict:
    # Late: after any handler that adds or removes pages from the list.
    app.connect("env-before-read-docs", _reorder, priority=900)
    _compat.one_chunk_in_the_main_process()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
