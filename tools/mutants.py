"""Mutation testing of the site: would the build notice if an example were wrong?

Usage: ``make mutants`` (``SEED=``, ``MUTANTS=`` per page, ``PAGE=docs/...md``), or
``python tools/mutants.py --seed 0 --per-page 3 [--page docs/how-to/x.md]``.

Each mutant is one small edit (tools/mutant_edits.py) to a visible code cell of
a page (never a hidden check tagged ``remove-cell`` or ``remove-input``, never a
cell tagged ``measured``): a number, an arithmetic or comparison operator, a function
swapped for its sibling (sin/cos, sum/mean, exp/log, ...), a flag flipped. An
edit that does not parse or does not change the code is skipped and another
drawn. Pages run in kernels of their own, so one build carries one mutant on
every page at once, and each failure is put down to its page by the path the
warning names: a run of N per page is a baseline build plus N incremental
builds, all in a scratch copy (autograd_docs/devkit, tools/site_outputs.py)
whose execution cache is seeded from _build, so a page whose mutant is undone comes from the cache.

Each mutant is
  caught             the strict build failed on its page (a claim, a cell that
                     raised, a raises-exception cell that stopped raising);
  survived           the build passed, yet what the page prints changed;
  no visible change  outputs, figures and errors all identical.
Score: caught / (caught + survived). Seeded: the same seed draws the same
mutants, and a page draws the same ones whether or not PAGE= picks it.

Then the prose: each prose mutant is one edit inside a checked sentence (one a
hidden check quotes; the build's claims.json says which), in its words or its
TeX: a number, a sign, a comparison word (at most / at least, always / never,
more / less, <= / <). The check's quote binds the sentence, so every one must be
caught; one that survives is a sentence the page says twice, or a quote that
binds less than its sentence. Prose mutants run in rounds of their own (their
pages come from the cache: nothing re-executes) and are scored on their own.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autograd_docs.code_cells import CodeCell, code_cells
from autograd_docs.devkit.builds import write
from autograd_docs.devkit.executed import MEASURED, executed_pages
from autograd_docs.devkit.scratch_copy import finish
from autograd_docs.execution.claims import read_claims_file

from mutant_edits import Edit, apply, candidate_edits, compiles, line_starts, prose_edits
from site_outputs import (
    as_text,
    build,
    changed_cells,
    copy_repo,
    executed_cells,
    machine_note,
)

HIDDEN = {"remove-cell", "remove-input", MEASURED}


@dataclass
class Mutant:
    page: str
    line: int
    edit: Edit
    old: str  # the replaced text
    code_line: str  # the page's line with the edit made
    outcome: str = ""
    why: str = ""

    def __str__(self) -> str:
        return (f"{self.page}:{self.line}: {self.edit.kind} {self.old!r} -> "
                f"{self.edit.replacement!r}   {self.code_line.strip()}")


def draw_mutants(page: str, text: str, seed: int, count: int) -> tuple[list[Mutant], int]:
    """Up to ``count`` mutants of a page, and how many draws were skipped.

    A kind is drawn first (so numbers, the commonest, do not crowd out the
    rest), then an edit of that kind. An edit whose cell no longer parses, or
    whose cell reads the same, is skipped and another drawn.
    """
    rng = random.Random(f"{seed}:{page}")
    starts = line_starts(text)
    cells = [cell for cell in code_cells(text) if not HIDDEN & set(cell.tags)]
    by_kind: dict[str, list[tuple[CodeCell, Edit]]] = {}
    for cell in cells:
        for edit in candidate_edits(cell, starts[cell.body_line - 1]):
            by_kind.setdefault(edit.kind, []).append((cell, edit))
    mutants, skipped = [], 0
    while len(mutants) < count and by_kind:
        kind = rng.choice(sorted(by_kind))
        cell, edit = by_kind[kind].pop(rng.randrange(len(by_kind[kind])))
        if not by_kind[kind]:
            del by_kind[kind]
        mutated = apply(text, edit)
        start = edit.start - starts[cell.body_line - 1]
        end = edit.end - starts[cell.body_line - 1]
        new_source = cell.source[:start] + edit.replacement + cell.source[end:]
        if new_source == cell.source or not compiles(new_source):
            skipped += 1
            continue
        line = text.count("\n", 0, edit.start) + 1
        line_start = mutated.rfind("\n", 0, edit.start) + 1
        line_end = mutated.find("\n", edit.start)
        mutants.append(Mutant(page, line, edit, text[edit.start:edit.end],
                              mutated[line_start:line_end if line_end >= 0 else None]))
    return mutants, skipped


def draw_prose_mutants(page: str, text: str, claims: list[dict], seed: int,
                       count: int) -> list[Mutant]:
    """Up to ``count`` prose mutants of a page, a kind drawn first, then an edit."""
    rng = random.Random(f"{seed}:prose:{page}")
    by_kind: dict[str, list[Edit]] = {}
    for edit in prose_edits(text, claims):
        by_kind.setdefault(edit.kind, []).append(edit)
    mutants = []
    while len(mutants) < count and by_kind:
        kind = rng.choice(sorted(by_kind))
        edit = by_kind[kind].pop(rng.randrange(len(by_kind[kind])))
        if not by_kind[kind]:
            del by_kind[kind]
        mutated = apply(text, edit)
        line_start = mutated.rfind("\n", 0, edit.start) + 1
        line_end = mutated.find("\n", edit.start)
        mutants.append(Mutant(page, text.count("\n", 0, edit.start) + 1,
                              Edit(f"prose {edit.kind}", edit.start, edit.end,
                                   edit.replacement),
                              text[edit.start:edit.end],
                              mutated[line_start:line_end if line_end >= 0 else None]))
    return mutants


def one_line(cell, width: int = 60) -> str:
    text = " ".join(as_text(cell.outputs).split()) if cell else "(no cell)"
    return repr(text if len(text) <= width else text[:width - 3] + "...")


# -- the run ---------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-page", type=int, default=3, help="mutants per page")
    parser.add_argument("--page", help="only this page (docs/...md)")
    parser.add_argument("--verbose", action="store_true", help="list the caught ones too")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args()
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="autograd-docs-mutants-"))
    print(f"scratch copy: {scratch}  seed {args.seed}, {args.per_page} per page  "
          f"({machine_note()})", flush=True)
    try:
        return run(args, copy_repo(scratch / "site"), started)
    finally:
        finish(scratch, args.keep)


def run(args, repo: Path, started: float) -> int:
    pages = executed_pages(repo)
    if args.page:
        if args.page not in pages:
            sys.exit(f"{args.page} is not an executed page: pick one of\n  "
                     + "\n  ".join(pages))
        pages = [args.page]
    original = {page: (repo / page).read_text(encoding="utf8") for page in pages}
    drawn = {}
    for page in pages:
        drawn[page], skipped = draw_mutants(page, original[page], args.seed, args.per_page)
        if skipped:
            print(f"  {page}: {skipped} edit(s) that did not parse or change the "
                  f"code skipped and redrawn", flush=True)

    baseline = build(repo)
    print(f"baseline: {baseline.seconds:.1f} s, {baseline.executed} page(s) executed",
          flush=True)
    if baseline.returncode or baseline.warnings:
        print(baseline.log[-4000:])
        sys.exit("the unchanged site must build cleanly first: fix that, then run this")
    before = executed_cells(repo)
    # What the unchanged site's checks quote: a code mutant that fails a page
    # stops its later checks, and the claims file would lose their quotes.
    recorded = read_claims_file(repo / "_build" / "doctrees")

    mutants = []
    for round_, batch in rounds(drawn, pages, args.per_page):
        result = build_round(repo, pages, original, batch)
        failures = result.warnings_by_page()
        after = executed_cells(repo)
        for page, mutant in batch.items():
            if page in failures:
                mutant.outcome, mutant.why = "caught", str(failures[page][0])
            elif changed_cells(before, after, {page}):
                old, new = changed_cells(before, after, {page})[0]
                mutant.outcome = "survived"
                mutant.why = (f"the cell at line {(old or new).line} printed "
                              f"{one_line(old)}, now {one_line(new)}")
            else:
                mutant.outcome = "no visible change"
        stray = [str(w) for page, ws in failures.items() if page not in batch for w in ws]
        if result.returncode and not any(page in failures for page in batch):
            stray.append(f"the build failed (exit {result.returncode}) naming no page")
        counts = {o: sum(m.outcome == o for m in batch.values())
                  for o in ("caught", "survived", "no visible change")}
        print(f"round {round_ + 1}: {len(batch)} mutants, {result.seconds:.1f} s, "
              f"{result.executed} page(s) executed: "
              + ", ".join(f"{n} {o}" for o, n in counts.items()), flush=True)
        for line in stray:
            print(f"  warning put down to no mutant: {line}")
        mutants += batch.values()

    prose = run_prose(args, repo, pages, original, recorded)
    return report(mutants, prose, args, time.perf_counter() - started)


def rounds(drawn: dict[str, list[Mutant]], pages: list[str], per_page: int):
    """(round, {page: its mutant}) for each round: one mutant per page that has one left."""
    for round_ in range(per_page):
        batch = {page: drawn[page][round_] for page in pages if len(drawn[page]) > round_}
        if not batch:
            return
        yield round_, batch


def build_round(repo: Path, pages: list[str], original: dict[str, str],
                batch: dict[str, Mutant]):
    """Each page with its mutant of this round, or as it was; then the strict build."""
    for page in pages:
        text = (original[page] if page not in batch
                else apply(original[page], batch[page].edit))
        if text != (repo / page).read_text(encoding="utf8"):
            write(repo / page, text)
    return build(repo)


def run_prose(args, repo: Path, pages: list[str], original: dict[str, str],
              recorded: dict[str, list[dict]]) -> list[Mutant]:
    """Rounds of prose mutants: a change inside a checked sentence must fail its page."""
    drawn = {page: draw_prose_mutants(
        page, original[page], recorded.get(str(Path(page).relative_to("docs").with_suffix("")),
                                           []), args.seed, args.per_page) for page in pages}
    mutants = []
    for round_, batch in rounds(drawn, pages, args.per_page):
        failures = build_round(repo, pages, original, batch).warnings_by_page()
        for page, mutant in batch.items():
            caught = page in failures
            mutant.outcome = "caught" if caught else "survived"
            mutant.why = str(failures[page][0]) if caught else "the build passed"
        print(f"prose round {round_ + 1}: {len(batch)} mutants: "
              f"{sum(m.outcome == 'caught' for m in batch.values())} caught", flush=True)
        mutants += batch.values()
    for page in pages:
        write(repo / page, original[page])
    return mutants


def report(mutants: list[Mutant], prose: list[Mutant], args, seconds: float) -> int:
    for label, chosen_mutants in (("code", mutants), ("prose", prose)):
        list_outcomes(label, chosen_mutants, args)
    for label, chosen_mutants in (("code", mutants), ("prose", prose)):
        print(score_line(label, chosen_mutants, args))
    print(f"{seconds:.0f} s in all ({machine_note()})")
    return 0


def list_outcomes(label: str, mutants: list[Mutant], args) -> None:
    ordered = sorted(mutants, key=lambda m: (m.page, m.line))
    for outcome in ("caught", "no visible change", "survived"):
        chosen = [m for m in ordered if m.outcome == outcome]
        if label == "prose" and outcome == "no visible change":
            continue  # a change to prose is always visible
        print(f"\n{label}, {outcome} ({len(chosen)}):")
        if outcome == "caught" and not args.verbose:
            print("  (--verbose lists them, with the warning that caught each)")
            continue
        for mutant in chosen:
            print(f"  {mutant}")
            if mutant.why:
                print(f"      {mutant.why[:160]}")


def score_line(label: str, mutants: list[Mutant], args) -> str:
    caught = sum(m.outcome == "caught" for m in mutants)
    survived = sum(m.outcome == "survived" for m in mutants)
    score = f"{caught / (caught + survived):.2f}" if caught + survived else "n/a"
    return (f"{label} score (seed {args.seed}, {args.per_page} per page"
            f"{', ' + args.page if args.page else ''}): caught / (caught + survived) = "
            f"{caught} / {caught + survived} = {score}; "
            f"{len(mutants) - caught - survived} with no visible change")


if __name__ == "__main__":
    sys.exit(main())
