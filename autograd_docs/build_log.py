"""The build log: one line per executed page, the problems together at the end.

While pages are read, each page that executes or comes from the execution cache
gets one line, printed as it finishes, by whichever reader process ran it::

    [ 3/31] executed     1.22 s  docs/how-to/check-gradients.md
    [ 4/31] from cache   0.04 s  docs/index.md

The count is of pages done out of pages to do: the pages being read that myst-nb
executes or takes from the cache (``_compat.executes_page``). It lives in shared
memory made before parallel readers fork, so it counts across them. A page whose
execution failed says ``failed`` (its problem is listed at the end). At the end
of a build with problems, every warning and error shown is listed again,
together, each as ``path:line: message``, under a line ``N problem(s):``.

The log names no absolute path: warning locations (Sphinx gives each page's
absolute path) and messages say paths relative to where the build runs, and
myst-nb's per-page lines, the configuration dumps of myst and myst-nb and
Sphinx's "Writing evaluated template result to" are dropped (``_compat``).

``PageLine.parse``, ``LogWarning.parse`` and ``problems`` read a log back:
tests and tools (``make bench``, ``make mutants``, ``make upgrade-check``) use
them, never a regex of their own. A warning's ``AuthorError`` is read from the
type Sphinx prints after it (``[autograd_docs.claim_failed]``), never from its words.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging

from autograd_docs import _compat, build_state
from autograd_docs.build_state import Progress
from autograd_docs.diagnostics import WARNING_TYPE, AuthorError, shown_path

EXECUTED, FROM_CACHE, FAILED = "executed", "from cache", "failed"
STATES = (EXECUTED, FROM_CACHE, FAILED)

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PAGE_LINE = re.compile(
    rf"^\[\s*(?P<done>\d+)/(?P<total>\d+)\] (?P<state>{'|'.join(STATES)})"
    r"\s+(?P<seconds>\d+\.\d+) s  (?P<path>\S.*)$"
)
# An entry of the list of problems, perhaps located at a page ("docs/x.md:12: ...").
_LOCATED = re.compile(
    r"^(?:\S*/)?(?P<page>docs/[^:\s]+\.md)(?::(?P<line>\d+))?: (?P<rest>.*)", re.S
)
# What Sphinx prints after a warning of ours (its ``show_warning_types``).
_WARNING_SUBTYPE = re.compile(rf" \[{WARNING_TYPE}\.(?P<subtype>\w+)\]\Z")
_PROBLEMS_HEADING = re.compile(r"^(?P<count>\d+) problems?:$")
PROBLEM_INDENT = "  "


# -- reading a log back ----------------------------------------------------------------


@dataclass(frozen=True)
class PageLine:
    """One executed page's line: ``[done/total] state  seconds s  path``."""

    done: int
    total: int
    path: str  # relative to where the build ran, e.g. docs/index.md
    seconds: float  # executed: kernel start to shutdown; from cache: the look-up
    state: str  # one of STATES

    def __str__(self) -> str:
        return format_page_line(self.done, self.total, self.path, self.seconds, self.state)

    @classmethod
    def parse(cls, log: str) -> list[PageLine]:
        """Every page line in ``log``, in the order printed."""
        found = []
        for line in ANSI_ESCAPE.sub("", log).splitlines():
            match = _PAGE_LINE.match(line.strip())
            if match:
                found.append(
                    cls(
                        int(match["done"]),
                        int(match["total"]),
                        match["path"],
                        float(match["seconds"]),
                        match["state"],
                    )
                )
        return found


@dataclass(frozen=True)
class LogWarning:
    """One warning or error of a build, from the list of problems at its end."""

    page: str | None  # docs/...md, or None when the warning names no page
    line: int | None
    message: str  # its first line, as printed (a one-line warning's type included)
    error: AuthorError | None  # the mistake, when the build's own checks found it

    def __str__(self) -> str:
        where = f"{self.page}:{self.line}" if self.line else (self.page or "(no page)")
        return f"{where}: {self.message}"

    @classmethod
    def parse(cls, log: str) -> list[LogWarning]:
        """Every warning and error in ``log``, once each, in the order shown."""
        found = []
        for entry in problems(log):
            page, line, message = None, None, entry
            located = _LOCATED.match(entry)
            if located:
                page, message = located["page"], located["rest"]
                line = int(located["line"]) if located["line"] else None
            subtype = _WARNING_SUBTYPE.search(message)  # after the last of its lines
            error = AuthorError.from_subtype(subtype["subtype"]) if subtype else None
            found.append(cls(page, line, message.split("\n", 1)[0], error))
        return found


def format_page_line(done: int, total: int, path: str, seconds: float, state: str) -> str:
    width = max(map(len, STATES))
    return f"[{done:>{len(str(total))}}/{total}] {state:<{width}} {seconds:6.2f} s  {path}"


