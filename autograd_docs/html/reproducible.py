"""The same bytes whichever way the site was built: clean, again, or after edits.

Two builds of one commit write the same files, and so does ``make html`` after
any sequence of edits and reverts (``tests/test_reproducible.py`` checks both).
Sphinx writes again only the pages it re-read and their toctree parents, and
removes nothing; this part mends what that leaves different from a clean build:

- **Stylesheets in place early.** Sphinx adds ``?v=<checksum>`` to a
  stylesheet's link only if the file exists when a page is written. myst-nb
  copies its stylesheet when the build finishes, so pages of a clean build
  would link it without the checksum every later build adds. (The equations'
  stylesheet gets the same treatment in ``svg_math``.)
- **Every page written again when what pages show of each other changed**: the
  navigation (toctrees, every page's title: the sidebar, previous and next) and
  the targets references resolve to (labels with their section titles, glossary
  terms). Sphinx would write only the page that changed.
- **Every page written again when the engine changed**: what a page's HTML holds
  may depend on any part of it.
- **Every page written again when a static file changed**: each page links the
  site's stylesheets and scripts as ``site.css?v=<checksum>``, and Sphinx would
  keep the old checksum in every page it does not write.
- **Nothing left behind**: a removed page's files (its HTML, source copy,
  notebooks, traceback report, numbered source), a traceback report once its page
  is read again, figures no page shows any more, the numbered source of a page no
  check quotes any more, and Sphinx's ``.buildinfo.bak``.
- **The search index whole**: ``_compat.complete_incremental_search_index``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, cast

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util.matching import Matcher

from autograd_docs import _compat
from autograd_docs.execution import cache_key, claims
from autograd_docs.html import checked_claims

if TYPE_CHECKING:
    from sphinx.builders.html import StandaloneHTMLBuilder

# An "html" config value: what the static files hold (their links carry checksums).
STATIC_FILES = "autograd_docs_static_files"
# Saved with the environment: what pages showed of each other when it was read.
SHOWN_OF_EACH_OTHER = "autograd_docs_shown_of_each_other"


def _copy_mystnb_css_first(app: Sphinx) -> None:
    if app.builder.format == "html":
        Path(app.outdir, "_static").mkdir(parents=True, exist_ok=True)
        _compat.add_mystnb_stylesheet(app)


def _shown_of_each_other(env) -> str:
    """A digest of what a page shows of the others: their titles in its sidebar
    and previous/next links, and the text of references to their labels and
    glossary terms."""
    std = env.get_domain("std")
    shown = [
        sorted(env.found_docs),
        sorted((docname, title.astext()) for docname, title in env.titles.items()),
        sorted(env.toctree_includes.items()),
        # The toctrees themselves: captions, hidden and numbered entries.
        [env.tocs[docname].pformat() for docname in sorted(env.toctree_includes)],
        sorted(std.labels.items()),
        sorted(std.anonlabels.items()),
        sorted(std.objects.items()),
    ]
    return cache_key.digest([repr(shown)])


def _pages_that_show_others(app: Sphinx, env) -> list[str]:
    if app.builder.format != "html":
        return []
    before = getattr(env, SHOWN_OF_EACH_OTHER, None)
    now = _shown_of_each_other(env)
    setattr(env, SHOWN_OF_EACH_OTHER, now)
    return sorted(env.found_docs) if now != before else []


def _remove_old_report(app: Sphinx, env, docname: str) -> None:
    """A page is read again: its traceback report goes (reading writes it again
    if a cell still fails)."""
    if app.builder.format == "html":
        _remove(Path(app.outdir), [_report(app, docname)])


def _report(app: Sphinx, docname: str) -> Path:
    return Path(app.outdir, "reports", f"{docname}.err.log")  # myst-nb writes it


def _remove_what_no_page_uses(app: Sphinx, exception: Exception | None) -> None:
    """The files of pages removed from the project, figures no page shows any
    more (a cell's old output, a removed page's) in ``_images`` and where myst-nb
    wrote them, and ``.buildinfo.bak``, which Sphinx leaves when an option that
    changes every page's HTML has changed."""
    if exception is not None or app.builder.format != "html":
        return
    builder = cast("StandaloneHTMLBuilder", app.builder)  # the "html" format's builders
    env, outdir = app.env, Path(app.outdir)
    executed = outdir.parent / _compat.OUTPUT_FOLDER
    # Every page read into this build folder left its doctree, and Sphinx keeps
    # it: also after a failed build, whose environment is gone (authoring.py).
    doctrees = Path(app.doctreedir)
    unused = []
    for doctree in doctrees.rglob("*.doctree"):
        docname = doctree.relative_to(doctrees).with_suffix("").as_posix()
        if docname not in env.found_docs:
            unused += [
                doctree,
                Path(builder.get_output_path(docname)),
                _report(app, docname),
                outdir / f"{docname}.ipynb",  # the downloads (html/notebooks.py)
                outdir / f"{docname}.py",
                executed / f"{docname}.ipynb",
                *(
                    outdir / "_sources" / f"{docname}{suffix}{app.config.html_sourcelink_suffix}"
                    for suffix in app.config.source_suffix
                ),
            ]
    shown = {Path(env.srcdir, source).resolve() for source in env.images}
    copied = {name for _docnames, name in env.images.values()}
    unused += [
        path
        for path in (outdir / "_images").glob("*")
        if path.is_file() and path.name not in copied
    ]
    unused += [
        path
        for path in executed.rglob("*")
        if path.is_file() and path.suffix != ".ipynb" and path.resolve() not in shown
    ]
    unused += _stale_source_lines(env, outdir / checked_claims.SOURCE_LINES)
    _remove(outdir.parent, [*unused, outdir / ".buildinfo.bak"])


