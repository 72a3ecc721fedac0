"""Wrong docs cannot build: break a copy of the site one way at a time.

Each scenario injects one mistake an author could make into its own copy of the
small site (``site_copy``), and runs the Makefile's strict build on it. Each test
checks that its build failed with one line that names the file (and line, where
Sphinx knows it) and says what to do, not a traceback dump.

The builds mostly wait on kernels, so the scenarios all start at once, two at a
time, and each test waits for its own.
"""

import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from site_copy import TEST_PAGE, build, outputs_that_differ, page, write

pytestmark = pytest.mark.build

ANSI_ESCAPE = re.compile(r"\x1b\[")
WORKERS = 2  # CI's cores; more only queue for the same CPU

SCENARIOS = {}


def scenario(func):
    """Register ``func(folder)``: break the copy in ``folder``, build, return results.

    The test named ``test_<func name>`` asserts on what it returns.
    """
    SCENARIOS[func.__name__] = func
    return func


@pytest.fixture(scope="module")
def outcomes(request, built_copy, workspace):
    """Scenario name -> future of its result, for the scenarios selected to run."""
    selected = {item.name.split("[")[0].removeprefix("test_")
                for item in request.session.items}

    def run(name):
        folder = workspace / "faults" / name
        shutil.copytree(built_copy, folder, symlinks=True)
        return SCENARIOS[name](folder)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        yield {name: pool.submit(run, name) for name in SCENARIOS if name in selected}


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
    print(matching[0])  # what the author reads; `pytest -rP` shows it
    return matching[0]


# -- A cell that raises, untagged ---------------------------------------------------

@scenario
def a_cell_that_raises_fails_the_build(folder):
    break_test_page(folder, "print(z.grad)\n", "print(z.grad)\ntorch.ones(2).backward()\n")
    # Twice: an unchanged page must not let the second build pass.
    return folder, build(folder), build(folder)


def test_a_cell_that_raises_fails_the_build(outcomes):
    folder, *results = outcomes["a_cell_that_raises_fails_the_build"].result()
    fence = line_of(folder, "{code-cell}")
    for result in results:
        fails_with(result, f"docs/test-page.md:{fence}:", "cell raised RuntimeError:",
                   "tag it 'raises-exception'", "reports/test-page.err.log")


# -- A cell tagged raises-exception that no longer raises ---------------------------

@scenario
def a_tagged_cell_that_stops_raising_fails_the_build(folder):
    break_test_page(folder, "torch.ones(2).backward()",
                    "torch.ones(2, requires_grad=True).sum().backward()")
    return folder, build(folder)


def test_a_tagged_cell_that_stops_raising_fails_the_build(outcomes):
    folder, result = outcomes["a_tagged_cell_that_stops_raising_fails_the_build"].result()
    fence = line_of(folder, ":tags: [raises-exception]") - 1
    fails_with(result, f"docs/test-page.md:{fence}:", "ran without raising",
               "make it raise again")


# -- An oracle check that disagrees with the printed result -------------------------

@scenario
def an_oracle_that_disagrees_with_the_output_fails_the_build(folder):
    # PyTorch "changes": the page now prints 2z, the prose still says z.
    break_test_page(folder, "z.backward(z)", "z.backward(2 * z)")
    return folder, build(folder)


def test_an_oracle_that_disagrees_with_the_output_fails_the_build(outcomes):
    folder, result = outcomes[
        "an_oracle_that_disagrees_with_the_output_fails_the_build"].result()
    fence = line_of(folder, ":tags: [remove-cell]") - 1
    fails_with(result, f"docs/test-page.md:{fence}:",
               "claim no longer holds: the identity gives the seed back",
               "fix the code the claim checks, or the prose it quotes")


# -- A {doctest} whose expected output is wrong -------------------------------------

@scenario
def a_wrong_doctest_fails_the_doctest_build(folder):
    break_test_page(folder, "tensor(3.)", "tensor(4.)")
    return folder, build(folder, "doctest")


def test_a_wrong_doctest_fails_the_doctest_build(outcomes):
    folder, result = outcomes["a_wrong_doctest_fails_the_doctest_build"].result()
    assert result.returncode != 0, result.log
    fence = line_of(folder, "{doctest}")  # Sphinx counts the example's lines from here
    assert re.search(rf'File "[^"]*test-page.md", line {fence}', result.log), result.log
    assert "Expected:\n    tensor(4.)\nGot:\n    tensor(3.)" in result.log, result.log
    assert "make the expected output what PyTorch prints" in result.log
    print("\n".join(line for line in result.log.splitlines()
                    if line.startswith('File "') or "WARNING" in line))


# -- A broken {ref}, {doc} or glossary {term} ---------------------------------------

DANGLING = {
    "ref": ("{ref}`test-page`", "{ref}`test-pgae`", "no label 'test-pgae'"),
    "doc": ("{doc}`reference/glossary`", "{doc}`reference/glosary`",
            "no page 'reference/glosary'"),
    "term": ("{term}`seed`", "{term}`seeds`", "'seeds' is not in the glossary"),
}


@scenario
def a_dangling_reference_fails_the_build(folder):
    results = {}
    for kind, (old, new, _) in DANGLING.items():
        break_test_page(folder, old, new)
        results[kind] = build(folder)
        break_test_page(folder, new, old)
    return folder, results


@pytest.mark.parametrize("kind", DANGLING)
def test_a_dangling_reference_fails_the_build(outcomes, kind):
    folder, results = outcomes["a_dangling_reference_fails_the_build"].result()
    old, _, phrase = DANGLING[kind]
    line = line_of(folder, old)  # the page is restored by now
    fails_with(results[kind], f"docs/test-page.md:{line}:", phrase)


