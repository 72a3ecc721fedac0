"""Two clean builds of one commit write the same bytes: pages, notebooks, figures.

On the small copy of the site: the second build runs in another folder at another
time, as a second clone would; the first is the shared ``built_copy``. Any file
that differs is listed, and so is any cell whose output differs, with its page
and line.

After edits and their reverts (a failing cell, a page added and removed, a title,
prose, a figure's code, a snippet a page imports), ``make html`` leaves the files
a clean build writes, byte for byte: the search index, every page's sidebar, and
nothing of a removed page, an old figure or a fixed cell's traceback.

On the real site: ``make html`` (which ``make test`` runs first) is compared with
a second clean build of the same sources into a scratch folder, executing every
page again through the build's own machinery (strict flags, fork server, the
execution cache, empty). That a page runner prints what a stock kernel prints is
tests/test_downloaded_notebooks.py's to hold. Each cell must print the same, and every file of the site
must be the same bytes (figures too), except what is tagged ``measured``: the
build machine's timings, which differ from run to run on purpose (the
reverse-mode page's plot, the execution table).
"""

from __future__ import annotations

import filecmp
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from filelock import FileLock
from sphinx.errors import ConfigError

from autograd_docs import execution
from autograd_docs.build_log import EXECUTED, FROM_CACHE, PageLine
from autograd_docs.devkit.executed import executed_cells
from autograd_docs.html import reproducible

