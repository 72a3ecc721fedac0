"""Which sentences of the site are claims, and which of them a check proves.

Usage: ``make claims`` (after ``make html``), or
``python tools/claims.py [--doctrees _build/doctrees] [--page docs/x.md] [--unchecked]``.

A checked sentence is one a hidden check quotes (``quote=`` in ``snippets/oracle.py``);
the build recorded every such quote in ``claims.json`` beside the doctrees, with
the line its sentence starts at (``autograd_docs/execution/claims.py``). A claim is
a sentence of prose that states a value or a behaviour: a number, a tensor or a
shape, or a verb such as "raises", "returns", "saves", "equals", or a word such
as "always", "never", "only" (``CLAIM_WORDS``). A paragraph, list or admonition
that the author declared explanation, with a line ``% explanation`` right above
it, is not counted. Headings, code and directives that hold no prose are skipped.

Printed per page: each checked sentence, then each claim no check quotes, as
``path:line: sentence``; then a line per section and last
``claim coverage: N of M (P%)``, N the checked sentences and M the claims
(checked ones included). It exits 0 whatever the coverage: it is a report.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from autograd_docs.execution.claims import read_claims_file  # noqa: E402

DOCS = ROOT / "docs"
EXPLANATION = "explanation"  # the comment `% explanation` above a block
# Directives whose body is prose a reader reads (the rest hold code, math or lists of pages).
PROSE_DIRECTIVES = {"note", "tip", "warning", "important", "caution", "attention", "danger",
                    "error", "hint", "seealso", "admonition", "dropdown", "exercise",
                    "solution", "glossary", "topic", "sidebar", "margin"}
# What PyTorch does (third person: "backward raises", not "compute the Jacobian"),
# and the words that make a sentence general.
CLAIM_WORDS = re.compile(
    r"\b(?:raises|returns|saves|keeps|runs|costs|equals|gives|leaves|prints|holds"
    r"|fails|works|accumulates|computes|calls|frees|stores|records|matches|differs"
    r"|always|never|whenever|only|exactly|twice|once|zero|does not|do not|cannot"
    r"|is (?:not |never |always )?(?:the same|zero|None|diagonal|dense|the identity))\b",
    re.IGNORECASE)
VALUE = re.compile(r"\d|tensor\(|\bNone\b|\bTrue\b|\bFalse\b|\bnan\b|\binf\b")
# A sentence ends at . ! ? followed by space and a capital, a backtick, $ or {.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`${(*\"])")


@dataclass(frozen=True)
class Sentence:
    path: str
    line: int
    text: str  # folded MyST source
    explanation: bool

    @property
    def is_claim(self) -> bool:
        text = without_markup(self.text)
        return bool(CLAIM_WORDS.search(text) or VALUE.search(text))


def without_markup(text: str) -> str:
    """The text with link and role targets blanked (their digits are no value),
    every other character where it was."""
    blank = lambda match: " " * len(match.group())  # noqa: E731
    text = re.sub(r"(?<=\])\([^)]*\)", blank, text)
    return re.sub(r"\{(?:ref|doc|term|numref)\}`[^`]*`", blank, text)


def _parser():
    config = MdParserConfig(enable_extensions={"colon_fence", "dollarmath", "amsmath",
                                               "deflist", "substitution"})
    return create_md_parser(config, RendererHTML)


def sentences(path: Path, parser=None) -> list[Sentence]:
    """Every sentence of the page's prose, with the line it starts at."""
    parser = parser or _parser()
    shown = path.relative_to(ROOT).as_posix()
    return _blocks(parser, path.read_text(encoding="utf8"), 0, shown)


def _blocks(parser, text: str, offset: int, shown: str) -> list[Sentence]:
    found: list[Sentence] = []
    explanation_until = -1  # tokens up to this level-0 block are declared explanation
    tokens = parser.parse(text)
    for index, token in enumerate(tokens):
        if token.type == "myst_line_comment" and token.content.strip().startswith(EXPLANATION):
            explanation_until = _block_end(tokens, index + 1)
            continue
        explained = index <= explanation_until
        if token.type in ("fence", "colon_fence") and token.map:
            name = token.info.strip().strip("{}").split()[0] if token.info.strip() else ""
            if name in PROSE_DIRECTIVES:
                body, skipped = _directive_body(token.content)
                inner = _blocks(parser, body, offset + token.map[0] + 1 + skipped, shown)
                found += [Sentence(s.path, s.line, s.text, s.explanation or explained)
                          for s in inner]
            continue
        if token.type != "inline" or not token.map or _in_heading(tokens, index):
            continue
        found += _split(token.content, offset + token.map[0] + 1, shown, explained)
    return found