def split_problems(log: str) -> tuple[str, list[str]]:
    """``log`` less the end-of-build list of problems, and that list's entries
    (``path:line: message``, or a message alone), without their indent.

    What follows the list is kept: a log of stdout then stderr (as tools capture
    them) has the warnings, printed to stderr, after it."""
    lines = ANSI_ESCAPE.sub("", log).splitlines(keepends=True)
    for start, line in enumerate(lines):
        if _PROBLEMS_HEADING.match(line.strip()):
            entries: list[str] = []
            end = start + 1
            for entry in lines[start + 1 :]:
                if entry.startswith(PROBLEM_INDENT * 2) and entries:
                    entries[-1] += "\n" + entry[len(PROBLEM_INDENT) * 2 :].rstrip("\n")
                elif entry.startswith(PROBLEM_INDENT):
                    entries.append(entry[len(PROBLEM_INDENT) :].rstrip("\n"))
                else:
                    break
                end += 1
            return "".join(lines[:start] + lines[end:]), entries
    return "".join(lines), []


def problems(log: str) -> list[str]:
    """The entries of the end-of-build list of problems in ``log``."""
    return split_problems(log)[1]


# -- writing it ------------------------------------------------------------------------


def _count_pages_to_do(app: Sphinx, env, docnames: list[str]) -> None:
    total = sum(_compat.executes_page(app, docname) for docname in docnames)
    build_state.of(app).progress = Progress(total, _compat.status_line_is_rewritten(app))


def page_done(app: Sphinx, source, seconds: float, state: str) -> None:
    """Print the line of a page that executed (or failed) or came from the cache,
    from the process that read it; called by ``execution``."""
    built = build_state.of(app)
    progress = built.progress
    if progress is None:
        return
    with progress.done.get_lock():  # one count and one line at a time, across readers
        progress.done.value += 1
        line = format_page_line(
            progress.done.value, progress.total, shown_path(source), seconds, state
        )
        # Straight to the status stream: a parallel reader's log records reach it
        # only when its whole chunk is done.
        record = logging.LogRecord(
            __name__, logging.INFO, __file__, 0, progress.erase + line, None, None
        )
        if state == FAILED:
            record.color = "red"
        built.status_handler.handle(record)


class _Relative(logging.Filter):
    """Paths in a record relative to where the build runs, not absolute."""

    def __init__(self) -> None:
        super().__init__()
        self.root = os.getcwd() + os.sep

    def filter(self, record: logging.LogRecord) -> bool:
        location = getattr(record, "location", None)
        if isinstance(location, str) and location.startswith(self.root):
            record.location = location[len(self.root) :]
        message = _message(record)
        if self.root in message:
            record.msg, record.args = message.replace(self.root, ""), ()
        return True


def _message(record: logging.LogRecord) -> str:
    """The record's message, without the location Sphinx's records put first."""
    try:
        return logging.LogRecord.getMessage(record)
    except (TypeError, ValueError):  # arguments that do not fit: shown as logged
        return str(record.msg)


class _Quiet(logging.Filter):
    """Drop the lines this log replaces or has no use for."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            _compat.is_myst_config_dump(record)
            or _compat.is_mystnb_noise(record)
            or _compat.is_sphinx_noise(record)
        )


class _Collect(logging.Filter):
    """Keep every warning and error shown in ``problems``, for the list at the end."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__()
        self.problems = problems

    def filter(self, record: logging.LogRecord) -> bool:
        message = _message(record)
        location = getattr(record, "location", None)
        self.problems.append(f"{location}: {message}" if location else message)
        return True


def _install_filters(app: Sphinx) -> None:
    built = build_state.of(app)
    built.status_handler, warning_handler = _compat.log_handlers()
    built.status_handler.addFilter(_Quiet())
    built.status_handler.addFilter(_Relative())
    warning_handler.addFilter(_Relative())
    warning_handler.addFilter(_Collect(built.problems))  # last: sees the record as it is shown


def _list_problems(app: Sphinx, exception) -> None:
    problems = build_state.of(app).problems
    if not problems:
        return
    logger = sphinx_logging.getLogger(__name__)
    count = len(problems)
    logger.info("")
    logger.info(f"{count} problem{'s' if count > 1 else ''}:", color="red")
    for problem in problems:
        first, *rest = problem.splitlines() or [""]
        logger.info(PROBLEM_INDENT + first)
        for line in rest:
            logger.info(PROBLEM_INDENT * 2 + line)


def setup(app: Sphinx) -> dict:
    _install_filters(app)
    # Late: after other handlers have changed the list of pages to read.
    app.connect("env-before-read-docs", _count_pages_to_do, priority=900)
    # Last: after every other handler that may warn at the end (doctest's hint).
    app.connect("build-finished", _list_problems, priority=1000)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
