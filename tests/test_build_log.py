"""The build log reads as a maintainer wants it (autograd_docs/build_log.py).

A line per executed page (its path relative to the repository, its seconds,
executed or from the cache) counting to N/N across parallel readers; no
configuration dumps, no absolute paths, none of myst-nb's own per-page lines; a
failed build ends with its problems listed together, each at its file and line.
Builds of the small site (a clean one in ``tmp_path``, a failed one on a copy of
the built one), two readers each.
"""

from __future__ import annotations

import os
import re

import pytest

from autograd_docs.build_log import (
    EXECUTED,
    FAILED,
    FROM_CACHE,
    PageLine,
    format_page_line,
    split_problems,
)
from autograd_docs.devkit.builds import write

from site_copy import ROOT, SMALL_SITE, VENV, build, make_copy, replace, small_page

# An absolute path: a slash at the start of a word (not "../x", "a/b", "https://").
ABSOLUTE = re.compile(r"(?:^|[\s'\"=(\[])/[^\s/]+/")
# Left over from myst, myst-nb and Sphinx before this log.
NOISE = ("MdParserConfig(", "NbParserConfig(", "[mystnb]", "Using jupyter-cache",
         "Writing evaluated template result", "execution table")


def tiny_page(name: str, value: int) -> str:
    """A page with one code cell of its own (its own cache entry)."""
    return (f"---\nfile_format: mystnb\nkernelspec:\n  name: python3\n"
            f"  display_name: Python 3\n---\n\n({name})=\n# Page {value}\n\n"
            f"```{{code-cell}} ipython3\nprint({value} * {value})\n```\n")


def pages_of_the_small_site() -> dict[str, str]:
    pages = {path.stem: path.read_text(encoding="utf8")
             for path in sorted(SMALL_SITE.glob("*.md"))}
    # More pages than readers, so that each reader executes several.
    pages.update({f"tiny-{n}": tiny_page(f"tiny-{n}", n) for n in range(1, 4)})
    pages["prose-only"] = "(prose-only)=\n# A page with no code\n\nNothing runs here.\n"
    return pages


def assert_clean_of_paths_and_noise(log: str, folder) -> None:
    for shown in {str(folder), os.path.realpath(folder)}:
        assert shown not in log, f"the log names the build's folder {shown}:\n{log}"
    for line in log.splitlines():
        if line.startswith(f"{VENV}/bin/python "):  # make's echo of its command
            continue
        assert not ABSOLUTE.search(line), f"an absolute path in {line!r}"
        assert not any(noise in line for noise in NOISE), f"noise in {line!r}"


# -- the format, without a build ------------------------------------------------------

def test_a_page_line_reads_back_as_it_was_written():
    lines = [format_page_line(3, 31, "docs/how-to/check-gradients.md", 1.2249, EXECUTED),
             format_page_line(12, 31, "docs/index.md", 0.04, FROM_CACHE),
             format_page_line(31, 31, "docs/a page.md", 61.5, FAILED)]
    assert lines[0] == "[ 3/31] executed     1.22 s  docs/how-to/check-gradients.md"
    pages = PageLine.parse("\n".join(["reading sources... [ 50%]", *lines]))
    assert [(p.done, p.total, p.path, p.seconds, p.state) for p in pages] == [
        (3, 31, "docs/how-to/check-gradients.md", 1.22, EXECUTED),
        (12, 31, "docs/index.md", 0.04, FROM_CACHE),
        (31, 31, "docs/a page.md", 61.5, FAILED)]
    assert [str(page) for page in pages] == lines


def test_the_list_of_problems_reads_back_apart_from_the_rest_of_the_log():
    log = ("docs/a.md:3: WARNING: one\nmore log\n\n2 problems:\n  docs/a.md:3: one\n"
           "  docs/b.md: two\n    and its second line\nbuild finished with problems.\n")
    rest, listed = split_problems(log)
    assert listed == ["docs/a.md:3: one", "docs/b.md: two\nand its second line"]
    assert rest == "docs/a.md:3: WARNING: one\nmore log\n\nbuild finished with problems.\n"
    # Captured as stdout then stderr: the warnings come after the list.
    rest, listed = split_problems("\n1 problem:\n  docs/a.md:3: one\ndocs/a.md:3: WARNING: one\n")
    assert (rest, listed) == ("\ndocs/a.md:3: WARNING: one\n", ["docs/a.md:3: one"])
    assert split_problems("build succeeded.\n") == ("build succeeded.\n", [])


