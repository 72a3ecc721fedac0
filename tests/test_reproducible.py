"""Two clean builds of one commit write the same bytes: pages, notebooks, figures.

On the small copy of the site: the second build runs in another folder at another
time, as a second clone would; the first is the shared ``built_copy``. Any file
that differs is listed, and so is any cell whose output differs, with its page
and line.

After edits and their reverts (a failing cell, a page added and removed, a title,
prose, a figure's code, a snippet a page imports, a stylesheet), ``make html``
leaves the files a clean build writes, byte for byte: the search index, every
page's sidebar, the equations drawn, and nothing of a removed page, an old figure
or a fixed cell's traceback. That covers what a build keeps for the next one
(the search facts, the drawn equations): kept wrongly, they would show here.

The real site is built once, by ``make html``; that each of its pages prints the
same when run again, in a reader's kernel, is
``test_downloaded_notebooks.py``'s (an unseeded random draw fails there).
"""

from __future__ import annotations

import filecmp
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from sphinx.errors import ConfigError

from autograd_docs import execution
from autograd_docs.build_log import FROM_CACHE
from autograd_docs.devkit.executed import executed_cells
from autograd_docs.html import reproducible

from site_copy import (
    PAGE,
    SMALL_SITE,
    build,
    make_copy,
    outputs_that_differ,
    replace,
)

pytestmark = pytest.mark.build

# The site a reader gets (html) and the executed notebooks behind it.
OUTPUTS = ("html", "jupyter_execute")


def files_under(folder):
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def differences(first, second) -> list[str]:
    """Every output file that is not byte-identical in two copies' builds."""
    found = [f"{message} (the cell's output)"
             for message in outputs_that_differ(first, second)]
    for output in OUTPUTS:
        first_dir, second_dir = first / "_build" / output, second / "_build" / output
        first_files, second_files = files_under(first_dir), files_under(second_dir)
        found += [f"only in one build: {output}/{name}"
                  for name in sorted(first_files ^ second_files)]
        found += [
            f"differs: {output}/{name}" for name in sorted(first_files & second_files)
            if not filecmp.cmp(first_dir / name, second_dir / name, shallow=False)
        ]
    return found


def test_prints_that_arrive_in_parts_are_kept_and_shown_as_printed(built_copy):
    """A cell's prints reach the build in as many messages as ipykernel flushed
    (its flush timer splits them under load). The notebook keeps, and the page
    shows, one block with exactly what was printed. myst-nb's merge at render time
    (nb_merge_streams) once made the first part a line of its own and left the rest
    in the notebook a second time: a page showed a line break never printed, and
    the site was not the same bytes when built again."""
    printed = "one line, printed in two parts\n"
    outputs = next(cell.outputs for (page, _), cell in executed_cells(built_copy).items()
                   if page == PAGE and "printed in two parts" in json.dumps(cell.outputs))
    assert [(out["output_type"], "".join(out["text"])) for out in outputs] == [
        ("stream", printed)], outputs
    html = (built_copy / "_build" / "html" / "test-page.html").read_text(encoding="utf8")
    assert html.count(printed.rstrip()) == 1, "the page shows the line as printed, once"


def test_conf_py_cannot_turn_the_render_time_merge_back_on():
    with pytest.raises(ConfigError, match="nb_merge_streams = True rewrites"):
        execution._refuse_merging_streams_at_render(None, SimpleNamespace(nb_merge_streams=True))
    execution._refuse_merging_streams_at_render(None, SimpleNamespace(nb_merge_streams=False))


def test_the_comparison_covers_figures_and_notebooks(built_copy):
    html = built_copy / "_build" / "html"
    assert list(html.glob("_images/*.png")), "the figure page drew no figure"
    assert (built_copy / "_build" / "jupyter_execute" / "figure-page.ipynb").is_file()


# -- edits and reverts ------------------------------------------------------------

# Edits an author makes and then reverts, as (file, text, replaced by), each with
# what it leaves behind when Sphinx is left alone.
FAILING_CELL = (PAGE, "z.backward(z)", "z.backward(z[:2])")  # a traceback report
NEW_PAGE = ("docs/index.md", "reference/glossary", "random-page\nreference/glossary")  # its files
TITLE = ("docs/figure-page.md", "# Plot the gradient", "# Plot the slope")  # every sidebar
# The title test-page's notebook links with: its download follows (notebooks.py).
LINKED_TITLE = ("docs/reference/glossary.md", "\n# Glossary\n", "\n# Words autograd uses\n")
PROSE = (PAGE, "for the identity.", "for the identity, futurewarnings aside.")  # "futurewarn": []
FIGURE = ("docs/figure-page.md", '"the gradient is 2z"', '"the gradient is twice z"')  # a figure
MATH = ("docs/figure-page.md", "= 2 z.", "= 2 z + 0.")  # an equation: drawn again, then kept
SNIPPET = ("snippets/oracle.py", "Independent oracles", "Independent, edited oracles")  # downloads
# Every page links the stylesheet with its checksum (site.css?v=...).
STYLESHEET = ("docs/_static/site.css", "/* Headings on a phone:", "/* Headings, on a phone:")


