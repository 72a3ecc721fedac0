"""Two clean builds of one commit write the same bytes: pages, notebooks, figures.

The second build runs in another folder at another time, as a second clone
would; the first is the shared ``built_copy``. Any file that differs is listed,
and so is any cell whose output differs, with its page and line.

The real site's pages are checked the cheaper way: every notebook the last
``make html`` executed runs once more, and each cell must print the same.
"""

import filecmp
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from site_copy import (
    PYTHON,
    ROOT,
    build,
    executed_outputs,
    make_copy,
    outputs_that_differ,
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


def test_two_clean_builds_are_byte_identical(built_copy, fresh_folder):
    second = make_copy(fresh_folder / "site")
    result = build(second, jobs=2)
    assert result.returncode == 0, result.log
    assert differences(built_copy, second) == []

    # Read every page again, outputs from the cache: the same bytes again.
    result = build(second, "html", "-E")
    assert result.returncode == 0, result.log
    assert "Using cached notebook" in result.log
    assert differences(built_copy, second) == []


def test_the_comparison_covers_figures_and_notebooks(built_copy):
    html = built_copy / "_build" / "html"
    assert list(html.glob("_images/*.png")), "the figure page drew no figure"
    assert (built_copy / "_build" / "jupyter_execute" / "figure-page.ipynb").is_file()


EXECUTED = ROOT / "_build" / "jupyter_execute"
EXECUTE_AGAIN = """
import sys, nbformat, nbclient
notebook = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[3])
"""


@pytest.mark.skipif(not EXECUTED.is_dir(), reason="needs `make html` first (make test runs it)")
def test_every_page_prints_the_same_when_executed_again(fresh_folder):
    """Catches a page whose output depends on an unseeded random draw."""
    again = fresh_folder / "jupyter_execute"
    notebooks = sorted(EXECUTED.rglob("*.ipynb"))
    env = {**os.environ,
           "JUPYTER_PATH": str(ROOT / "_build" / "doctrees" / "jupyter"),
           "PYTHONPATH": os.pathsep.join(filter(None, [
               str(ROOT / "snippets"), os.environ.get("PYTHONPATH")]))}

    def execute(notebook):
        name = notebook.relative_to(EXECUTED)
        (again / name).parent.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [PYTHON, "-c", EXECUTE_AGAIN, str(notebook),
             str((ROOT / "docs" / name).parent), str(again / name)],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert result.returncode == 0, f"docs/{name.with_suffix('.md')}: {result.stderr}"

    assert notebooks, "make html executed no page"
    assert any(outputs != "[]" for outputs in executed_outputs(EXECUTED).values()), (
        "the notebooks make html wrote hold no outputs")
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(execute, notebooks))
    differences = outputs_that_differ(EXECUTED, again)
    assert differences == [], "\n".join(differences)
