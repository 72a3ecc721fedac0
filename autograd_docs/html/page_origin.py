"""What every page says about where it came from, at its foot and in its header.

- The torch its outputs were made with (executed pages), and the date its source
  last changed, from git: furo's "Last updated on" line, reading
  "2026-11-30 · outputs made with torch 2.13.0". A page whose date moves (a
  commit) is read again, so an incremental build writes what a clean one does.
- Links to edit the page and to view its source on GitHub, when the repository's
  address is known (``repository.of``, the one place it is read); without one,
  furo's button shows the copy of the source the site ships, and the build says
  once that there are no links.

A copy of the site that is no git checkout gets no dates, and the build says so
in one line.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging

from autograd_docs import build_state
from autograd_docs.html import repository

logger = sphinx_logging.getLogger(__name__)
DATES = "autograd_docs_changed_on"  # env attribute: docname -> YYYY-MM-DD


def changed_on(srcdir: Path) -> dict[str, str] | None:
    """docname -> the date (YYYY-MM-DD) of the last commit that touched its source,
    for every committed file under ``srcdir``; None when ``srcdir`` is not in git."""
    try:
        log = subprocess.run(
            ["git", "log", "--format=%x00%cs", "--name-only", "--relative", "--", "."],
            cwd=srcdir,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dates: dict[str, str] = {}
    date = ""
    for line in log.splitlines():
        if line.startswith("\0"):
            date = line[1:]
        elif line and "." in line:
            docname = line.rsplit(".", 1)[0]
            dates.setdefault(docname, date)  # newest first: the first date is the last change
    return dates


def _read_dates(app: Sphinx) -> None:
    # Read (and said) when the builder starts: a line logged later would land
    # inside Sphinx's unfinished "updating environment: " status line.
    dates = changed_on(Path(app.srcdir))
    if dates is None:
        logger.info("the site is not in a git checkout: pages get no last-changed date")
    build_state.of(app).dates = dates or {}


def _reread_pages_whose_date_moved(app: Sphinx, env, added, changed, removed) -> list[str]:
    dates = build_state.of(app).dates
    before = getattr(env, DATES, None)
    setattr(env, DATES, dates)
    if before is None:
        return []
    return sorted(
        doc
        for doc in env.found_docs - set(added) - set(changed)
        if before.get(doc) != dates.get(doc)
    )


def _add_to_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None:
        return
    facts = []
    if date := getattr(app.env, DATES, {}).get(pagename):
        facts.append(date)
    if "notebook_download" in context:  # an executed page (html/notebooks.py)
        facts.append(f"outputs made with torch {importlib.metadata.version('torch')}")
    if facts:
        context["last_updated"] = " · ".join(facts)
    if found := repository.of(app):
        context["theme_source_repository"] = f"https://github.com/{found.name}/"
        context["theme_source_branch"] = found.branch or "HEAD"  # HEAD: the default branch
        context["theme_source_directory"] = (
            Path(app.srcdir).resolve().relative_to(Path(app.confdir).resolve()).as_posix() + "/"
        )


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _read_dates)
    app.connect("env-get-outdated", _reread_pages_whose_date_moved)
    # After html/notebooks.py's handler, which marks the executed pages.
    app.connect("html-page-context", _add_to_page, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