from site_copy import (
    PAGE,
    ROOT,
    SMALL_SITE,
    build,
    executed_outputs,
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


def test_two_clean_builds_are_byte_identical(built_copy, fresh_folder):
    second = make_copy(fresh_folder / "site")
    result = build(second, jobs=2)
    assert result.returncode == 0, result.log
    assert differences(built_copy, second) == []

    # Read every page again, outputs from the cache: the same bytes again.
    result = build(second, "html", "-E")
    assert result.returncode == 0, result.log
    assert result.pages and {page.state for page in result.pages} == {FROM_CACHE}, result.log
    assert differences(built_copy, second) == []


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


def test_edits_then_reverts_leave_what_a_clean_build_writes(built_copy, warm_copy):
    """After edits and their reverts, ``make html`` leaves the files a clean build
    wrote (``built_copy``), byte for byte. A build after a failed one reads every
    page, and one after a title changed writes every page, so the edits after
    which Sphinx writes only what changed come last. The last build writes the
    figure page again with the equation the build before drew: its SVG is the
    one kept (html/svg_math.py), and must be a clean build's bytes."""
    shutil.copy(SMALL_SITE / "extra" / "random-page.md", warm_copy / "docs")
    edit(warm_copy, FAILING_CELL, NEW_PAGE, SNIPPET)
    assert build(warm_copy).returncode != 0

    (warm_copy / "docs" / "random-page.md").unlink()
    edit(warm_copy, FAILING_CELL, NEW_PAGE, SNIPPET, undo=True)
    edit(warm_copy, TITLE, LINKED_TITLE, PROSE, FIGURE, MATH)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
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


# -- the real site -----------------------------------------------------------------

BUILT = ROOT / "_build"
# One worker (pytest -n 2 --dist loadgroup) builds the real site again, for all of these.
real_site = pytest.mark.xdist_group("real-site-again")


@pytest.fixture(scope="session")  # kept by its worker even if other tests run between
def built_again(workspace) -> Path:
    """The real site built once more, clean, as ``make html`` builds it but with
    an empty execution cache of its own and every page executed again."""
    if not (BUILT / "html" / "index.html").is_file():
        pytest.fail("needs the site `make html` builds (`make test` runs it first)",
                    pytrace=False)
    again, done = workspace / "real-site-again", workspace / "real-site-again.log"
    # The workspace is shared by the xdist workers: whichever asks first builds,
    # the other waits for it and reads the same folder.
    with FileLock(workspace / "real-site-again.lock"):
        if not done.exists():
            done.write_text(built_once_more(again), encoding="utf8")
    return again


def built_once_more(again: Path) -> str:
    """Build the real site into ``again``; the build's log."""
    result = build(ROOT, "html", "-D", f"nb_execution_cache_path={again / '.jupyter_cache'}",
                   jobs="auto", builddir=again, timeout=900)
    log = result.log
    assert result.returncode == 0, log
    assert "fork server off" not in log, "the second build ran without the fork server"
    states = {page.state for page in PageLine.parse(log)}
    assert states == {EXECUTED}, "the second build did not execute every page again"
    return log


@real_site
def test_every_page_prints_the_same_when_executed_again(built_again):
    """Catches a page whose output depends on an unseeded random draw."""
    first, second = BUILT / "jupyter_execute", built_again / "jupyter_execute"
    again = {name for name in files_under(second) if name.suffix == ".ipynb"}
    assert again and again <= files_under(first), "make html executed other pages"
    assert any(outputs != "[]" for outputs in executed_outputs(second).values()), (
        "the notebooks the second build wrote hold no outputs")
    # Pages of the sources only: a long-lived _build keeps notebooks of pages since
    # deleted or renamed.
    pages = {f"docs/{name.with_suffix('.md')}" for name in again}
    before = {key: value for key, value in executed_outputs(first).items() if key[0] in pages}
    after = executed_outputs(second)
    differences = [f"{page}:{line}: this cell printed something different when executed "
                   "again: seed the randomness it uses (torch.manual_seed(0) in the "
                   "page's first cell) or print something that does not vary"
                   for page, line in sorted(set(before) | set(after))
                   if before.get((page, line)) != after.get((page, line))]
    assert differences == [], "\n".join(differences)


# A block the page marks as measured: a cell tagged ``measured`` (myst-nb writes
# the tag as the class tag_measured) or a directive given the class ``measured``.
MEASURED = re.compile(r'<div class="(?:[^"]* )?(?:tag_)?measured(?: [^"]*)?"[^>]*>')
DIV = re.compile(r"<div\b|</div>")


def without_measured(html: str) -> tuple[str, set[str]]:
    """The page with its measured blocks cut out, and the files those blocks use."""
    kept, used, start = [], set(), 0
    while match := MEASURED.search(html, start):
        depth, end = 1, match.end()
        while depth:
            tag = DIV.search(html, end)
            depth += 1 if tag.group() == "<div" else -1
            end = tag.end()
        kept.append(html[start:match.start()])
        used |= set(re.findall(r'(?:src|href)="([^"]+)"', html[match.start():end]))
        start = end
    kept.append(html[start:])
    return "".join(kept), used


def notebook_without_measured(text: str) -> str:
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        if "measured" in cell.get("metadata", {}).get("tags", []):
            cell["outputs"] = []
    return json.dumps(notebook, sort_keys=True)


def site_differences(first: Path, second: Path) -> list[str]:
    """Every file of the second site that the first lacks or holds other bytes
    in, measured blocks (and the images only they show) aside. Files only in the
    first are left over from older builds of a long-lived _build (`make clean`)."""
    measured_files: set[Path] = set()
    found = []
    second_files = files_under(second)
    for name in sorted(second_files):
        if name.name == ".buildinfo":  # the hash of the options, and the test's differ
            continue
        a, b = first / name, second / name
        if name.suffix == ".html":
            (mine, mine_uses), (theirs, their_uses) = (
                without_measured(path.read_text(encoding="utf8")) if path.is_file()
                else ("", set()) for path in (a, b))
            measured_files |= {(b.parent / use).resolve().relative_to(second.resolve())
                               for use in mine_uses | their_uses
                               if not re.match(r"[a-z]+:|#", use)}
            same = a.is_file() and mine == theirs
        elif name.suffix == ".ipynb":
            same = a.is_file() and notebook_without_measured(a.read_text("utf8")) == (
                notebook_without_measured(b.read_text("utf8")))
        else:
            same = a.is_file() and filecmp.cmp(a, b, shallow=False)
        if not same:
            found.append(f"{'differs' if a.is_file() else 'missing from _build/html'}: {name}")
    return [line for line in found if Path(line.split(": ", 1)[1]) not in measured_files]


@real_site
def test_the_real_site_is_the_same_bytes_when_built_again(built_again):
    """``make html`` and a second clean build agree on every file but the measured."""
    differences = site_differences(BUILT / "html", built_again / "html")
    assert differences == [], "\n".join(differences)


def test_the_real_site_comparison_sees_measured_blocks_and_their_figures():
    """Against the comparison passing vacuously: the measured blocks it leaves out
    exist, and leaving them out keeps the rest of the page."""
    page = (BUILT / "html" / "explanation" / "reverse-mode-is-a-chain-of-vjps.html")
    text = page.read_text(encoding="utf8")
    kept, used = without_measured(text)
    assert any(use.endswith(".png") for use in used), "the timing plot is not measured"
    assert "jacfwd" in kept and len(kept) > len(text) / 2
    table = BUILT / "html" / "reference" / "how-this-site-is-built.html"
    kept, _ = without_measured(table.read_text(encoding="utf8"))
    assert "Run Time" not in kept, "the execution table is not measured"
