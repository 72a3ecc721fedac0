"""Wrong docs cannot build: one row per mistake the build catches.

``FAULTS`` has one row for each member of ``autograd_docs.diagnostics.AuthorError``
(``test_every_author_error_has_a_fault`` fails until it does). A row says how to
make the mistake in a private copy of the small site (``tests/small_site``), and
where and what the failed build must say: one line that names the file (and
line, where Sphinx knows it) and what to do, not a traceback dump. Rows whose
warnings arise apart are made in one copy and built once (``TOGETHER``): one
build reports every author's mistake, each at its own page and line. The rows
about the code a page runs (``ON_OWN_PAGES``) are each made on a copy of the
test page of its own, as a page stops at its first raised cell, and built
together, twice (``cell_raised``: an unchanged failed page fails again): most of
an executing build's CPU-s is Sphinx and the fork server's start, not the page.
Run one row with its group with ``-k cell_raised`` (a failure names the row:
``row cell_raised: ...``); ``-rP`` prints what the author reads.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograd_docs.code_cells import code_cells
from autograd_docs.devkit.builds import write
from autograd_docs.diagnostics import AuthorError

from site_copy import (
    PAGE,
    SMALL_SITE,
    build,
    outputs_that_differ,
    replace,
    with_front_matter,
)

pytestmark = pytest.mark.build

ANSI_ESCAPE = re.compile(r"\x1b\[")
SEVERITY = re.compile(r" (?:WARNING|ERROR): ")  # the list of problems leaves it out


# -- How to make a mistake, and where the build must point ---------------------------

def line_of(needle: str, file: str = PAGE) -> Callable[[Path], str]:
    """A location: ``file:N:``, N the first line containing ``needle``."""
    def at(folder: Path) -> str:
        lines = (folder / file).read_text(encoding="utf8").splitlines()
        return f"{file}:{next(i for i, line in enumerate(lines, 1) if needle in line)}:"
    return at


def fence_of(needle: str, file: str = PAGE) -> Callable[[Path], str]:
    """A location: ``file:N:``, N the opening fence of the cell holding ``needle``."""
    def at(folder: Path) -> str:
        text = (folder / file).read_text(encoding="utf8")
        inside = next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)
        fence = max(cell.fence_line for cell in code_cells(text) if cell.fence_line < inside)
        return f"{file}:{fence}:"
    return at


def append_line(line: str, file: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        with (folder / file).open("a", encoding="utf8") as out:
            out.write(f"\n{line}\n")
    return edit


def add_page(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: write(folder / "docs" / f"{name}.md", text)


@dataclass(frozen=True)
class Fault:
    """One mistake: how to make it, and what the failed build must say where."""

    edit: Callable[[Path], None]
    at: Callable[[Path], str] | str | None  # None: the warning names no file
    says: tuple[str, ...]
    builder: str = "html"
    builds: int = 1  # > 1: a second build of the unchanged copy must fail too
    timeout: int = 300


TIMEOUT_PAGE = with_front_matter(
    (SMALL_SITE / "test-page.md").read_text(encoding="utf8").replace(
        "print(z.grad)\n", "print(z.grad)\n\nimport time\ntime.sleep(600)\n"),
    "mystnb:\n  execution_timeout: 2\n")

FAULTS: dict[AuthorError, Fault] = {
    AuthorError.CELL_RAISED: Fault(
        replace("print(z.grad)\n", "print(z.grad)\ntorch.ones(2).backward()\n"),
        fence_of("print(z.grad)"),
        ("cell raised RuntimeError:", "tag it 'raises-exception'",
         "reports/test-page.err.log"),
        builds=2),
    AuthorError.CLAIM_FAILED: Fault(
        # PyTorch "changes": the page now prints 2z, the prose still says z.
        replace("z.backward(z)", "z.backward(2 * z)"),
        fence_of("check_close(z.grad"),
        ("claim no longer holds: the identity gives the seed back",
         "fix the code the claim checks, or the prose it quotes")),
    AuthorError.QUOTE_NOT_IN_PROSE: Fault(
        # The checked sentence is reworded; its check still quotes the old words.
        replace("comes back for the identity.", "is returned for the identity."),
        line_of('quote="comes back for the identity"'),
        ("the check here quotes 'comes back for the identity', which the page's prose "
         "no longer says", "make the check prove the sentence as the page now says it")),
    AuthorError.QUOTE_ON_DECLARED: Fault(
        # The checked sentence is declared rhetoric: it may no longer carry a check.
        replace("The {term}`seed` of", "% rhetoric\nThe {term}`seed` of"),
        line_of('quote="comes back for the identity"'),
        ("the check here quotes 'comes back for the identity', in a sentence declared "
         "'% rhetoric'", "asserts nothing a check can prove")),
    AuthorError.UNKNOWN_CLAIM_COUNT: Fault(
        replace("Its points come from", "{claim-count}`proven overall` of its points come from"),
        line_of("{claim-count}`proven overall`"),
        ("{claim-count}`proven overall`: make claims prints no such count",)),
    AuthorError.CELL_TIMEOUT: Fault(
        add_page("test-page", TIMEOUT_PAGE), fence_of("print(z.grad)"),
        ("cell did not finish within 2 s", "execution_timeout"), timeout=120),
    AuthorError.STOPPED_RAISING: Fault(
        replace("torch.ones(2).backward()",
                "torch.ones(2, requires_grad=True).sum().backward()"),
        fence_of(":tags: [raises-exception]"),
        ("ran without raising", "make it raise again")),
    AuthorError.DANGLING_REF: Fault(
        replace("{ref}`test-page`", "{ref}`test-pgae`"), line_of("{ref}`test-pgae`"),
        ("no label 'test-pgae'",)),
    AuthorError.LABEL_NOT_ON_TITLE: Fault(
        replace("Back to {ref}`test-page`",
                "(back-link)=\nBack to {ref}`back-link`"), line_of("{ref}`back-link`"),
        ("label 'back-link' is not above a title", "{ref}`text <back-link>`")),
    AuthorError.DANGLING_DOC: Fault(
        replace("{doc}`reference/glossary`", "{doc}`reference/glosary`"),
        line_of("{doc}`reference/glosary`"), ("no page 'reference/glosary'",)),
    AuthorError.UNKNOWN_TERM: Fault(
        replace("{term}`seed`", "{term}`seeds`"), line_of("{term}`seeds`"),
        ("'seeds' is not in the glossary",)),
    AuthorError.NOT_IN_TOCTREE: Fault(
        add_page("lost-page", "(lost-page)=\n# Find this page\n"), "docs/lost-page.md",
        ("no toctree lists this page", "add 'lost-page' to the toctree in docs/index.md")),
    AuthorError.INCLUDE_FILE_GONE: Fault(
        lambda folder: (folder / "snippets" / "why_backward_z_gives_z.py").unlink(),
        line_of("{literalinclude}"),
        ("there is no file snippets/why_backward_z_gives_z.py", "restore the snippet")),
    AuthorError.INCLUDE_MARKER_GONE: Fault(
        replace("# [start-question]", "# [start-the-question]",
                "snippets/why_backward_z_gives_z.py"),
        line_of("{literalinclude}"),
        ("snippets/why_backward_z_gives_z.py has no line with '# [start-question]'",
         "put the marker back in the snippet")),
    AuthorError.DOCTEST_OUTPUT: Fault(
        replace("tensor(3.)", "tensor(4.)"), None,
        ("Expected:\n    tensor(4.)\nGot:\n    tensor(3.)",
         "make the expected output what PyTorch prints"),
        builder="doctest"),
    AuthorError.UNKNOWN_API: Fault(
        replace("{py:meth}`torch.Tensor.backward`", "{py:meth}`torch.Tensor.backwards`"),
        line_of("torch.Tensor.backwards"),
        ("{py:meth}`torch.Tensor.backwards`: torch.Tensor has no attribute 'backwards'",
         "spell the name as Python imports it")),
    AuthorError.TEX_INVALID: Fault(
        replace("comes back for the identity.",
                "comes back for the identity, $\\frac{1}$."),
        "docs/test-page.md", ("cannot render equation '\\\\frac{1}'", "fix the equation's TeX")),
    AuthorError.TEX_ACROSS_EQUATIONS: Fault(
        replace("comes back for the identity.",
                "comes back for the identity, $\\def\\one{1} \\one$."),
        "docs/test-page.md", ("would reach other equations (\\def)",
                              "write the command out in each equation")),
    AuthorError.CODE_TOO_WIDE: Fault(
        # A 49-character line at the top level, where a phone shows 44; the check
        # switched on (the copy holds it off for its fixtures: site_copy.make_copy).
        lambda folder: (
            replace("z.backward(z)\n", "z.backward(z)\n"
                    "z_grad_as_a_list = z.grad.detach().cpu().tolist()\n")(folder),
            append_line("autograd_docs_check_code_width = True", "conf.py")(folder)),
        line_of("z_grad_as_a_list ="),
        ("visible code line 49 characters wide: a 375 px phone shows 44 here (column)",
         "break the line")),
    AuthorError.SEARCH_QUESTIONS_NOT_A_LIST: Fault(
        replace("  language: python\n---\n",
                "  language: python\nsearch_questions: grad is None\n---\n"),
        line_of("search_questions:"),
        ("front matter search_questions is not a list of strings",
         "write each question on its own line")),
    AuthorError.OUTPUT_VARIES: None,  # made by two builds: see its own test below
}

# Other ways to make a member's mistake, each a row of its own: name -> (member, fault).
VARIANTS: dict[str, tuple[AuthorError, Fault]] = {
    # A hidden check may state its claim with a plain ``assert``: it fails like a
    # ClaimFailed, not as a cell to tag 'raises-exception'.
    "assert_in_a_check": (AuthorError.CLAIM_FAILED, Fault(
        replace('check_close(z.grad, z, "the identity gives the seed back")',
                'assert z.grad.sum() > 0, "the seed\'s entries add up to more than 0"'),
        fence_of("assert z.grad.sum()"),
        ("claim no longer holds: the seed's entries add up to more than 0",))),
}
# Every row by its name (a member's subtype, or a variant's name): member, fault.
ROWS: dict[str, tuple[AuthorError, Fault]] = {
    **{error.subtype: (error, fault) for error, fault in FAULTS.items() if fault}, **VARIANTS}


def fails_with(result, location: str | None, *phrases: str) -> str:
    """Assert the build failed with one warning at ``location`` saying ``phrases``."""
    assert result.returncode != 0, f"the build should have failed:\n{result.log}"
    assert not ANSI_ESCAPE.search(result.log), "the log has terminal colour codes"
    assert "Traceback (most recent call last)" not in result.log, result.log
    if location is None:  # a report about the whole build, after its details
        for phrase in phrases:
            assert phrase in result.log, f"{phrase!r} not in the log:\n{result.log}"
        assert result.problems, f"no list of problems at the end:\n{result.log}"
        return result.log
    matching = [w for w in result.warning_lines if location in w]
    assert len(matching) == 1, (
        f"expected one warning at {location}, got {matching}:\n{result.log}")
    for phrase in phrases:
        assert phrase in matching[0], f"{phrase!r} not in {matching[0]!r}"
    # Listed again at the end, once, with the same words (the line above may
    # begin with a progress message: "checking consistency... docs/...").
    listed = [p for p in result.problems if p.startswith(location)]
    said = matching[0][matching[0].index(location):]
    assert listed == [SEVERITY.sub(" ", said, count=1)], (
        f"expected {location} once in the list of problems, got {listed}:\n{result.log}")
    print(matching[0])  # what the author reads; `pytest -rP` shows it
    return matching[0]


def test_every_author_error_has_a_fault():
    assert set(FAULTS) == set(AuthorError)


# Mistakes in the code a page runs. A page stops at its first raised cell, so each
# is made on a copy of the test page of its own (``made``), and one build executes
# them all: one fork server and one Sphinx run, not one each (issue 41).
ON_OWN_PAGES = ("cell_raised", "claim_failed", "assert_in_a_check", "stopped_raising",
                "code_too_wide", "cell_timeout")
# Mistakes one build reports together (Sphinx's --keep-going), each at its own
# file and line: a row added to a group must warn where no other row of it does
# (fails_with expects one warning a location).
TOGETHER = [
    ("unknown_term", "unknown_claim_count", "include_marker_gone", "dangling_ref",
     "not_in_toctree", "quote_not_in_prose"),
    ("unknown_api", "dangling_doc", "quote_on_declared", "include_file_gone",
     "search_questions_not_a_list"),
    ON_OWN_PAGES,
]
BUILDS = TOGETHER + [(name,) for name in ROWS if not any(name in group for group in TOGETHER)]


def made(name: str, folder: Path) -> tuple[Callable[[Path], str] | str | None, tuple[str, ...]]:
    """Make row ``name``'s mistake in ``folder``: where the build must warn (located
    once every row of the group is made: a row may move another's lines), and what
    it must say. A row ``ON_OWN_PAGES`` breaks the test page, which is then moved
    to ``docs/<name>.md`` (``_`` as ``-``, in the toctree) and the test page put
    back: what the row says of the test page it says of its own."""
    fault = ROWS[name][1]
    if name not in ON_OWN_PAGES:
        fault.edit(folder)
        return fault.at, fault.says
    unbroken = (folder / PAGE).read_text(encoding="utf8")
    fault.edit(folder)
    location = fault.at(folder) if callable(fault.at) else fault.at
    page = name.replace("_", "-")
    broken = (folder / PAGE).read_text(encoding="utf8")
    write(folder / PAGE, unbroken)
    add_page(page, broken.replace("test-page", page))(folder)
    replace("test-page\n", f"test-page\n{page}\n", "docs/index.md")(folder)
    return (location and location.replace(PAGE, f"docs/{page}.md"),
            tuple(phrase.replace("test-page", page) for phrase in fault.says))


@pytest.mark.parametrize("rows", BUILDS, ids="+".join)
def test_the_build_reports(rows, warm_copy):
    faults = [ROWS[name][1] for name in rows]
    (builder,) = {fault.builder for fault in faults}
    expected = [(at(warm_copy) if callable(at) else at, says)
                for at, says in [made(name, warm_copy) for name in rows]]
    for _ in range(max(fault.builds for fault in faults)):  # an unchanged page must
        start = time.monotonic()                            # not let a rebuild pass
        result = build(warm_copy, builder, timeout=max(fault.timeout for fault in faults))
        seconds = time.monotonic() - start
        for name, (location, says) in zip(rows, expected, strict=True):
            error = ROWS[name][0]
            try:
                said = fails_with(result, location, *says)
            except AssertionError as failure:
                raise AssertionError(f"row {name}: {failure}") from None
            assert f"[autograd_docs.{error.subtype}]" in said, f"row {name}: the warning names its member"
            assert error in [w.error for w in result.warnings], f"row {name}: tools read the member back"
        assert str(warm_copy) not in result.log, "the log names absolute paths"
    if "cell_timeout" in rows:
        assert seconds < 60, "the timeout did not stop the cell"
        assert "Timeout waiting for execute reply" not in result.log  # said once
    if "doctest_output" in rows:
        fence = line_of("{doctest}")(warm_copy).split(":")[1]  # examples count from it
        assert re.search(rf'File "[^"]*test-page.md", line {fence}', result.log), result.log


# -- What make test catches beyond the build ----------------------------------------

def test_output_varies(warm_copy):
    """Two builds of the same source, as two clones would make them, differ in a
    cell that prints an unseeded random draw: that cell is named."""
    twins = [warm_copy, warm_copy.with_name(warm_copy.name + "-twin")]
    shutil.copytree(warm_copy, twins[1], symlinks=True)
    for twin in twins:
        shutil.copy(SMALL_SITE / "extra" / "random-page.md", twin / "docs")
        replace("test-page\n", "random-page\ntest-page\n", "docs/index.md")(twin)
        result = build(twin)
        assert result.returncode == 0, result.log
    differences = outputs_that_differ(*twins)
    fence = fence_of("torch.randn", "docs/random-page.md")(warm_copy)
    assert len(differences) == 1, differences
    assert differences[0].startswith(fence + " ")
    assert AuthorError.OUTPUT_VARIES.text() in differences[0]
    print(differences[0])


def test_a_snippet_edited_after_a_build_re_executes_its_pages(warm_copy):
    snippet = warm_copy / "snippets" / "chosen_seed.py"
    shutil.copy(SMALL_SITE / "extra" / "chosen_seed.py", snippet)
    replace("```{doctest}", "```{code-cell} ipython3\nfrom chosen_seed import SEED\n\n"
            'print(f"the seed is {SEED}")\n```\n\n```{doctest}')(warm_copy)
    html = warm_copy / "_build" / "html" / "test-page.html"
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    assert "the seed is 1234567" in html.read_text(encoding="utf8")
    replace("SEED = 1234567", "SEED = 7654321", "snippets/chosen_seed.py")(warm_copy)
    result = build(warm_copy)
    assert result.returncode == 0, result.log
    page = html.read_text(encoding="utf8")
    assert "the seed is 7654321" in page and "1234567" not in page
