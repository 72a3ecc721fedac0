"""Links to the repository: Open in Colab on every executed page, and edit and
source links on every page, when the repository's address is known.

On the small copy of the site: built again with ``GITHUB_REPOSITORY=owner/name``,
every page with a notebook download links to Colab at the address the Pages
workflow publishes that notebook to; in the shared build, without any address
(``NO_REPOSITORY``, and the copy is no git checkout), no page does, and the log
says so in one line. ``repository.find`` is also checked on its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograd_docs.html import repository

from site_copy import NO_REPOSITORY, build

NO_ADDRESS = "no repository address"
COLAB = re.compile(r'href="(https://colab\.research\.google\.com/[^"]*)"')
GITHUB = re.compile(r'href="(https://github\.com/owner/name/(?:edit|blob)/[^"]*)"')
ROOT = Path(__file__).resolve().parent.parent


def colab_links(html: Path) -> dict[str, list[str]]:
    """docname -> the Colab links of its page, for every page of a built site."""
    return {page.relative_to(html).with_suffix("").as_posix():
            COLAB.findall(page.read_text(encoding="utf8"))
            for page in sorted(html.rglob("*.html"))
            if not page.relative_to(html).parts[0].startswith("_")}  # _static, _source-lines


def executed(html: Path) -> set[str]:
    return {path.relative_to(html).with_suffix("").as_posix() for path in html.rglob("*.ipynb")}


@pytest.mark.build
def test_every_executed_page_opens_in_colab_when_the_repository_is_known(warm_copy):
    result = build(warm_copy, builddir=warm_copy / "_build-github", jobs=2,
                   env={**NO_REPOSITORY, "GITHUB_REPOSITORY": "owner/name", "GITHUB_REF_NAME": "main"})
    assert result.returncode == 0, result.log
    html = warm_copy / "_build-github" / "html"
    pages, notebooks = colab_links(html), executed(html)
    assert len(notebooks) >= 2, notebooks
    for docname, links in pages.items():
        expected = ([f"https://colab.research.google.com/github/owner/name/blob/"
                     f"{repository.NOTEBOOKS_BRANCH}/{docname}.ipynb"]
                    if docname in notebooks else [])
        assert links == expected, docname
        # furo's edit and view buttons, at the page's source on the built branch
        page_html = (html / f"{docname}.html").read_text(encoding="utf8")
        source = f"docs/{docname}.md"
        assert GITHUB.findall(page_html) == ([
            f"https://github.com/owner/name/blob/main/{source}?plain=true",
            f"https://github.com/owner/name/edit/main/{source}"]
            if (warm_copy / source).is_file() else []), docname
    assert NO_ADDRESS not in result.log


@pytest.mark.build
def test_without_an_address_no_page_links_to_colab_and_the_log_says_so_once(
        built_copy, built_copy_log):
    html = built_copy / "_build" / "html"
    assert executed(html) and not any(colab_links(html).values())
    assert not any(GITHUB.findall(page.read_text(encoding="utf8")) for page in html.rglob("*.html"))
    said = [line for line in built_copy_log.splitlines() if NO_ADDRESS in line]
    assert len(said) == 1, said


@pytest.mark.parametrize("environ, origin, expected", [
    ({"GITHUB_REPOSITORY": "a/b", "GITHUB_REF_NAME": "dev"}, None, ("a/b", "dev")),
    ({"READTHEDOCS_GIT_CLONE_URL": "https://github.com/c/d.git",
      "READTHEDOCS_GIT_IDENTIFIER": "main"}, None, ("c/d", "main")),
    ({"READTHEDOCS_GIT_CLONE_URL": "https://gitlab.com/c/d.git"}, None, None),
    ({}, "git@github.com:e/f.git", ("e/f", None)),
    ({}, "https://example.org/e/f.git", None),
    ({}, None, None),
])
def test_the_repository_is_read_from_the_environment_or_a_github_origin(
        tmp_path, environ, origin, expected):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", origin], check=True)
    found = repository.find(tmp_path, environ)
    assert (found and (found.name, found.branch)) == (expected or None)


def test_the_pages_workflow_publishes_the_notebooks_where_colab_links_point():
    workflow = (ROOT / ".github" / "workflows" / "docs.yml").read_text(encoding="utf8")
    assert f"NOTEBOOKS_BRANCH: {repository.NOTEBOOKS_BRANCH}" in workflow


def test_a_page_is_dated_by_the_last_commit_that_changed_its_source(tmp_path):
    import os
    import subprocess

    from autograd_docs.html.page_origin import changed_on

    def commit(name: str, date: str) -> None:
        (tmp_path / "docs" / name).write_text(date, encoding="utf8")
        when = {"GIT_AUTHOR_DATE": f"{date}T12:00:00Z", "GIT_COMMITTER_DATE": f"{date}T12:00:00Z"}
        subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-qm", name], check=True, env={**os.environ, **when})

    (tmp_path / "docs" / "how-to").mkdir(parents=True)
    assert changed_on(tmp_path / "docs") is None, "not a git checkout: no dates"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit("index.md", "2026-01-02")
    commit("how-to/a.md", "2026-03-04")
    commit("index.md", "2026-05-06")
    assert changed_on(tmp_path / "docs") == {"index": "2026-05-06", "how-to/a": "2026-03-04"}