# -- builds of the small site --------------------------------------------------------

@pytest.fixture
def small_site(tmp_path):
    return make_copy(tmp_path / "site", pages_of_the_small_site())


@pytest.mark.build
def test_a_clean_build_logs_each_executed_page_once_and_counts_to_n(small_site):
    result = build(small_site, jobs=2)
    assert result.returncode == 0, result.log
    expected = sorted(f"docs/{name}.md" for name in pages_of_the_small_site()
                      if name != "prose-only") + ["docs/reference/glossary.md"]
    pages = result.pages
    assert sorted(page.path for page in pages) == sorted(expected), result.log
    assert [page.done for page in pages] == list(range(1, len(expected) + 1)), result.log
    assert {page.total for page in pages} == {len(expected)}
    assert {page.state for page in pages} == {EXECUTED}
    assert all(page.seconds > 0 for page in pages)
    assert "reading sources... [100%]" in result.log  # read by two readers, in chunks
    assert result.problems == [] and "problem" not in result.log
    assert_clean_of_paths_and_noise(result.log, small_site)

    # A page saved unchanged is read again, its outputs taken from the cache.
    page = small_site / "docs" / "tiny-2.md"
    write(page, page.read_text(encoding="utf8"))
    result = build(small_site, jobs=2)
    assert result.returncode == 0, result.log
    assert [(p.done, p.total, p.path, p.state) for p in result.pages] == [
        (1, 1, "docs/tiny-2.md", FROM_CACHE)], result.log
    assert_clean_of_paths_and_noise(result.log, small_site)


def test_a_failed_build_lists_its_problems_at_the_end(warm_copy):
    """On a copy of the built small site: only what the test changes is read again."""
    broken = {
        # A cell that raises: reported by the reader that executed the page.
        "test-page": small_page("test-page").replace(
            "print(z.grad)\n", "print(z.grad)\ntorch.ones(2).backward()\n"),
        # A term the glossary lacks: reported while the pages are written.
        "figure-page": small_page("figure-page") + "\nSee {term}`no-such-term`.\n",
        **{f"tiny-{n}": tiny_page(f"tiny-{n}", n) for n in range(1, 4)},
    }
    folder = warm_copy
    for name, text in broken.items():
        write(folder / "docs" / f"{name}.md", text)
    replace("reference/glossary", "tiny-1\ntiny-2\ntiny-3\nreference/glossary",
            "docs/index.md")(folder)
    lost = folder / "docs" / "lost-page.md"  # in no toctree: reported once all are read
    write(lost, "(lost-page)=\n# Find this page\n")
    result = build(folder, jobs=2)
    assert result.returncode != 0, result.log

    states = {page.path: page.state for page in result.pages}
    assert states["docs/test-page.md"] == FAILED and states["docs/tiny-1.md"] == EXECUTED
    located = re.compile(r"^docs/[\w/-]+\.md(?::\d+)?: ")
    # As shown where each arose (perhaps after a progress message), less "WARNING:".
    shown = [re.sub(r"^.*?(docs/\S+) (?:WARNING|ERROR): ", r"\1 ", line, count=1)
             for line in result.warning_lines]
    assert len(shown) == 3, result.log
    assert sorted(result.problems) == sorted(shown), result.log  # each once, same words
    assert all(located.match(problem) for problem in result.problems), result.problems
    tail = result.log[result.log.index("3 problems:"):]
    for where in ("docs/test-page.md:", "docs/figure-page.md:", "docs/lost-page.md"):
        assert where in tail, tail
    sphinx_said = [line for line in tail.splitlines() if not line.startswith("make: ")]
    assert sphinx_said[-1].startswith("build finished with problems, 3 warnings"), tail
    assert_clean_of_paths_and_noise(result.log, folder)


def test_the_readme_shows_the_lines_the_build_prints():
    """The example in the quick start (which the site includes) is in the format
    the build prints, byte for byte, and names pages that exist; its seconds and
    count are an example, and the text says so."""
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    example = readme.split("an example:\n\n```text\n", 1)[1].split("```", 1)[0]
    lines = example.splitlines()
    pages = PageLine.parse(example)
    assert [str(page) for page in pages] == lines and lines
    assert all((ROOT / page.path).is_file() for page in pages)