def edit(folder: Path, *edits: tuple[str, str, str], undo: bool = False) -> None:
    for file, old, new in edits:
        replace(*((new, old) if undo else (old, new)), file)(folder)


def written(log: str) -> set[str]:
    """The pages a build wrote, from Sphinx's progress lines."""
    return set(re.findall(r"^writing output\.\.\. \[[ \d]+%\] (\S+)$", log, re.MULTILINE))


def test_two_clean_builds_and_edits_then_reverts_write_the_same_bytes(built_copy, fresh_folder):
    """A second clean build, in another folder at another time (as a second clone
    would), writes what the first (``built_copy``) wrote, byte for byte. Then,
    after edits and their reverts, ``make html`` still leaves those files. A build
    after a failed one reads every page again, outputs from the cache for the
    pages not changed; one after a title changed writes every page; so the edits
    after which Sphinx writes only what changed come last. The last build writes
    the figure page again with the equation the build before drew: its SVG is
    the one kept (html/svg_math.py), and must be a clean build's bytes."""
    warm_copy = make_copy(fresh_folder / "site")
    result = build(warm_copy, jobs=2)
    assert result.returncode == 0, result.log
    assert differences(built_copy, warm_copy) == []

    shutil.copy(SMALL_SITE / "extra" / "random-page.md", warm_copy / "docs")
    edit(warm_copy, FAILING_CELL, NEW_PAGE, SNIPPET)
    assert build(warm_copy).returncode != 0

    (warm_copy / "docs" / "random-page.md").unlink()
    edit(warm_copy, FAILING_CELL, NEW_PAGE, SNIPPET, undo=True)
    edit(warm_copy, TITLE, LINKED_TITLE, PROSE, FIGURE, MATH)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    states = {page.path: page.state for page in result.pages}
    assert states.get("docs/reference/glossary.md") == FROM_CACHE, result.log  # read again
    download = warm_copy / "_build" / "html" / "test-page.ipynb"
    assert "[Words autograd uses](" in download.read_text(encoding="utf8"), (
        "the downloaded notebook still links the glossary by its old title")

    edit(warm_copy, TITLE, LINKED_TITLE, MATH, undo=True)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    # test-page itself did not change in this step: only what it links did.
    assert "[Glossary](" in download.read_text(encoding="utf8"), (
        "the downloaded notebook still links the glossary by its edited title")

    edit(warm_copy, PROSE, FIGURE, undo=True)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    # The glossary stays as the last build wrote it: its search entries, words
    # and sidebar are kept, not made again.
    assert "reference/glossary" not in written(result.log), result.log
    assert differences(built_copy, warm_copy) == []


def stylesheet_links(folder: Path) -> set[str]:
    """The ``site.css?v=<checksum>`` links of every page a build wrote."""
    return {link for page in (folder / "_build" / "html").rglob("*.html")
            for link in re.findall(r"site\.css\?v=\w+", page.read_text(encoding="utf8"))}


def test_a_stylesheet_edited_then_reverted_leaves_what_a_clean_build_writes(
        built_copy, warm_copy):
    """Every page links the stylesheets with their checksum; Sphinx writes no
    page again for an edited stylesheet, so every page linked the old checksum
    (reproducible.py: the static files are in .buildinfo's hash). Alone: an
    edit that writes every page anyway would hide it."""
    before = stylesheet_links(built_copy)
    edit(warm_copy, STYLESHEET)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    edited = stylesheet_links(warm_copy)
    assert len(before) == len(edited) == 1 and edited != before, (before, edited)

    edit(warm_copy, STYLESHEET, undo=True)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    assert differences(built_copy, warm_copy) == []


def test_the_static_files_fingerprint_follows_what_sphinx_copies(tmp_path):
    """A stylesheet's edit and a static entry that is one file change the
    fingerprint; an editor's swap file and an excluded file do not."""
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "site.css").write_text("a {}")
    (tmp_path / "logo.svg").write_text("<svg/>")

    class Config(dict):
        __getattr__ = dict.__getitem__

    def fingerprint() -> str:
        config = Config(html_static_path=["static", "logo.svg"], exclude_patterns=["**/draft*"])
        reproducible._fingerprint_static_files(SimpleNamespace(confdir=tmp_path), config)
        return config[reproducible.STATIC_FILES]

    first = fingerprint()
    (tmp_path / "static" / ".site.css.swp").write_text("x")
    (tmp_path / "static" / "draft.css").write_text("x")
    assert fingerprint() == first
    for changed in ("static/site.css", "logo.svg"):
        (tmp_path / changed).write_text("b {}")
        assert fingerprint() != first, changed
        first = fingerprint()
