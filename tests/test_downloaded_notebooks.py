"""Every notebook a reader downloads runs where readers run it, and prints what the page shows.

A reader's Jupyter starts a stock ipykernel in an empty folder, with torch, numpy
and matplotlib installed and no ``snippets/`` on its path. So each ``.ipynb`` that
the last ``make html`` put beside its page is copied alone into an empty folder and
executed top to bottom there, in the standard ``python3`` kernel (not the build's
page kernel), with ``PYTHONPATH`` cleared. Every cell must print what the page
shows: the same text, the same error, the same figure bytes (cells tagged
``measured`` time the machine, so only they may print other numbers).

Jupyter and Colab render plain Markdown: no notebook's Markdown may keep a
MyST-only construct (``myst_only`` finds roles, directive fences, ``(label)=``
lines, ``%`` comments and ``{{ substitutions }}``), and each starts with the
cells that say which torch made its outputs. Each page's ``.py`` download runs
with ``python`` in an empty folder too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from autograd_docs.devkit import stock_kernel
from autograd_docs.devkit.executed import merged_streams
from autograd_docs.html import plain_markdown as plain
from autograd_docs.html.notebooks import PROVENANCE, Provenance, reader_notebook, reader_script

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
DOWNLOADS = sorted(SITE.rglob("*.ipynb"))
SCRIPTS = [path.with_suffix(".py") for path in DOWNLOADS]


# What only the build gives a kernel: the snippets on the path, the page kernel's
# kernelspec, the figures' fixed salt and the fixed hash seed.
BUILD_ONLY = ("PYTHONPATH", "JUPYTER_PATH", "MATPLOTLIBRC", "PYTHONHASHSEED")
MEASURED = "measured"  # cells that time this machine: their output changes on purpose


@pytest.fixture
def reader_environment(monkeypatch):
    for name in BUILD_ONLY:
        monkeypatch.delenv(name, raising=False)


def shown(cell) -> list:
    """What a code cell displays, in a form two runs can be compared by: each
    stream's prints joined into its first block (``merged_streams``), as the
    build records them (nbclient's coalesce_streams: autograd_docs/execution/
    cache_key.py). A reader's Jupyter keeps each message where it came; joined by
    the same rule, the two compare."""
    found = []
    for output in merged_streams(cell.get("outputs", [])):
        kind = output["output_type"]
        if kind == "stream":
            found.append((kind, output["name"], output["text"]))
        elif kind == "error":
            found.append((kind, output["ename"], output["evalue"]))
        else:
            data = output.get("data", {})
            found.append((kind, {mime: data[mime] for mime in sorted(data)
                                 if mime in ("text/plain", "image/png", "text/html")}))
    return found


def test_a_reader_notebook_leaves_out_hidden_checks_and_writes_what_it_imports(tmp_path):
    (tmp_path / "helpers.py").write_text("from shapes import square\n")
    (tmp_path / "shapes.py").write_text("def square(t):\n    return t * t\n")
    (tmp_path / "unused.py").write_text("")
    new = nbformat.v4
    page = new.new_notebook(cells=[
        new.new_code_cell("from oracle import check_close", metadata={"tags": ["remove-cell"]}),
        new.new_markdown_cell("Some prose."),
        new.new_code_cell("import torch\nfrom helpers import square\nsquare(torch.ones(2))"),
        new.new_code_cell("check_close(_, torch.ones(2), 'x')", metadata={"tags": ["remove-cell"]}),
    ], metadata={"source_map": [0, 3, 5, 9]})

    reader = reader_notebook(page, tmp_path)

    sources = [cell.source for cell in reader.cells]
    assert not any("check_close" in source for source in sources)
    written = [source.split("\n", 1) for source in sources if source.startswith("%%writefile")]
    assert written == [["%%writefile helpers.py", "from shapes import square\n"],
                       ["%%writefile shapes.py", "def square(t):\n    return t * t\n"]]
    assert sources.index(written[-1][0] + "\n" + written[-1][1]) < sources.index(page.cells[2].source)
    assert [cell.id for cell in reader.cells] == [f"cell-{i}" for i in range(len(reader.cells))]
    assert "source_map" not in reader.metadata
    assert len(page.cells) == 4, "the executed notebook itself is left as it was"


@pytest.mark.build
def test_the_build_wrote_downloads():
    assert DOWNLOADS, f"no notebooks under {SITE}: run `make html` first"


def test_the_reader_kernel_is_stock_ipykernel(reader_environment):
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert "ipykernel_launcher" in spec.argv, spec.argv


@pytest.mark.build
@pytest.mark.parametrize("download", DOWNLOADS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_downloaded_notebook_runs_alone_and_prints_what_the_page_shows(
    download, tmp_path, reader_environment
):
    folder = tmp_path / "reader"
    folder.mkdir()
    shutil.copyfile(download, folder / download.name)
    page = nbformat.read(folder / download.name, as_version=4)
    ran = nbformat.read(folder / download.name, as_version=4)
    # A kernel of its own (the python3 kernelspec, without the build's preloads),
    # its sockets not in the reader's folder.
    ran = stock_kernel.run_in_kernel(nbclient.execute, ran, str(folder), timeout=120,
                                     kernel_name="python3")

    assert sorted(p.stem for p in folder.glob("*.py")) == sorted(written_snippets(page))
    differ = [
        f"cell {index} ({before.source.splitlines()[0][:60]!r}):\n  page:   {shown(before)!r:.300}\n"
        f"  reader: {shown(after)!r:.300}"
        for index, (before, after) in enumerate(zip(page.cells, ran.cells))
        if before.cell_type == "code" and before.outputs and shown(before) != shown(after)
        and MEASURED not in before.metadata.get("tags", [])
    ]
    assert not differ, f"{download.relative_to(SITE)} prints differently:\n" + "\n".join(differ)


def written_snippets(notebook) -> list[str]:
    """The modules the notebook's own first cells write with ``%%writefile``."""
    return [cell.source.split()[1].removesuffix(".py") for cell in notebook.cells
            if cell.cell_type == "code" and cell.source.startswith("%%writefile ")]


