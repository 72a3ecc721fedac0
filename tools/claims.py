"""Which sentences of the site its checks prove, and how far.

Usage: ``make claims`` (after ``make html``), or
``python tools/claims.py [--doctrees _build/doctrees] [--page docs/x.md] [--unchecked]``.

A check quotes the sentence it proves (``quote=`` in ``snippets/oracle.py``); the
build recorded every passing check in ``claims.json`` beside the doctrees, with
what it compared and over what (``autograd_docs/execution/claims.py``). Every
sentence of prose counts, unless a ``% explanation``, ``% rhetoric`` or
``% citation`` line above its block declares it; each counted sentence is
proven over a family, checked on an example, partly checked or unchecked
(``autograd_docs/claim_sentences.py`` says when). Headings and code never count.

Printed per page: a line with the page's four counts, each sentence that is not
fully checked as ``  <verdict> path:line: sentence`` (all of them without
``--unchecked``; a generalising sentence checked on an example only is listed as
such either way), and the page's declared sentences per marker. Then per section
and in total the four counts, the generalising sentences checked on an example
only, the declared sentences per marker, and last
``claim coverage: N of M (P%)``, N the sentences proven over a family or checked
on an example, M the counted sentences. It exits 0 whatever the coverage: it is
a report.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from autograd_docs import claim_sentences as cs  # noqa: E402
from autograd_docs.execution.claims import read_claims_file  # noqa: E402

DOCS = ROOT / "docs"


def sentences(path: Path, md=None) -> list[cs.Sentence]:
    """Every sentence of the page's prose, with the line it starts at."""
    return cs.sentences(path.read_text(encoding="utf8"),
                        path.relative_to(ROOT).as_posix(), md)


def four_way(tally: Counter) -> str:
    fully, counted = cs.fully_checked(tally)
    split = " / ".join(f"{tally[v]} {v}" for v in cs.VERDICTS)
    return (f"{split} ({_percent(fully, counted)} of {counted} fully checked; "
            f"{tally[cs.GENERAL_ON_EXAMPLE]} {cs.GENERAL_ON_EXAMPLE})")


def declared(tally: Counter) -> str:
    return ", ".join(f"{tally['% ' + m]} % {m}" for m in cs.MARKERS)


def report(doctrees: Path, pages: list[Path], only_unchecked: bool = False) -> int:
    recorded = read_claims_file(doctrees)
    md = cs.parser()
    by_section: dict[str, Counter] = {}
    total = Counter()
    for path in pages:
        docname = path.relative_to(DOCS).with_suffix("").as_posix()
        tally, rows = cs.tally(sentences(path, md), recorded.get(docname, []))
        if not +tally:
            continue
        print(f"{path.relative_to(ROOT).as_posix()}: {four_way(tally)}")
        for said, s in sorted(rows, key=lambda row: (cs.VERDICTS.index(row[0]), row[1].line)):
            if said == cs.EXAMPLE and s.generalises:
                said = cs.GENERAL_ON_EXAMPLE  # needs a family: listed with --unchecked
            elif only_unchecked and said in (cs.FAMILY, cs.EXAMPLE):
                continue
            print(f"  {said}: {s.path}:{s.line}: {s.text}")
        print(f"  declared: {declared(tally)}")
        by_section.setdefault(cs.section_of(docname), Counter()).update(tally)
        total.update(tally)
    print()
    for section, tally in sorted(by_section.items()):
        print(f"{section}: {four_way(tally)}; declared {declared(tally)}")
    print(f"total: {four_way(total)}; declared {declared(total)}")
    fully, counted = cs.fully_checked(total)
    print(f"claim coverage: {fully} of {counted} ({_percent(fully, counted)})")
    return 0


def page_path(page: str) -> Path:
    """The page ``--page`` names: a path (from here or absolute) or a docname, with
    or without ``.md``; a ValueError saying what it expected for anything else."""
    given = Path(page)
    named = given if given.suffix == ".md" else given.with_name(given.name + ".md")
    for candidate in (Path.cwd() / named, DOCS / named):
        path = candidate.resolve()
        if path.is_file() and DOCS in path.parents:
            return path
    raise ValueError(f"--page {page}: no page of docs/ has that path or docname; give a "
                     f"page's path (docs/how-to/stop-gradients.md) or its docname "
                     f"(how-to/stop-gradients)")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doctrees", type=Path, default=ROOT / "_build" / "doctrees")
    parser.add_argument("--page", action="append",
                        help="report only this page, by its path (docs/how-to/x.md) or "
                             "its docname (how-to/x); repeatable")
    parser.add_argument("--unchecked", action="store_true",
                        help="list only the sentences not fully checked")
    args = parser.parse_args()
    try:
        pages = [page_path(p) for p in args.page] if args.page else sorted(
            p for p in DOCS.rglob("*.md") if not p.name.startswith("_"))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    if not (args.doctrees / "claims.json").is_file():
        print(f"no {args.doctrees / 'claims.json'}: run `make html` first", file=sys.stderr)
        return 2
    return report(args.doctrees, pages, args.unchecked)


if __name__ == "__main__":
    sys.exit(main())