def _block_end(tokens, start: int) -> int:
    """The index of the token that closes the block starting at ``start``."""
    depth = 0
    for index in range(start, len(tokens)):
        depth += tokens[index].nesting
        if depth <= 0 and (tokens[index].nesting <= 0):
            return index
    return len(tokens) - 1


def _directive_body(content: str) -> tuple[str, int]:
    """A directive's body without its ``:option:`` lines, and how many lines they took."""
    lines = content.split("\n")
    skipped = 0
    while skipped < len(lines) and lines[skipped].startswith(":"):
        skipped += 1
    return "\n".join(lines[skipped:]), skipped


def _in_heading(tokens, index: int) -> bool:
    return index > 0 and tokens[index - 1].type == "heading_open"


def _split(content: str, first_line: int, shown: str, explained: bool) -> list[Sentence]:
    """The sentences of one inline block, each with the line it starts on."""
    found, start = [], 0
    for end in [m.start() for m in SENTENCE_END.finditer(content)] + [len(content)]:
        raw = content[start:end]
        text = " ".join(raw.split())
        if text:
            line = first_line + content.count("\n", 0, start + len(raw) - len(raw.lstrip()))
            found.append(Sentence(shown, line, text, explained))
        start = end
    return found


def checked(sentence: Sentence, quotes: list[str]) -> bool:
    """A quote covers the sentence if one holds the other, or they overlap by a clause."""
    for quote in quotes:
        if quote in sentence.text or sentence.text in quote:
            return True
        if _overlap(sentence.text, quote) >= 25:
            return True
    return False


def _overlap(a: str, b: str) -> int:
    """The longest start or end of ``b`` that ``a`` holds (a quote across sentences)."""
    for size in range(min(len(a), len(b)), 0, -1):
        if b[:size] in a or b[-size:] in a:
            return size
    return 0


def report(doctrees: Path, pages: list[Path], only_unchecked: bool = False) -> int:
    recorded = read_claims_file(doctrees)
    parser = _parser()
    by_section: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    total = [0, 0]
    for path in pages:
        docname = path.relative_to(DOCS).with_suffix("").as_posix()
        quotes = [" ".join(c["quote"].split()) for c in recorded.get(docname, [])]
        rows = [(s, checked(s, quotes)) for s in sentences(path, parser)]
        rows = [(s, ok) for s, ok in rows if ok or (s.is_claim and not s.explanation)]
        if not rows:
            continue
        proved = sum(ok for _, ok in rows)
        print(f"{rows[0][0].path}: {proved} of {len(rows)} claims checked")
        for s, ok in sorted(rows, key=lambda row: (not row[1], row[0].line)):
            if ok and only_unchecked:
                continue
            print(f"  {'checked  ' if ok else 'unchecked'} {s.path}:{s.line}: {s.text}")
        section = docname.split("/")[0] if "/" in docname else "landing"
        for tally in (by_section[section], total):
            tally[0] += proved
            tally[1] += len(rows)
    print()
    for section, (proved, claims) in sorted(by_section.items()):
        print(f"{section}: {proved} of {claims} ({_percent(proved, claims)})")
    print(f"claim coverage: {total[0]} of {total[1]} ({_percent(*total)})")
    return 0


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doctrees", type=Path, default=ROOT / "_build" / "doctrees")
    parser.add_argument("--page", type=Path, action="append",
                        help="report only this page (repeatable)")
    parser.add_argument("--unchecked", action="store_true",
                        help="list only the claims no check quotes")
    args = parser.parse_args()
    pages = [p.resolve() for p in args.page] if args.page else sorted(
        p for p in DOCS.rglob("*.md") if not p.name.startswith("_"))
    if not (args.doctrees / "claims.json").is_file():
        print(f"no {args.doctrees / 'claims.json'}: run `make html` first", file=sys.stderr)
        return 2
    return report(args.doctrees, pages, args.unchecked)


if __name__ == "__main__":
    sys.exit(main())
