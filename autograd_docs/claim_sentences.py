"""The sentences of a page's prose, and how much of each its checks' quotes cover.

One definition for the build (``execution/claims.py`` refuses a quote on a
sentence declared rhetoric or citation; ``html/checked_claims.py`` marks a
partly quoted sentence) and for ``make claims`` (``tools/claims.py``).

Every sentence of prose counts, unless the author declared its block with a
MyST comment line right above a paragraph, list or admonition:

* ``% explanation``: why, history, advice; nothing a check could compare;
* ``% rhetoric``: a hook or a figure of speech ("a result that surprises
  almost everyone");
* ``% citation``: what another text says, in its words.

A counted sentence is checked when quotes of passing checks lie inside it (or
it lies inside one). Each is then one of:

* ``partly checked``: the quotes leave words of the sentence outside, so those
  words could change with the build still green;
* ``proven over a family``: fully quoted by checks that drew a family of cases
  (the family checks' quotes alone cover every word: a clause only an example
  proves keeps the sentence an example);
* ``checked on an example``: fully quoted, every check ran on one instance.
  A sentence that generalises (``GENERALISING``) and is only checked this way
  is reported apart: its check covers less than it says.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# The markers an author declares a block with, and what each means.
MARKERS = ("explanation", "rhetoric", "citation")
# A check may not quote these: they assert nothing a check could prove.
UNQUOTABLE = ("rhetoric", "citation")
# Directives whose body is prose a reader reads (the rest hold code, math or lists of pages).
PROSE_DIRECTIVES = {
    "note",
    "tip",
    "warning",
    "important",
    "caution",
    "attention",
    "danger",
    "error",
    "hint",
    "seealso",
    "admonition",
    "dropdown",
    "exercise",
    "solution",
    "glossary",
    "topic",
    "sidebar",
    "margin",
}
# A sentence ends at . ! ? followed by space and a capital, a backtick, $, {, (, * or ".
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`${(*\"])")
# Words that make a sentence speak for every case, not one.
GENERALISING = re.compile(
    r"\b(?:always|never|whenever|wherever|whatever|any|every|everything|only|all|each"
    r"|no|nothing|saves nothing|does not change|do not change|regardless)\b",
    re.IGNORECASE,
)
# Words a sentence may leave outside its quotes without leaving a fact unchecked.
CONNECTIVES = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "so",
        "then",
        "thus",
        "hence",
        "also",
        "here",
        "there",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "with",
        "by",
        "as",
        "from",
        "into",
        "which",
        "what",
        "when",
        "where",
        "while",
        "we",
        "you",
        "our",
        "your",
    ]
)
WORD = re.compile(r"[A-Za-z0-9_]+")
# A MyST directive's name in a fence's info: `{admonition} Trap: ...` is `admonition`.
DIRECTIVE_NAME = re.compile(r"\{([\w:.-]+)\}")


@dataclass(frozen=True)
class Sentence:
    path: str
    line: int
    text: str  # folded MyST source
    declared: str | None  # one of MARKERS, or None: it counts

    @property
    def generalises(self) -> bool:
        return bool(GENERALISING.search(without_markup(self.text)))


def folded(text: str) -> str:
    return " ".join(text.split())


def without_markup(text: str) -> str:
    """The text with link and role targets blanked (their words are no claim),
    every other character where it was."""
    blank = lambda match: " " * len(match.group())  # noqa: E731
    text = re.sub(r"(?<=\])\([^)]*\)", blank, text)
    return re.sub(r"\{(?:ref|doc|term|numref)\}`[^`]*`", blank, text)


def parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(
        enable_extensions={"colon_fence", "dollarmath", "amsmath", "deflist", "substitution"}
    )
    return create_md_parser(config, RendererHTML)


def sentences(text: str, shown: str, md=None) -> list[Sentence]:
    """Every sentence of the page's prose, with the line it starts at."""
    return _blocks(md or parser(), text, 0, shown, None)


def _blocks(md, text: str, offset: int, shown: str, outer: str | None) -> list[Sentence]:
    found: list[Sentence] = []
    declared_until, declared = -1, None  # tokens up to this index are declared
    tokens = md.parse(text)
    for index, token in enumerate(tokens):
        if token.type == "myst_line_comment":
            words = token.content.split()
            if words and words[0] in MARKERS:
                declared_until, declared = _block_end(tokens, index + 1), words[0]
            continue
        kind = declared if index <= declared_until else outer
        if token.type in ("fence", "colon_fence") and token.map:
            name = DIRECTIVE_NAME.match(token.info.strip())
            if name and name.group(1) in PROSE_DIRECTIVES:
                body, skipped = _directive_body(token.content)
                found += _blocks(md, body, offset + token.map[0] + 1 + skipped, shown, kind)
            continue
        if token.type != "inline" or not token.map or _in_heading(tokens, index):
            continue
        found += _split(token.content, offset + token.map[0] + 1, shown, kind)
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


