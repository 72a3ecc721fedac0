"""Mistakes in a page's text, each said with what to do.

A dangling ``{ref}``, ``{doc}`` or ``{term}``, a page no toctree reaches, a
``literalinclude`` whose file or marker is gone and a failed doctest are each one
``AuthorError``. After a build that warnings failed, the next build reports them
again until they are fixed (Sphinx forgets warnings of pages it does not re-read).
"""

from __future__ import annotations

import os
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude

from autograd_docs import _compat
from autograd_docs.diagnostics import AuthorError, report, shown_path

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


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _replace_warnings)
    _compat.replace_std_missing_reference_handler(app, _hint_missing_reference)
    app.connect("env-check-consistency", _check_every_page_is_reachable)
    app.add_directive("literalinclude", CheckedLiteralInclude, override=True)
    app.connect("build-finished", _hint_doctest_failures)
    app.connect("build-finished", _forget_failed_build, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