# -- A literalinclude marker that is gone, a snippet that is gone ------------------

@scenario
def a_literalinclude_marker_that_is_gone_fails_the_build(folder):
    snippet = folder / "snippets" / "why_backward_z_gives_z.py"
    write(snippet, snippet.read_text(encoding="utf8").replace(
        "# [start-question]", "# [start-the-question]"))
    return folder, build(folder)


def test_a_literalinclude_marker_that_is_gone_fails_the_build(outcomes):
    folder, result = outcomes[
        "a_literalinclude_marker_that_is_gone_fails_the_build"].result()
    line = line_of(folder, "{literalinclude}")
    fails_with(result, f"docs/test-page.md:{line}:",
               "snippets/why_backward_z_gives_z.py has no line with '# [start-question]'",
               "put the marker back in the snippet")


@scenario
def a_missing_snippet_fails_the_build(folder):
    (folder / "snippets" / "why_backward_z_gives_z.py").unlink()
    return folder, build(folder)


def test_a_missing_snippet_fails_the_build(outcomes):
    folder, result = outcomes["a_missing_snippet_fails_the_build"].result()
    line = line_of(folder, "{literalinclude}")
    fails_with(result, f"docs/test-page.md:{line}:",
               "there is no file snippets/why_backward_z_gives_z.py",
               "restore the snippet")


# -- A cell that never finishes -------------------------------------------------------

@scenario
def a_cell_that_never_finishes_times_out_in_seconds(folder):
    write(folder / "docs" / "test-page.md", page(
        TEST_PAGE.replace("print(z.grad)\n",
                          "print(z.grad)\n\nimport time\ntime.sleep(600)\n"),
        front_matter="mystnb:\n  execution_timeout: 2\n"))
    start = time.monotonic()
    result = build(folder, timeout=120)
    return folder, result, time.monotonic() - start


def test_a_cell_that_never_finishes_times_out_in_seconds(outcomes):
    folder, result, seconds = outcomes[
        "a_cell_that_never_finishes_times_out_in_seconds"].result()
    assert seconds < 60, "the timeout did not stop the cell"
    fence = line_of(folder, "{code-cell}")
    fails_with(result, f"docs/test-page.md:{fence}:",
               "cell did not finish within 2 s", "execution_timeout")
    assert "Timeout waiting for execute reply" not in result.log  # said once, above


# -- Output that depends on unseeded randomness ------------------------------------

RANDOM_PAGE = page("""\
    (random-page)=
    # Draw a random gradient

    ```{code-cell} ipython3
    import torch

    torch.randn(3)
    ```
    """)


@scenario
def output_that_depends_on_unseeded_randomness_is_detected(folder):
    # Two builds of the same source, as two clones would make them.
    twins = [folder, folder.with_name(folder.name + "-twin")]
    shutil.copytree(folder, twins[1], symlinks=True)
    for twin in twins:
        write(twin / "docs" / "random-page.md", RANDOM_PAGE)
        index = twin / "docs" / "index.md"
        write(index, index.read_text(encoding="utf8").replace(
            "test-page\n", "random-page\ntest-page\n"))
        result = build(twin)
        assert result.returncode == 0, result.log
    return folder, outputs_that_differ(*twins)


def test_output_that_depends_on_unseeded_randomness_is_detected(outcomes):
    folder, differences = outcomes[
        "output_that_depends_on_unseeded_randomness_is_detected"].result()
    fence = line_of(folder, "{code-cell}", "random-page")
    assert len(differences) == 1, differences
    assert differences[0].startswith(f"docs/random-page.md:{fence}: ")
    assert "torch.manual_seed(0)" in differences[0]
    print(differences[0])


# -- A snippet edited after a cached build ------------------------------------------

SEED_SNIPPET = '''"""A seed pages print."""

SEED = {value}


def main() -> None:
    assert SEED > 0


if __name__ == "__main__":
    main()
'''


@scenario
def a_snippet_edited_after_a_build_re_executes_its_pages(folder):
    snippet = folder / "snippets" / "chosen_seed.py"
    write(snippet, SEED_SNIPPET.format(value=1234567))
    write(folder / "docs" / "test-page.md", page(TEST_PAGE + """
```{code-cell} ipython3
from chosen_seed import SEED

print(f"the seed is {SEED}")
```
"""))
    html = folder / "_build" / "html" / "test-page.html"
    before = build(folder), html.read_text(encoding="utf8")
    write(snippet, SEED_SNIPPET.format(value=7654321))
    after = build(folder), html.read_text(encoding="utf8")
    return before, after


def test_a_snippet_edited_after_a_build_re_executes_its_pages(outcomes):
    before, after = outcomes[
        "a_snippet_edited_after_a_build_re_executes_its_pages"].result()
    assert before[0].returncode == 0, before[0].log
    assert "the seed is 1234567" in before[1]
    assert after[0].returncode == 0, after[0].log
    assert "the seed is 7654321" in after[1] and "1234567" not in after[1]


# -- A page left out of every toctree -------------------------------------------------

@scenario
def a_page_in_no_toctree_fails_the_build(folder):
    write(folder / "docs" / "lost-page.md", "(lost-page)=\n# Find this page\n")
    return folder, build(folder)


def test_a_page_in_no_toctree_fails_the_build(outcomes):
    _, result = outcomes["a_page_in_no_toctree_fails_the_build"].result()
    fails_with(result, "docs/lost-page.md", "no toctree lists this page",
               "add 'lost-page' to the toctree in docs/index.md")