def _stale_source_lines(env, folder: Path) -> list[Path]:
    """The numbered sources (``checked_claims.write_source_lines``) of pages that are
    gone or whose checks no longer quote them: a clean build writes none for them."""
    stale = []
    for path in folder.rglob("*.html"):
        source = path.relative_to(folder).with_suffix("").as_posix()  # "a/b.md"
        docname = env.path2doc(str(Path(env.srcdir, source)))
        if docname is None or not claims.claims_of(env, docname):
            stale.append(path)
    return stale


def _remove(root: Path, paths: list[Path]) -> None:
    """Remove these files, and the folders under ``root`` they leave empty."""
    for path in paths:
        path.unlink(missing_ok=True)
        folder = path.parent
        while root in folder.parents and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def engine_fingerprint() -> str:
    return cache_key.digest([path.read_text(encoding="utf8") for path in cache_key.engine_files()])


def _fingerprint_static_files(app: Sphinx, config: Config) -> None:
    """What every file Sphinx copies from html_static_path holds, as STATIC_FILES:
    a file entry itself, and what a folder entry holds but what the copy leaves
    out (exclude_patterns, dotfiles such as an editor's swap files)."""
    excluded = Matcher([*config.exclude_patterns, "**/.*"])
    parts = []
    for entry in config.html_static_path:
        root = Path(app.confdir, entry)
        found = (
            {"": root}
            if root.is_file()
            else {
                path.relative_to(root).as_posix(): path
                for path in root.rglob("*")
                if path.is_file()
            }
        )
        parts += [
            f"{entry} {name} {hashlib.sha256(path.read_bytes()).hexdigest()}"
            for name, path in sorted(found.items())
            if not (name and excluded(name))
        ]
    config[STATIC_FILES] = cache_key.digest(parts)


def setup(app: Sphinx) -> dict:
    # Not set by conf.py: when the engine or a static file changes, the value
    # does, and Sphinx writes every page again (an "html" value is in
    # .buildinfo's hash).
    app.add_config_value("autograd_docs_engine", engine_fingerprint(), "html", str)
    app.add_config_value(STATIC_FILES, "", "html", str)
    app.connect("config-inited", _fingerprint_static_files, priority=900)
    app.connect("builder-inited", _copy_mystnb_css_first)
    app.connect("env-get-updated", _pages_that_show_others)
    app.connect("env-purge-doc", _remove_old_report)
    app.connect("build-finished", _remove_what_no_page_uses)
    _compat.complete_incremental_search_index()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
