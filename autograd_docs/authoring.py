"""Mistakes in a page's text, each said with what to do.

A dangling ``{ref}``, ``{doc}`` or ``{term}``, a page no toctree reaches, a
``literalinclude`` whose file or marker is gone, a failed doctest and a visible
code line wider than a phone shows are each one ``AuthorError``. After a build that warnings failed, the next build reports them
again until they are fixed (Sphinx forgets warnings of pages it does not re-read).
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude
from sphinx.util import logging

from autograd_docs import _compat
from autograd_docs.diagnostics import AuthorError, report, shown_path

logger = logging.getLogger(__name__)

# Sphinx's orphan-page warning, replaced by NOT_IN_TOCTREE (which says what to do).
REPLACED_WARNINGS = ["toc.not_included"]

DANGLING = {
    "ref": AuthorError.DANGLING_REF,
    "doc": AuthorError.DANGLING_DOC,
    "term": AuthorError.UNKNOWN_TERM,
}


def _replace_warnings(app: Sphinx, config) -> None:
    config.suppress_warnings = [*config.suppress_warnings, *REPLACED_WARNINGS]


def _hint_missing_reference(app: Sphinx, domain, node) -> bool | None:
    """Say how to mend a ``{ref}``, ``{doc}`` or ``{term}`` that points nowhere."""
    kind, target = node.get("reftype"), node.get("reftarget")
    if kind not in DANGLING:
        return None  # Sphinx's own message
    error = DANGLING[kind]
    if kind == "ref" and target in domain.anonlabels:
        error = AuthorError.LABEL_NOT_ON_TITLE
    report(error, node, target=target)
    return True


def _hint_doctest_failures(app: Sphinx, exception) -> None:
    """The doctest report shows Expected and Got; say which one to change."""
    failures = getattr(app.builder, "total_failures", 0) if app.builder else 0
    if app.builder and app.builder.name == "doctest" and failures:
        report(AuthorError.DOCTEST_OUTPUT, failures=failures)


def _forget_failed_build(app: Sphinx, exception) -> None:
    """After a build that warnings failed, read every page again next time.

    Sphinx reports a warning only while it reads or writes the page at fault,
    and it does neither for a page that has not changed since, so a second
    ``make html`` would succeed with the mistake still there. Without the saved
    environment the next build reads every page (outputs stay cached) and
    reports every mistake again until it is fixed.
    """
    if _compat.build_failed_on_warnings(app):
        Path(app.doctreedir, "environment.pickle").unlink(missing_ok=True)


def _check_every_page_is_reachable(app: Sphinx, env) -> None:
    """A page no toctree lists is built but no reader can find it."""
    included = set().union(*env.included.values())
    for docname in sorted(env.all_docs):
        if (
            docname in env.files_to_rebuild
            or docname == app.config.root_doc
            or docname in included
            or "orphan" in env.metadata[docname]
        ):
            continue
        section_index = "/".join([*docname.split("/")[:-1], "index.md"])
        report(
            AuthorError.NOT_IN_TOCTREE,
            docname,
            name=docname.split("/")[-1],
            section_index=section_index,
        )


class CheckedLiteralInclude(LiteralInclude):
    """``literalinclude`` that says which snippet or marker to restore."""

    def run(self) -> list[nodes.Node]:
        relative, path = self.env.relfn2path(self.arguments[0])
        self.env.note_dependency(relative)  # restoring it re-reads this page
        shown = shown_path(path)
        if not os.path.isfile(path):
            report(AuthorError.INCLUDE_FILE_GONE, self.get_location(), path=shown)
            return []
        text = Path(path).read_text(encoding=self.options.get("encoding", "utf8"))
        for option in ("start-after", "start-at", "end-before", "end-at"):
            marker = self.options.get(option)
            if marker and marker not in text:
                report(
                    AuthorError.INCLUDE_MARKER_GONE,
                    self.get_location(),
                    path=shown,
                    marker=marker,
                    option=option,
                )
                return []
        return super().run()


# How many characters of code a 375 px phone shows in one line (12 px code,
# measured in Chromium by tests/browser/test_browser_phone_fit.py): in the text
# column, and inside an admonition or a list item, which are indented.
CODE_COLUMNS = {"column": 44, "admonition or list item": 40}
# Where code is read as the output of a cell, not as code: it wraps (site.css).
WRAPPED_CLASSES = {"cell_output"}


def _display_width(line: str) -> int:
    """Columns a line takes in a monospace font: wide (CJK) characters take two."""
    line = line.rstrip().expandtabs()
    return len(line) + sum(unicodedata.east_asian_width(c) in "WF" for c in line)


def _code_box(node: nodes.Element) -> str | None:
    """Which box ``node`` sits in (a key of ``CODE_COLUMNS``); None: it wraps."""
    box = "column"
    for ancestor in _ancestors(node):
        if isinstance(ancestor, nodes.Element) and WRAPPED_CLASSES & set(ancestor["classes"]):
            return None
        if isinstance(ancestor, (nodes.Admonition, nodes.list_item)):
            box = "admonition or list item"
    return box


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def _source_line(lines: list[str], line: str, near: int | None) -> int | None:
    """The line number (from 1) of ``line`` in the page, at or after ``near``
    (where the block starts, as docutils knows it), else anywhere."""
    starts = [near - 1, 0] if near else [0]
    for start in starts:
        for number in range(max(start, 0), len(lines)):
            if lines[number].rstrip() == line.rstrip():
                return number + 1
    return None


def _check_code_width(app: Sphinx, doctree: nodes.document) -> None:
    """A visible code line wider than a phone's column is cut off on the phone.

    Hidden cells (``remove-cell``, ``remove-input``) are not in the doctree;
    outputs wrap. Each line is reported in the file it is written in (the page,
    or a file it includes). ``autograd_docs_check_code_width = False`` in
    ``conf.py`` lists the lines in the log instead of failing the build."""
    page = app.env.doc2path(app.env.docname)
    files: dict[str, list[str]] = {}
    for block in doctree.findall(
        lambda n: isinstance(n, (nodes.literal_block, nodes.doctest_block))
    ):
        box = _code_box(block)
        if box is None:
            continue
        source = str(block.source if block.source and os.path.isfile(block.source) else page)
        if source not in files:
            files[source] = Path(source).read_text(encoding="utf8").splitlines()
        for line in block.astext().splitlines():
            width = _display_width(line)
            if width <= CODE_COLUMNS[box]:
                continue
            number = _source_line(files[source], line, block.line) or block.line
            location = f"{shown_path(source)}:{number}" if number else shown_path(source)
            if app.config.autograd_docs_check_code_width:
                report(
                    AuthorError.CODE_TOO_WIDE,
                    location,
                    width=width,
                    columns=CODE_COLUMNS[box],
                    where=box,
                )
            else:
                logger.info(
                    "%s: code line %d characters wide, more than a phone's %d "
                    "(autograd_docs_check_code_width is off)",
                    location,
                    width,
                    CODE_COLUMNS[box],
                )


def setup(app: Sphinx) -> dict:
    # On: a code line too wide for a phone fails the build (off: it is logged).
    app.add_config_value("autograd_docs_check_code_width", True, "env", bool)
    app.connect("doctree-read", _check_code_width)
    app.connect("config-inited", _replace_warnings)
    _compat.replace_std_missing_reference_handler(app, _hint_missing_reference)
    app.connect("env-check-consistency", _check_every_page_is_reachable)
    app.add_directive("literalinclude", CheckedLiteralInclude, override=True)
    app.connect("build-finished", _hint_doctest_failures)
    app.connect("build-finished", _forget_failed_build, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
