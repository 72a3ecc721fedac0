"""Wrong docs cannot build: break a copy of the site one way at a time.

Each test injects one mistake an author could make into a small copy of the
site, runs the Makefile's strict build on it, and checks that the build fails
with one line that names the file (and line, where Sphinx knows it) and says
what to do, not a traceback dump.
"""

import re
import shutil
import time

import pytest

from site_copy import TEST_PAGE, build, make_copy, outputs_that_differ, page, write

pytestmark = pytest.mark.build

ANSI_ESCAPE = re.compile(r"\x1b\[")


def break_test_page(folder, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the copy's test page."""
    path = folder / "docs" / "test-page.md"
    text = path.read_text(encoding="utf8")
    assert old in text, f"the test page no longer contains {old!r}"
    write(path, text.replace(old, new))


def line_of(folder, needle: str, name: str = "test-page") -> int:
    """1-based line of the first line containing ``needle`` in a copy's page."""
    lines = (folder / "docs" / f"{name}.md").read_text(encoding="utf8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def fails_with(result, location: str, *phrases: str) -> str:
    """Assert the build failed with one warning at ``location`` saying ``phrases``."""
    assert result.returncode != 0, f"the build should have failed:\n{result.log}"
    assert not ANSI_ESCAPE.search(result.log), "the log has terminal colour codes"
    assert "Traceback (most recent call last)" not in result.log, result.log
    matching = [w for w in result.warnings if location in w]
    assert len(matching) == 1, (
        f"expected one warning at {location}, got {matching}:\n{result.log}")
    for phrase in phrases:
        assert phrase in matching[0], f"{phrase!r} not in {matching[0]!r}"
    return matching[0]


def test_a_cell_that_raises_fails_the_build(warm_copy):
    break_test_page(warm_copy, "print(z.grad)\n", "print(z.grad)\ntorch.ones(2).backward()\n")
    fence = line_of(warm_copy, "{code-cell}")
    for attempt in ("first build", "unchanged rebuild"):
        result = build(warm_copy)
        fails_with(result, f"docs/test-page.md:{fence}:", "cell raised RuntimeError:",
                   "tag it 'raises-exception'", "reports/test-page.err.log")


def test_a_tagged_cell_that_stops_raising_fails_the_build(warm_copy):
    break_test_page(warm_copy, "torch.ones(2).backward()",
                    "torch.ones(2, requires_grad=True).sum().backward()")
    result = build(warm_copy)
    fence = line_of(warm_copy, ":tags: [raises-exception]") - 1
    fails_with(result, f"docs/test-page.md:{fence}:", "ran without raising",
               "make it raise again")


def test_an_oracle_that_disagrees_with_the_output_fails_the_build(warm_copy):
    # PyTorch "changes": the page now prints 2z, the prose still says z.
    break_test_page(warm_copy, "z.backward(z)", "z.backward(2 * z)")
    result = build(warm_copy)
    fence = line_of(warm_copy, ":tags: [remove-cell]") - 1
    fails_with(result, f"docs/test-page.md:{fence}:",
               "claim no longer holds: the identity gives the seed back",
               "fix the code the claim checks, or the prose it quotes")


def test_a_wrong_doctest_fails_the_doctest_build(warm_copy):
    break_test_page(warm_copy, "tensor(3.)", "tensor(4.)")
    result = build(warm_copy, "doctest")
    assert result.returncode != 0, result.log
    expected = line_of(warm_copy, "{doctest}")  # Sphinx counts from the fence
    assert re.search(rf'File "[^"]*test-page.md", line {expected}', result.log), (
        result.log)
    assert "Expected:\n    tensor(4.)\nGot:\n    tensor(3.)" in result.log, result.log
    assert "make the expected output what PyTorch prints" in result.log


@pytest.mark.parametrize("old, new, phrase", [
    ("{ref}`test-page`", "{ref}`test-pgae`", "no label 'test-pgae'"),
    ("{doc}`reference/glossary`", "{doc}`reference/glosary`",
     "no page 'reference/glosary'"),
    ("{term}`seed`", "{term}`seeds`", "'seeds' is not in the glossary"),
])
def test_a_dangling_reference_fails_the_build(warm_copy, old, new, phrase):
    break_test_page(warm_copy, old, new)
    result = build(warm_copy)
    line = line_of(warm_copy, new)
    fails_with(result, f"docs/test-page.md:{line}:", phrase)


def test_a_literalinclude_marker_that_is_gone_fails_the_build(warm_copy):
    snippet = warm_copy / "snippets" / "why_backward_z_gives_z.py"
    write(snippet, snippet.read_text(encoding="utf8").replace(
        "# [start-question]", "# [start-the-question]"))
    result = build(warm_copy)
    line = line_of(warm_copy, "{literalinclude}")
    fails_with(result, f"docs/test-page.md:{line}:",
               "snippets/why_backward_z_gives_z.py has no line with '# [start-question]'",
               "put the marker back in the snippet")


def test_a_missing_snippet_fails_the_build(warm_copy):
    (warm_copy / "snippets" / "why_backward_z_gives_z.py").unlink()
    result = build(warm_copy)
    line = line_of(warm_copy, "{literalinclude}")
    fails_with(result, f"docs/test-page.md:{line}:",
               "there is no file snippets/why_backward_z_gives_z.py",
               "restore the snippet")


def test_a_cell_that_never_finishes_times_out_in_seconds(warm_copy):
    write(warm_copy / "docs" / "test-page.md", page(
        TEST_PAGE.replace("print(z.grad)\n", "print(z.grad)\n\nimport time\n"
                          "time.sleep(600)\n"),
        front_matter="mystnb:\n  execution_timeout: 2\n"))
    start = time.monotonic()
    result = build(warm_copy, timeout=120)
    assert time.monotonic() - start < 60, "the timeout did not stop the cell"
    fence = line_of(warm_copy, "{code-cell}")
    fails_with(result, f"docs/test-page.md:{fence}:",
               "cell did not finish within 2 s", "execution_timeout")


def test_output_that_depends_on_unseeded_randomness_is_detected(built_copy, fresh_folder):
    random_page = page("""\
        (random-page)=
        # Draw a random gradient

        ```{code-cell} ipython3
        import torch

        torch.randn(3)
        ```
        """)
    builds = []
    for name in ("first", "second"):
        folder = fresh_folder / name
        shutil.copytree(built_copy, folder, symlinks=True)
        write(folder / "docs" / "random-page.md", random_page)
        index = folder / "docs" / "index.md"
        write(index, index.read_text(encoding="utf8").replace(
            "test-page\n", "random-page\ntest-page\n"))
        assert build(folder).returncode == 0
        builds.append(folder)
    fence = line_of(builds[0], "{code-cell}", "random-page")
    differences = outputs_that_differ(*builds)
    assert len(differences) == 1, differences
    assert differences[0].startswith(f"docs/random-page.md:{fence}: ")
    assert "torch.manual_seed(0)" in differences[0]


def test_a_snippet_edited_after_a_build_re_executes_its_pages(warm_copy):
    snippet = warm_copy / "snippets" / "chosen_seed.py"
    source = '''"""A seed pages print."""

SEED = {value}


def main() -> None:
    assert SEED > 0


if __name__ == "__main__":
    main()
'''
    write(snippet, source.format(value=1234567))
    write(warm_copy / "docs" / "test-page.md", page(TEST_PAGE + """
```{code-cell} ipython3
from chosen_seed import SEED

print(f"the seed is {SEED}")
```
"""))
    assert build(warm_copy).returncode == 0
    html = warm_copy / "_build" / "html" / "test-page.html"
    assert "the seed is 1234567" in html.read_text(encoding="utf8")
    write(snippet, source.format(value=7654321))
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    text = html.read_text(encoding="utf8")
    assert "the seed is 7654321" in text and "1234567" not in text


def test_a_page_in_no_toctree_fails_the_build(warm_copy):
    write(warm_copy / "docs" / "lost-page.md", "(lost-page)=\n# Find this page\n")
    result = build(warm_copy)
    fails_with(result, "docs/lost-page.md", "no toctree lists this page",
               "add 'lost-page' to the toctree in docs/index.md")
