"""Two clean builds of one commit write the same bytes: pages, notebooks, figures.

The second build runs in another folder at another time, as a second clone
would; the first is the shared ``built_copy``. Any file that differs is listed,
and so is any cell whose output differs, with its page and line.
"""

import filecmp

import pytest

from site_copy import build, make_copy, outputs_that_differ

pytestmark = pytest.mark.build

# The site a reader gets (html) and the executed notebooks behind it.
OUTPUTS = ("html", "jupyter_execute")


def files_under(folder):
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def test_two_clean_builds_are_byte_identical(built_copy, fresh_folder):
    second = make_copy(fresh_folder / "site")
    result = build(second)
    assert result.returncode == 0, result.log

    assert outputs_that_differ(built_copy, second) == []
    differences = []
    for output in OUTPUTS:
        first_dir, second_dir = built_copy / "_build" / output, second / "_build" / output
        first_files, second_files = files_under(first_dir), files_under(second_dir)
        differences += [f"only in one build: {output}/{name}"
                        for name in sorted(first_files ^ second_files)]
        differences += [
            f"differs: {output}/{name}" for name in sorted(first_files & second_files)
            if not filecmp.cmp(first_dir / name, second_dir / name, shallow=False)
        ]
    assert differences == [], "\n".join(differences)


def test_the_comparison_covers_figures_and_notebooks(built_copy):
    html = built_copy / "_build" / "html"
    assert list(html.glob("_images/*.png")), "the figure page drew no figure"
    assert (built_copy / "_build" / "jupyter_execute" / "figure-page.ipynb").is_file()
