"""Every mistake of an author's that the build catches: one registry.

Each member of ``AuthorError`` is one mistake, with what the build says about it
and what to do. The build emits them as Sphinx warnings of type
``autograd_docs`` and subtype the member's name in lower case (so
``suppress_warnings = ["autograd_docs.cell_raised"]`` would silence one), always
at the file and line of the mistake; ``-W`` makes each a failed build.

Adding a check: add a member here, emit it with ``report``, and add its row to
``tests/test_faults.py`` (which fails until every member has a row).
"""

from __future__ import annotations

import os
from enum import Enum

from sphinx.util import logging

logger = logging.getLogger(__name__)

WARNING_TYPE = "autograd_docs"


class AuthorError(Enum):
    """A mistake: (what the build says, what to do). Fields in braces are filled
    in by ``report``; doubled braces are literal."""

    CELL_RAISED = (
        "cell raised {name}: {value}",
        "fix the cell, or tag it 'raises-exception' if the error is what the page shows",
    )
    CLAIM_FAILED = (
        "{value}",
        "fix the code the claim checks, or the prose it quotes",
    )
    QUOTE_NOT_IN_PROSE = (
        "the check here quotes {quote!r}, which the page's prose no longer says",
        "the sentence it proves was edited: make the check prove the sentence as the "
        "page now says it and quote that, or restore the sentence",
    )
    QUOTE_ON_DECLARED = (
        "the check here quotes {quote!r}, in a sentence declared '% {kind}' (line {line})",
        "a rhetoric or citation sentence asserts nothing a check can prove: quote a "
        "sentence that states what the check compares, or remove the marker if the "
        "sentence is a claim",
    )
    UNKNOWN_CLAIM_COUNT = (
        "{{claim-count}}`{key}`: make claims prints no such count",
        "use coverage, counted, generalising, one of the four verdicts (e.g. 'proven "
        "over a family') or a marker ('% explanation'), optionally after 'section: '",
    )
    CELL_TIMEOUT = (
        "cell did not finish within {timeout} s",
        "make it faster, or give this page more time with "
        "'mystnb: {{execution_timeout: N}}' (seconds) in its front matter",
    )
    STOPPED_RAISING = (
        "cell tagged 'raises-exception' ran without raising",
        "make it raise again, or remove the tag and show the working code instead",
    )
    DANGLING_REF = (
        "{{ref}}`{target}`: no label {target!r}",
        "labels are page file names (the '(label)=' line above each title); fix "
        "the spelling, or link a page that exists",
    )
    LABEL_NOT_ON_TITLE = (
        "{{ref}}`{target}`: label {target!r} is not above a title or caption",
        "give the link a text, {{ref}}`text <{target}>`",
    )
    DANGLING_DOC = (
        "{{doc}}`{target}`: no page {target!r}",
        "give the path of an existing page without '.md', relative to this page "
        "or to docs/ with a leading '/'",
    )
    UNKNOWN_TERM = (
        "{{term}}`{target}`: {target!r} is not in the glossary",
        "add an entry to docs/reference/glossary.md, or use a term it defines",
    )
    NOT_IN_TOCTREE = (
        "no toctree lists this page, so readers cannot reach it",
        "add '{name}' to the toctree in docs/{section_index}",
    )
    INCLUDE_FILE_GONE = (
        "literalinclude: there is no file {path}",
        "restore the snippet, or include one that exists",
    )
    INCLUDE_MARKER_GONE = (
        "literalinclude: {path} has no line with {marker!r} (the :{option}: marker)",
        "put the marker back in the snippet, or change :{option}: here to a marker it has",
    )
    DOCTEST_OUTPUT = (
        "{failures} doctest example(s) printed something other than the page says "
        "(each 'Failed example' above names its page and line)",
        "make the expected output what PyTorch prints under 'Got', or fix the example",
    )
    UNKNOWN_API = (
        "{{py:{role}}}`{target}`: {why}",
        "spell the name as Python imports it from the installed package, and use "
        "the role for what it is: {{py:func}}, {{py:meth}} or {{py:class}}",
    )
    TEX_INVALID = (
        "cannot render equation {tex!r}: {error}",
        "fix the equation's TeX (MathJax's message says what it could not read)",
    )
    TEX_ACROSS_EQUATIONS = (
        "equation {tex!r} would reach other equations ({command}): each is drawn on its own",
        "write the command out in each equation; to number an equation and link to it, "
        "give its math directive a :label: and link to it with the eq role",
    )
    CODE_TOO_WIDE = (
        "visible code line {width} characters wide: a 375 px phone shows {columns} "
        "here ({where}), so the rest is cut off",
        "break the line (a call's arguments one per line, a shorter name, a comment "
        "above instead of beside), or hide the cell with 'remove-cell' or 'remove-input'",
    )
    SEARCH_QUESTIONS_NOT_A_LIST = (
        "front matter search_questions is not a list of strings",
        "write each question on its own line under the key, as '  - \"freeze layers\"'",
    )
    OUTPUT_VARIES = (
        "this cell printed something different when the same source ran twice",
        "seed the randomness it uses (torch.manual_seed(0) in the page's first "
        "cell) or print something that does not vary",
    )

    def __init__(self, says: str, fix: str) -> None:
        self.says = says
        self.fix = fix

    @property
    def subtype(self) -> str:
        return self.name.lower()

    @classmethod
    def from_subtype(cls, subtype: str) -> AuthorError | None:
        """The member whose warnings have ``subtype``, or None (not one of ours)."""
        return cls.__members__.get(subtype.upper())

    def template(self) -> str:
        """What the build says and what to do, each field shown as ``<name>``."""
        fields = _Placeholders()
        return f"{self.says.format_map(fields)}: {self.fix.format_map(fields)}"

    def text(self, **fields) -> str:
        """The one line an author reads: what is wrong, then what to do."""
        return f"{self.says.format(**fields)}: {self.fix.format(**fields)}"


class _Placeholders(dict):
    """Fields for ``str.format`` that name themselves: ``{path}`` shows ``<path>``."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def report(mistake: AuthorError, location=None, /, *, extra: str = "", **fields) -> None:
    """Emit ``mistake`` as a build warning at ``location`` (a node, a docname or a
    ``path:line`` string); ``extra`` follows the message, e.g. where the
    traceback is."""
    logger.warning(
        mistake.text(**fields) + extra,
        location=location,
        type=WARNING_TYPE,
        subtype=mistake.subtype,
    )


def shown_path(path) -> str:
    """A path as an author types it: relative to where the build runs, if inside."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