# -- Plain Markdown ------------------------------------------------------------------

FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
ROLE = re.compile(r"\{[A-Za-z][\w:+.-]*\}(`+)")
TICKS = re.compile(r"`+")
LABEL = re.compile(r"^\s*\([^()\s]+\)=\s*$")
COMMENT = re.compile(r"^\s*%")
SUBSTITUTION = re.compile(r"\{\{[^{}]+\}\}")


def myst_only(markdown: str) -> list[str]:
    """The MyST-only constructs in ``markdown``, as ``line N: kind: text``.

    A directive fence (```{name} or :::{name}), a ``(label)=`` line, a ``%``
    comment line, a role ``{name}`...``` or a ``{{ substitution }}`` outside
    code; what a plain fence or a code span holds is code, and left alone.
    """
    found, fence = [], None
    for number, line in enumerate(markdown.splitlines(), 1):
        match = FENCE.match(line)
        if fence:
            if match and match["fence"][0] == fence[0] and len(match["fence"]) >= len(fence) \
                    and not match["info"].strip():
                fence = None
            continue
        if match:
            fence = match["fence"]
            if match["info"].strip().startswith("{"):
                found.append(f"line {number}: directive: {line.strip()}")
            elif fence[0] == ":":
                found.append(f"line {number}: colon fence: {line.strip()}")
            continue
        if LABEL.match(line):
            found.append(f"line {number}: label: {line.strip()}")
        elif COMMENT.match(line):
            found.append(f"line {number}: comment: {line.strip()}")
        else:
            found += [f"line {number}: {kind}: {text}" for kind, text in inline_myst(line)]
    return found


