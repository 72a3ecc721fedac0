"""A small copy of the site to break on purpose, and the strict build to run on it.

The copy holds the real configuration (``conf.py``, ``Makefile``, ``docs/_static``,
``docs/_templates``, ``snippets/`` and the glossary) plus pages a test writes;
the build engine is the installed ``autograd_docs``. The real landing page and
tutorials stay out: they link to every other page, and the copy holds only a
few. Building it takes seconds, where the whole site takes minutes, and a test
can break it without touching the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import build_forks

from autograd_docs.devkit import builds
from autograd_docs.devkit.builds import Build, write
from autograd_docs.devkit.executed import executed_cells, merged_streams
from autograd_docs.diagnostics import AuthorError

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# The small site's own pages, as files an author can open: small_site/*.md
# (small_site/extra/ holds pages and snippets single tests add).
SMALL_SITE = Path(__file__).resolve().parent / "small_site"
# The small site's page with one of everything (code, checks, an include, a doctest).
PAGE = "docs/test-page.md"
# Real pages in the copy: the glossary every {term} resolves against.
REAL_PAGES = ["reference/glossary"]
# The venv whose Python runs this test: the copy's `make` uses it, never makes one.
VENV = Path(PYTHON).parent.parent
# A build without the repository's address, as in a clone outside GitHub and Read
# the Docs (the copy is no git checkout): no Colab, edit or source links, said once.
NO_REPOSITORY = {"GITHUB_REPOSITORY": "", "GITHUB_REF_NAME": "", "READTHEDOCS_GIT_CLONE_URL": ""}


def small_page(name: str) -> str:
    """The text of ``small_site/<name>.md``."""
    return (SMALL_SITE / f"{name}.md").read_text(encoding="utf8")


def with_front_matter(text: str, extra: str) -> str:
    """A page's text with ``extra`` (YAML lines) added at the end of its front matter."""
    head, rest = text.split("\n---\n", 1)
    return f"{head}\n{extra.rstrip()}\n---\n{rest}"


def make_copy(folder: Path, pages: dict[str, str] | None = None) -> Path:
    """Copy the site's machinery into ``folder`` and write ``pages`` (name -> text).

    The copy's landing page is a title and a toctree of the test's pages and
    ``REAL_PAGES``. Without ``pages`` it holds the pages of ``small_site/``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("conf.py", "Makefile", "requirements.txt", "package.json",
                 "package-lock.json"):
        shutil.copy2(ROOT / name, folder / name)
    # The small site's own pages are fixtures whose lines the faults edit by their
    # text, long ones too: the width of code is checked on the real pages, and on
    # the copy only by the fault that switches it on (AuthorError.CODE_TOO_WIDE).
    with (folder / "conf.py").open("a", encoding="utf8") as conf:
        conf.write("\nautograd_docs_check_code_width = False\n")
    # make would otherwise reinstall the venv: requirements.txt is older than it.
    os.utime(folder / "requirements.txt", (0, 0))
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "snippets", folder / "snippets", ignore=ignore)
    shutil.copytree(ROOT / "docs" / "_static", folder / "docs" / "_static", ignore=ignore)
    shutil.copytree(ROOT / "inventories", folder / "inventories")  # intersphinx, offline
    shutil.copytree(ROOT / "docs" / "_templates", folder / "docs" / "_templates", ignore=ignore)
    # The build draws equations with MathJax from node_modules (autograd_docs/html/svg_math.py).
    (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    for name in REAL_PAGES:
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "docs" / f"{name}.md", folder / "docs" / f"{name}.md")
    if pages is None:
        pages = {path.stem: path.read_text(encoding="utf8")
                 for path in sorted(SMALL_SITE.glob("*.md"))}
    toctree = "\n".join([*sorted(pages), *REAL_PAGES])
    (folder / "docs" / "index.md").write_text(
        "# A small copy of the site\n\n```{toctree}\n\n" + toctree + "\n```\n",
        encoding="utf8",
    )
    for name, text in pages.items():
        write(folder / "docs" / f"{name}.md", text)
    return folder


def replace(old: str, new: str, file: str = PAGE) -> Callable[[Path], None]:
    """An edit: replace ``old`` (which must be there) by ``new`` in the copy's ``file``."""
    def edit(folder: Path) -> None:
        path = folder / file
        text = path.read_text(encoding="utf8")
        assert old in text, f"{file} no longer contains {old!r}"
        write(path, text.replace(old, new))
    return edit


def make(folder: Path, *arguments, through_make: bool = False, **options) -> Build:
    """``autograd_docs.devkit.builds.make`` in ``folder``: its Sphinx forked from a
    process that imported Sphinx once (``build_forks``), or, ``through_make``, in
    ``make``'s own subprocess."""
    return (builds.make if through_make else build_forks.make)(folder, *arguments, **options)


def build(folder: Path, builder: str = "html", *extra: str, jobs: int | str = 1,
          builddir: Path | None = None, timeout: int = 300,
          env: dict[str, str] | None = None, through_make: bool = False) -> Build:
    """Run the Makefile's strict build (``make html`` or ``make doctest``) in ``folder``.

    ``extra`` are sphinx-build options for this run (the Makefile's ``O``). One
    reader by default: a build after one fault has one page to execute.
    ``builddir`` builds somewhere other than ``folder``'s own ``_build``; ``env``
    adds environment variables. ``through_make``: run ``make`` itself, not its
    recipe forked (``build_forks``).
    """
    return make(folder, builder, f"JOBS={jobs}", f"O={' '.join(extra)}",
                *([f"BUILDDIR={builddir}"] if builddir else []), venv=VENV, env=env,
                timeout=timeout, through_make=through_make)


def executed_outputs(notebooks: Path) -> dict[tuple[str, int], str]:
    """(page, line of the cell) -> the outputs stored for that cell, streams joined.

    Takes what ``autograd_docs.devkit.executed.executed_cells`` takes.
    """
    return {key: json.dumps(merged_streams(cell.outputs), sort_keys=True)
            for key, cell in executed_cells(notebooks).items()}


def outputs_that_differ(first: Path, second: Path) -> list[str]:
    """Cells whose outputs differ between two executions, as ``page:line`` messages.

    Takes what ``executed_outputs`` takes.
    """
    a, b = executed_outputs(first), executed_outputs(second)
    return [
        f"{page}:{line}: {AuthorError.OUTPUT_VARIES.text()}"
        for page, line in sorted(set(a) | set(b))
        if a.get((page, line)) != b.get((page, line))
    ]