def _split(content: str, first_line: int, shown: str, kind: str | None) -> list[Sentence]:
    """The sentences of one inline block, each with the line it starts on."""
    found, start = [], 0
    for end in [m.start() for m in SENTENCE_END.finditer(content)] + [len(content)]:
        raw = content[start:end]
        text = folded(raw)
        if text:
            line = first_line + content.count("\n", 0, start + len(raw) - len(raw.lstrip()))
            found.append(Sentence(shown, line, text, kind))
        start = end
    return found


def _pieces(record: dict) -> list[str]:
    """The record's quote cut where the splitter cuts sentences: a quote that runs
    over two sentences covers a part of each, never all of either by itself."""
    return [folded(piece) for piece in SENTENCE_END.split(folded(record["quote"])) if piece.strip()]


def quoting(sentence: Sentence, records: list[dict]) -> list[dict]:
    """The records a piece of whose quote lies inside the sentence, or holds all of
    it where the quote stands (a short sentence, a table's header cell "the fix",
    is not covered by a longer quote that happens to hold its words elsewhere)."""
    return [
        r
        for r in records
        if any(
            piece in sentence.text or (sentence.text in piece and _spans(r, sentence))
            for piece in _pieces(r)
        )
    ]


def _spans(record: dict, sentence: Sentence) -> bool:
    """Whether the quote's place in the prose (once known) holds the sentence's line."""
    start = record.get("sentence_line")
    return start is None or start <= sentence.line <= start + record["quote"].count("\n")


def unquoted_words(sentence: Sentence, records: list[dict]) -> list[str]:
    """The sentence's words that no quote covers and that are more than a connective."""
    text = sentence.text
    covered = [False] * len(text)
    for quote in (piece for record in records for piece in _pieces(record)):
        if text in quote:
            return []
        at = text.find(quote)
        while at >= 0:
            covered[at : at + len(quote)] = [True] * len(quote)
            at = text.find(quote, at + 1)
    left = "".join(" " if covered[i] else c for i, c in enumerate(text))
    return [w for w in WORD.findall(_as_shown(left)) if w.lower() not in CONNECTIVES]


def _as_shown(text: str) -> str:
    """MyST source as a reader reads its words: a role's text without its name or
    target, a link's text without its address, TeX without its commands."""
    text = re.sub(r"\{[\w:.-]+\}`([^`<]*)(?:<[^>]*>)?`", r"\1", text)
    text = re.sub(r"(?<=\])\([^)]*\)", " ", text)
    return re.sub(r"\\[A-Za-z]+", " ", text)


def is_family(record: dict) -> bool:
    """A check that drew a family of cases (older records say it by their check)."""
    return (
        record.get("scope", "family" if record["check"] == "check_property" else "example")
        == "family"
    )


UNCHECKED, PARTLY, EXAMPLE, FAMILY = (
    "unchecked",
    "partly checked",
    "checked on an example",
    "proven over a family",
)
VERDICTS = (FAMILY, EXAMPLE, PARTLY, UNCHECKED)


def verdict(sentence: Sentence, records: list[dict]) -> str:
    """Which of ``VERDICTS`` the page's records give the sentence."""
    mine = quoting(sentence, records)
    if not mine:
        return UNCHECKED
    if unquoted_words(sentence, mine):
        return PARTLY
    family = [r for r in mine if is_family(r)]
    return FAMILY if family and not unquoted_words(sentence, family) else EXAMPLE


GENERAL_ON_EXAMPLE = "generalising, checked on an example only"


def tally(said: list[Sentence], records: list[dict]) -> tuple[Counter, list[tuple]]:
    """A page's counts (the four verdicts, ``GENERAL_ON_EXAMPLE``, and ``% kind``
    for each marker's declared sentences) and its counted (verdict, sentence) rows."""
    counts: Counter = Counter()
    rows = []
    for sentence in said:
        if sentence.declared:
            counts[f"% {sentence.declared}"] += 1
            continue
        given = verdict(sentence, records)
        counts[given] += 1
        if given == EXAMPLE and sentence.generalises:
            counts[GENERAL_ON_EXAMPLE] += 1
        rows.append((given, sentence))
    return counts, rows


def fully_checked(counts: Counter) -> tuple[int, int]:
    """(sentences proven over a family or checked on an example, counted sentences)."""
    return counts[FAMILY] + counts[EXAMPLE], sum(counts[v] for v in VERDICTS)


def section_of(docname: str) -> str:
    return docname.split("/")[0] if "/" in docname else "landing"