def inline_myst(line: str) -> list[tuple[str, str]]:
    """Roles and substitutions in one line of prose, read left to right so that
    a role's backticks are not taken for a code span's, nor a code span's
    content for a role."""
    found, position, prose = [], 0, []
    while position < len(line):
        if role := ROLE.match(line, position):
            found.append(("role", role.group()))
            close = line.find(role[1], role.end())
            position = len(line) if close < 0 else close + len(role[1])
        elif ticks := TICKS.match(line, position):
            close = re.compile(f"(?<!`){ticks.group()}(?!`)").search(line, ticks.end())
            position = ticks.end() if close is None else close.end()
        else:
            prose.append(line[position])
            position += 1
    found += [("substitution", m.group()) for m in SUBSTITUTION.finditer("".join(prose))]
    return found


def test_the_detector_finds_each_myst_construct_and_leaves_code_alone():
    text = "\n".join([
        "(a-label)=", "# Title", "% a comment", "See {term}`seed` and {py:func}`torch.f`.",
        ":::{note}", "body", ":::", "```{admonition} A title", "x", "```",
        "Torch {{ torch_version }}.", "Code: `` {term}`x` `` and `(x)=`.",
        "```markdown", "{ref}`inside-a-fence`", "(label)=", "```", "$a_{i}$ stays",
    ])
    kinds = [found.split(": ")[1] for found in myst_only(text)]
    assert kinds == ["label", "comment", "role", "role", "directive", "directive",
                     "substitution"]


def site_links() -> plain.Links:
    return plain.Links(
        url=lambda doc, anchor: f"https://site.example/{doc}.html" + (f"#{anchor}" if anchor else ""),
        docname="how-to/page", terms={"seed": ("reference/glossary", "term-seed")},
        labels={"vjp": ("explanation/vjp", "vjp", "What a VJP is")},
        titles={"tutorial/first": "Your first Jacobian"},
        api={"py:function torch.autograd.grad": "https://pytorch.org/grad.html"},
        substitutions={"torch_version": "2.13.0"})


def test_myst_becomes_plain_markdown_with_links_to_the_site():
    from myst_parser.config.main import MdParserConfig

    md = plain.parser(MdParserConfig(enable_extensions={"colon_fence", "dollarmath",
                                                         "substitution"}))
    text = "\n".join([
        "(page)=", "# Page", "", "% explanation", "A {term}`seed`, {term}`seeds <seed>`,",
        "{ref}`vjp`, {doc}`../tutorial/first`, {py:func}`torch.autograd.grad`.",
        "", ":::{admonition} Trap: the {term}`seed`", ":class: warning", "Careful.", ":::",
        "", "Torch {{ torch_version }}, $v^\\top J$ and `{term}`code``."])
    out = plain.plain_markdown(text, md, site_links())
    assert myst_only(out) == []
    assert out.splitlines()[0] == "# Page"
    assert "[seed](https://site.example/reference/glossary.html#term-seed)" in out
    assert "[seeds](https://site.example/reference/glossary.html#term-seed)" in out
    assert "[What a VJP is](https://site.example/explanation/vjp.html#vjp)" in out
    assert "[Your first Jacobian](https://site.example/tutorial/first.html)" in out
    assert "[`torch.autograd.grad()`](https://pytorch.org/grad.html)" in out
    assert "> **Trap: the [seed](https://site.example/reference/glossary.html#term-seed)**" in out
    assert "> Careful." in out
    assert "Torch 2.13.0, $v^\\top J$" in out


