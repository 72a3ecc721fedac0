"""Checked sentences: a hidden check that quotes its page is held to the quote.

A passing ``oracle.check_*(..., quote=...)`` publishes a record
(``claim_record.MIMETYPE``). After a page ran, or came from the cache with
prose that may have changed since, ``take`` removes the records from the
notebook (readers and downloads never see them), looks each quote up in the
page's prose and reports a quote the prose no longer says at the check's line
(``AuthorError.QUOTE_NOT_IN_PROSE``): a checked sentence cannot be edited without
its check being revisited. A quote on a sentence the author declared rhetoric or
citation (``claim_sentences.UNQUOTABLE``) is refused too
(``AuthorError.QUOTE_ON_DECLARED``): such a sentence asserts nothing to prove. The quotes found are kept in the environment, each
with the line its sentence starts at, for the page (``html/checked_claims.py``)
and for ``make claims`` (``claims.json`` beside the doctrees).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx

from autograd_docs import build_state, claim_sentences
from autograd_docs.claim_record import MIMETYPE
from autograd_docs.diagnostics import AuthorError, report, shown_path

# Written beside the doctrees at the end of every build: {docname: [claim, ...]}.
CLAIMS_FILE = "claims.json"

WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class _Prose:
    """One Markdown cell's text with its whitespace folded, and the way back to lines."""

    folded: str
    raw: str
    raw_offset: list[int]  # folded index -> index in raw
    first_line: int  # the cell's first line in the page's file

    @classmethod
    def of(cls, raw: str, first_line: int) -> _Prose:
        folded: list[str] = []
        offsets: list[int] = []
        for word in WORD.finditer(raw):
            if folded:
                folded.append(" ")
                offsets.append(word.start())
            folded.append(word.group())
            offsets.extend(range(word.start(), word.end()))
        return cls("".join(folded), raw, offsets, first_line)

    def line_of(self, quote: str) -> int | None:
        """The file line the quote starts at, or None if this cell does not say it."""
        at = self.folded.find(" ".join(quote.split()))
        if at < 0:
            return None
        return self.first_line + self.raw[: self.raw_offset[at]].count("\n")


def take(app: Sphinx, client) -> None:
    """Take the claim records out of an executed page, check their quotes, keep them."""
    notebook = client.notebook
    source_map = notebook.metadata.get("source_map", [])
    path = shown_path(client.path)
    file_text = Path(client.path).read_text(encoding="utf8")
    file_lines = file_text.splitlines()
    prose = [
        _Prose.of(cell.source, _first_line(file_text, cell.source, source_map, i))
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "markdown"
    ]
    unquotable = [
        s
        for s in claim_sentences.sentences(file_text, path, _md())
        if s.declared in claim_sentences.UNQUOTABLE
    ]
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        records = [
            out["data"][MIMETYPE]
            for out in cell.get("outputs", [])
            if MIMETYPE in out.get("data", {})
        ]
        if not records:
            continue
        cell["outputs"] = [out for out in cell.outputs if MIMETYPE not in out.get("data", {})]
        first = _first_code_line(file_lines, source_map, index, cell.source)
        for record in records:
            check_line = first + record["line"] - 1
            sentence_line = next(
                (line for cell_prose in prose if (line := cell_prose.line_of(record["quote"]))),
                None,
            )
            if sentence_line is None:
                report(
                    AuthorError.QUOTE_NOT_IN_PROSE,
                    f"{path}:{check_line}",
                    quote=" ".join(record["quote"].split()),
                )
                continue
            declared = next((s for s in unquotable if claim_sentences.quoting(s, [record])), None)
            if declared is not None:
                report(
                    AuthorError.QUOTE_ON_DECLARED,
                    f"{path}:{check_line}",
                    quote=" ".join(record["quote"].split()),
                    kind=declared.declared,
                    line=declared.line,
                )
                continue
            found.append({**record, "check_line": check_line, "sentence_line": sentence_line})
    build_state.of(app).claims_taken[str(client.path)] = found


@functools.cache
def _md():
    """One MyST parser per process, for every page's sentences."""
    return claim_sentences.parser()


def _first_line(file_text: str, source: str, source_map: list[int], index: int) -> int:
    """The file line a Markdown cell's text starts at (myst-nb's map gives where
    the cell starts, blank lines included)."""
    after = file_text.find(source)
    if after >= 0:
        return file_text.count("\n", 0, after) + 1
    return source_map[index] if index < len(source_map) else 1


def _first_code_line(file_lines: list[str], source_map: list[int], index: int, source: str) -> int:
    """The file line of a code cell's first line of code: after its fence and options."""
    fence = source_map[index] if index < len(source_map) else 1
    first = source.split("\n", 1)[0]
    for number in range(fence + 1, min(fence + 40, len(file_lines)) + 1):
        if file_lines[number - 1] == first:
            return number
    return fence + 1


def _file_in_env(app: Sphinx, doctree) -> None:
    docname = app.env.docname
    claims = build_state.of(app).claims_taken.pop(str(app.env.doc2path(docname)), None)
    if claims is not None:
        _claims(app.env)[docname] = claims


def _claims(env) -> dict[str, list[dict]]:
    if not hasattr(env, "autograd_docs_claims"):
        env.autograd_docs_claims = {}
    return env.autograd_docs_claims


def claims_of(env, docname: str) -> list[dict]:
    """The claims the page's checks proved, in the order they ran."""
    return _claims(env).get(docname, [])


def _purge(app: Sphinx, env, docname: str) -> None:
    _claims(env).pop(docname, None)


def _merge(app: Sphinx, env, docnames, other) -> None:
    for docname in docnames:
        if docname in _claims(other):
            _claims(env)[docname] = _claims(other)[docname]


def _write_claims_file(app: Sphinx, exception) -> None:
    if exception is not None:
        return
    claims = {
        docname: records
        for docname, records in sorted(_claims(app.env).items())
        if docname in app.env.found_docs
    }
    path = Path(app.doctreedir) / CLAIMS_FILE
    path.write_text(json.dumps(claims, indent=1, ensure_ascii=False) + "\n", encoding="utf8")


def read_claims_file(doctreedir: Path) -> dict[str, list[dict]]:
    """What the last build's checks proved, page by page (for tools and tests)."""
    return json.loads((Path(doctreedir) / CLAIMS_FILE).read_text(encoding="utf8"))


def connect(app: Sphinx) -> None:
    app.connect("doctree-read", _file_in_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _write_claims_file)
