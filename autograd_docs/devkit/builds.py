"""``make html`` (or another of the Makefile's targets) in a folder, and what it says.

The one runner of a build for the tools, ``make bench`` and the tests: the
Makefile's own command (its strict flags, ``JOBS``, ``O``, ``BUILDDIR``), never
reinstalling the venv or the Node packages, without the calling make's flags,
in a process group of its own (stopped whole on a timeout). The log is stdout and
stderr together, as an author sees them; what it says is read back with
``build_log``'s readers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from autograd_docs.build_log import FROM_CACHE, LogWarning, PageLine, split_problems


@dataclass
class Build:
    returncode: int
    log: str  # stdout and stderr together, as an author sees them
    seconds: float  # wall clock, make's start to its end

    @property
    def pages(self) -> list[PageLine]:
        """The log's line per executed page, in order."""
        return PageLine.parse(self.log)

    @property
    def executed(self) -> int:
        """Pages executed (failed ones too), not taken from the cache."""
        return sum(page.state != FROM_CACHE for page in self.pages)

    @property
    def problems(self) -> list[str]:
        """The list of problems that ends a failed build's log (``path:line: message``)."""
        return split_problems(self.log)[1]

    @property
    def warnings(self) -> list[LogWarning]:
        """Each warning once, as printed where it arose, with its ``AuthorError``."""
        return LogWarning.parse(self.log)

    @property
    def warning_lines(self) -> list[str]:
        """The warning and error lines, as printed where each arose."""
        rest, _ = split_problems(self.log)
        return [line for line in rest.splitlines() if "WARNING" in line or "ERROR" in line]

    def warnings_by_page(self) -> dict[str | None, list[LogWarning]]:
        pages: dict[str | None, list[LogWarning]] = {}
        for warning in self.warnings:
            pages.setdefault(warning.page, []).append(warning)
        return pages


def make(
    folder: Path,
    target: str = "html",
    *variables: str,
    venv: Path | str = ".venv",
    env: dict[str, str | None] | None = None,
    timeout: float | None = None,
) -> Build:
    """``make <target> VENV=<venv> <variables>`` in ``folder`` (variables such as
    ``JOBS=2``, ``O=-E``, ``BUILDDIR=...``); ``env`` sets environment variables
    (None: unset).

    On a timeout the build's whole process group is killed and
    ``subprocess.TimeoutExpired`` raised.
    """
    start = time.perf_counter()
    process = subprocess.Popen(
        make_command(target, venv, *variables),
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in {**make_env(), **(env or {})}.items() if v is not None},
        start_new_session=True,
    )
    try:
        log, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # make and the build under it
        process.wait()
        raise
    return Build(process.returncode, log, time.perf_counter() - start)


def make_command(target: str, venv: Path | str, *variables: str) -> list[str]:
    """The Makefile's ``target`` with the venv at ``venv``, never reinstalling it
    or the Node packages (``-o``: take them as made)."""
    return [
        "make",
        "--no-print-directory",
        "-o",
        f"{venv}/.installed",
        "-o",
        "node_modules/.installed",
        target,
        f"VENV={venv}",
        *variables,
    ]


def make_env() -> dict[str, str]:
    """This environment for a make in another folder, without the calling make's
    flags (``make mutants SEED=1`` would hand SEED=1 and its jobserver down), and
    without colour codes in the log."""
    dropped = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "NO_COLOR": "1"}


def write(path: Path, text: str) -> None:
    """Write a file so that the next build sees it as changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf8")
    if path.stat().st_mtime_ns <= before:  # the same tick on a coarse clock
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))