@pytest.mark.build
@pytest.mark.parametrize("download", DOWNLOADS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_downloaded_notebook_is_plain_markdown_and_says_what_made_it(download):
    notebook = nbformat.read(download, as_version=4)
    left = [f"cell {index}: {found}" for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "markdown" for found in myst_only(cell.source)]
    assert not left, f"{download.relative_to(SITE)} keeps MyST-only Markdown:\n" + "\n".join(left)
    first, second = notebook.cells[:2]
    assert first.cell_type == "markdown" and PROVENANCE in first.metadata.get("tags", [])
    made = notebook.metadata[PROVENANCE]
    assert f"torch {made['torch']}" in first.source and f"Python {made['python']}" in first.source
    assert made["built"] in first.source
    assert second.cell_type == "code" and "torch.__version__" in second.source


def test_the_provenance_cell_prints_one_line_only_for_another_torch(capsys):
    import torch

    for made, says in [(torch.__version__, ""),
                       ("1.0.0", f"outputs were made with torch 1.0.0; you have "
                                 f"{torch.__version__}: some outputs may differ\n")]:
        exec(Provenance(made, "3.11.0", "2026-01-01").cells()[1].source, {})
        assert capsys.readouterr().out == says


# -- Python scripts -------------------------------------------------------------------

def test_a_script_is_the_notebook_in_percent_format(tmp_path):
    (tmp_path / "helpers.py").write_text("def square(t):\n    return t * t\n")
    new = nbformat.v4
    page = new.new_notebook(cells=[
        new.new_markdown_cell("# A page\n\nSome prose."),
        new.new_code_cell("%xmode Minimal\nfrom helpers import square\nsquare(3)"),
        new.new_code_cell("square(None)", metadata={"tags": ["raises-exception"]}),
        new.new_code_cell("print('done');"),
    ])
    script = reader_script(reader_notebook(page, tmp_path))
    assert "# %% [markdown]\n# # A page\n#\n# Some prose." in script
    assert "# %xmode Minimal  (IPython only)" in script
    folder = tmp_path / "reader"
    folder.mkdir()
    (folder / "page.py").write_text(script)
    ran = subprocess.run([sys.executable, "page.py"], cwd=folder, capture_output=True,
                         text=True, check=True)
    assert ran.stdout == ("9\nTypeError: unsupported operand type(s) for *: "
                          "'NoneType' and 'NoneType'\ndone\n")


@pytest.mark.build
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_downloaded_script_runs_alone(script, tmp_path, reader_environment):
    assert script.is_file(), f"no {script.name} beside {script.with_suffix('.ipynb').name}"
    folder = tmp_path / "reader"
    folder.mkdir()
    shutil.copyfile(script, folder / script.name)
    ran = subprocess.run([sys.executable, script.name], cwd=folder, capture_output=True,
                         text=True, timeout=300, env={**os.environ,
                         "MPLBACKEND": "Agg"})
    assert ran.returncode == 0, f"{script.relative_to(SITE)} failed:\n{ran.stderr[-3000:]}"
    # What the page prints (and the errors it shows) the script prints, in order;
    # a traceback's line numbers count the script's lines, not the cell's.
    position, stdout = 0, LINE_NUMBER.sub("line N", ran.stdout)
    for expected in printed(nbformat.read(script.with_suffix(".ipynb"), as_version=4)):
        expected = LINE_NUMBER.sub("line N", expected)
        found = stdout.find(expected, position)
        assert found >= 0, (f"{script.relative_to(SITE)} does not print, after what it "
                            f"printed before, what the page shows:\n{expected[:500]}")
        position = found + len(expected)


LINE_NUMBER = re.compile(r"\bline \d+")
XMODE = re.compile(r"^Exception reporting mode: \w+\n", re.MULTILINE)


def printed(notebook) -> list[str]:
    """The text a notebook's cells print to stdout and the errors they show, in order
    (cells tagged ``measured`` time the machine and are left out, and so is what
    IPython's ``%xmode`` prints: a script runs no magics)."""
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code" or MEASURED in cell.metadata.get("tags", []):
            continue
        for kind, *rest in shown(cell):
            if kind == "stream" and rest[0] == "stdout":
                text = XMODE.sub("", rest[1])
                texts += [text] if text else []
            elif kind == "error":
                texts.append(f"{rest[0]}: {rest[1]}")
    return texts
