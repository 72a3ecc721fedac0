"""Every notebook a reader downloads opens on its title, runs where readers run it,
and prints what the page shows.

A reader's Jupyter starts a stock ipykernel in an empty folder, with torch, numpy
and matplotlib installed and nothing of this project: no ``snippets/``, no
``autograd_docs``, no Hypothesis. The test makes that Python once per session
(``reader_python``): a venv whose site-packages links only those distributions,
ipykernel and what they require. In it one process imports torch (what a
reader's first cell imports) and forks, per download, a stock ipykernel or a
``python page.py`` run (``reader_forks.py``), in an empty folder holding only
the download. Every cell must print what the page shows: the same text, the same
error, the same figure bytes (cells tagged ``measured`` time the machine, so
only they may print other numbers). A download that imports anything else fails
(``test_a_download_that_imports_the_build_fails_in_the_readers_python``).

Jupyter and Colab render plain Markdown: no notebook's Markdown may keep a
MyST-only construct (``myst_only`` finds roles, directive fences, ``(label)=``
lines, ``%`` comments and ``{{ substitutions }}``). Each opens on its title and
introduction, then the cells that say which torch made its outputs, and ships
the site's helpers its cells use in one collapsed cell at their first use.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import nbclient
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from autograd_docs.devkit.executed import merged_streams
from autograd_docs.devkit.stock_kernel import kernel_manager_config
from autograd_docs.html import plain_markdown as plain
from autograd_docs.html.helper_cell import TITLE, Helpers, reader_distributions
from autograd_docs.html.notebooks import (
    HELPERS,
    PROVENANCE,
    Provenance,
    cell_names,
    reader_notebook,
    reader_script,
)

import reader_forks

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
DOWNLOADS = sorted(SITE.rglob("*.ipynb"))
SCRIPTS = [path.with_suffix(".py") for path in DOWNLOADS]
SNIPPETS = ROOT / "snippets"

# What only the build gives a kernel: the snippets on the path, the page kernel's
# kernelspec, the figures' fixed salt and the fixed hash seed.
BUILD_ONLY = ("PYTHONPATH", "JUPYTER_PATH", "MATPLOTLIBRC", "PYTHONHASHSEED")
MEASURED = "measured"  # cells that time this machine: their output changes on purpose
KERNEL = "reader"


# -- The reader's Python ---------------------------------------------------------------

def make_reader_python(folder: Path) -> Path:
    """A venv holding only the reader's distributions (linked from this one's
    site-packages, file tree by file tree): its interpreter."""
    venv.EnvBuilder(symlinks=True, with_pip=False).create(folder)
    site = next((folder / "lib").glob("python*/site-packages"))
    for name in sorted(reader_distributions()):
        dist = importlib.metadata.distribution(name)
        tops = {path.parts[0] for path in dist.files or []}
        for top in sorted(tops - {"..", "__pycache__"}):
            if not top.endswith(".pth") and not (site / top).exists():
                (site / top).symlink_to(dist.locate_file(top))
    return folder / "bin" / "python"


class ReaderPython:
    """The reader's Python, with ``reader_forks``' server running in it."""

    def __init__(self, folder: Path) -> None:
        self.python = make_reader_python(folder / "venv")
        self.socket = str(folder / "forks.sock")
        kernels = folder / "kernels"
        (kernels / KERNEL).mkdir(parents=True)
        (kernels / KERNEL / "kernel.json").write_text(json.dumps({
            "argv": [str(self.python), reader_forks.__file__, "kernel", self.socket,
                     "{connection_file}"],
            "display_name": "A reader's Python", "language": "python"}))
        self.specs = KernelSpecManager(kernel_dirs=[str(kernels)])
        environment = {k: v for k, v in os.environ.items() if k not in BUILD_ONLY}
        self.log = open(folder / "forks.log", "w+")  # noqa: SIM115  closed in stop()
        self.server = subprocess.Popen(
            [str(self.python), reader_forks.__file__, "serve", self.socket],
            stdout=subprocess.PIPE, stderr=self.log, text=True, env=environment)
        assert self.server.stdout.readline() == "ready\n", self.errors()

    def errors(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:]

    def run_notebook(self, download: Path, folder: Path) -> nbformat.NotebookNode:
        """``download`` run top to bottom, alone in ``folder``, in a stock kernel."""
        shutil.copyfile(download, folder / download.name)
        notebook = nbformat.read(folder / download.name, as_version=4)
        # Its sockets beside the folder, not in it; over TCP, kernels three workers
        # started at once collided on ports ("Invalid Signature", a dead kernel).
        kernel = KernelManager(kernel_name=KERNEL, kernel_spec_manager=self.specs,
                               config=kernel_manager_config(str(folder.parent)))
        try:
            return nbclient.execute(notebook, cwd=str(folder), km=kernel, timeout=120)
        finally:  # nbclient leaves a kernel it was given running
            if kernel.has_kernel:
                kernel.shutdown_kernel()

    def run_script(self, script: Path, folder: Path) -> tuple[int, str, str]:
        """``python script.py`` alone in ``folder``: its exit code, stdout, stderr."""
        shutil.copyfile(script, folder / script.name)
        out, err = folder.parent / "stdout", folder.parent / "stderr"
        _, returncode = reader_forks.ask(self.socket, {
            "folder": str(folder), "script": script.name, "stdout": str(out),
            "stderr": str(err), "env": {"MPLBACKEND": "Agg"}})
        code = returncode()
        return code, out.read_text(encoding="utf8"), err.read_text(encoding="utf8")

    def stop(self) -> None:
        self.server.kill()
        self.server.wait()
        self.log.close()


@pytest.fixture(scope="session")
def reader_python(tmp_path_factory):
    reader = ReaderPython(tmp_path_factory.mktemp("reader"))
    yield reader
    reader.stop()


@pytest.fixture
def reader_folder(tmp_path) -> Path:
    folder = tmp_path / "reader"
    folder.mkdir()
    return folder


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


def prints_what_the_page_shows(reader: ReaderPython, download: Path, folder: Path) -> None:
    """Run ``download`` in the reader's Python; fail unless every cell shows what
    the page shows and nothing is left in the folder but the notebook."""
    page = nbformat.read(download, as_version=4)
    ran = reader.run_notebook(download, folder)
    assert sorted(p.name for p in folder.iterdir()) == [download.name], "it wrote files"
    differ = [
        f"cell {index} ({before.source.splitlines()[0][:60]!r}):\n  page:   {shown(before)!r:.300}\n"
        f"  reader: {shown(after)!r:.300}"
        for index, (before, after) in enumerate(zip(page.cells, ran.cells))
        if before.cell_type == "code" and before.outputs and shown(before) != shown(after)
        and MEASURED not in before.metadata.get("tags", [])
    ]
    assert not differ, f"{download.name} prints differently:\n" + "\n".join(differ)


@pytest.mark.parametrize("module", ["autograd_docs", "hypothesis", "oracle"])
def test_a_download_that_imports_the_build_fails_in_the_readers_python(
        module, reader_python, tmp_path, reader_folder):
    """The check is no wider than a reader's Python: the engine, Hypothesis and
    the snippets are not importable there, though this process imports them."""
    if module != "oracle":  # importable here, in the project's venv
        importlib.import_module(module)
    new = nbformat.v4
    download = tmp_path / "page.ipynb"
    nbformat.write(new.new_notebook(cells=[
        new.new_code_cell("import matplotlib, numpy, torch", outputs=[]),
        new.new_code_cell(f"import {module}", outputs=[])]), download)
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="ModuleNotFoundError"):
        prints_what_the_page_shows(reader_python, download, reader_folder)


@pytest.mark.build
def test_the_build_wrote_downloads():
    assert DOWNLOADS, f"no notebooks under {SITE}: run `make html` first"


@pytest.mark.build
@pytest.mark.parametrize("download", DOWNLOADS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_downloaded_notebook_runs_alone_and_prints_what_the_page_shows(
    download, reader_python, reader_folder
):
    prints_what_the_page_shows(reader_python, download, reader_folder)


# -- What a download holds -------------------------------------------------------------

def test_a_reader_notebook_opens_on_its_title_and_ships_only_the_helpers_it_uses(tmp_path):
    (tmp_path / "helpers.py").write_text(
        "import torch\nfrom shapes import square\n\nSCALE = 2\n\n"
        "def scaled(t):\n    return SCALE * square(torch.as_tensor(t))\n\ndef unused():\n    pass\n")
    (tmp_path / "shapes.py").write_text("def square(t):\n    return t * t\n\ndef cube(t):\n"
                                        "    return t ** 3\n")
    (tmp_path / "checks.py").write_text("from autograd_docs import claim_record\n"
                                        "def check(x):\n    return claim_record\n")
    new = nbformat.v4
    png = "iVBORw0KGgo="
    page = new.new_notebook(cells=[
        new.new_code_cell("from checks import check", metadata={"tags": ["remove-cell"]}),
        new.new_markdown_cell("# Page\n\nThe introduction."),
        new.new_code_cell("import torch\nfrom helpers import scaled\n\nscaled(torch.ones(2))"),
        new.new_code_cell("check(_)", metadata={"tags": ["remove-cell"]}),
        new.new_code_cell("picture = draw()", metadata={
            "tags": ["hide-input"], "mystnb": {"image": {"alt": "A [red] square"}}},
            outputs=[new.new_output("display_data", data={"image/png": png})]),
        new.new_code_cell("from checks import check\ncheck(1)", outputs=[
            new.new_output("stream", name="stdout", text="checked\n")]),
        new.new_code_cell("print(1)", metadata={"tags": ["hide-cell"]}),
    ], metadata={"source_map": [0, 3, 5, 9, 12, 15, 18], "search": "hub",
                 "search_questions": ["grad is None"]})

    reader = reader_notebook(page, tmp_path, provenance=Provenance("2.0", "3.11", "2026-01-01"))

    kinds = [(cell.cell_type, cell.metadata.get("tags", [])) for cell in reader.cells]
    assert kinds == [("markdown", []), ("markdown", [PROVENANCE]), ("code", [PROVENANCE]),
                     ("code", [HELPERS]), ("code", []), ("markdown", []), ("markdown", []),
                     ("code", ["hide-cell"])]
    helpers = reader.cells[3]
    assert helpers.source.splitlines()[0] == TITLE and "you need not read it" in TITLE
    assert helpers.metadata["jupyter"] == {"source_hidden": True}
    assert helpers.metadata["cellView"] == "form"
    for kept in ("def square", "SCALE = 2", "def scaled", "import torch"):
        assert kept in helpers.source
    assert "def cube" not in helpers.source and "def unused" not in helpers.source
    assert helpers.source.index("def square") < helpers.source.index("def scaled")
    assert reader.cells[4].source == "import torch\n\nscaled(torch.ones(2))"
    figure = reader.cells[5]
    assert figure.source == "![A  red  square](attachment:figure-0.png)"
    assert list(figure.attachments.values()) == [{"image/png": png}]
    assert "`checks`" in reader.cells[6].source and "checked" in reader.cells[6].source
    assert reader.cells[7].metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
    assert not any("check(_)" in cell.source for cell in reader.cells)
    assert [cell.id for cell in reader.cells] == [f"cell-{i}" for i in range(len(reader.cells))]
    assert not {"source_map", "search", "search_questions"} & set(reader.metadata)
    assert len(page.cells) == 7, "the executed notebook itself is left as it was"


def test_a_name_that_needs_the_build_is_not_shipped():
    helpers = Helpers(SNIPPETS)
    assert helpers.lacking([("oracle", ["check_close"])]) is not None
    assert not helpers, "nothing of a name that cannot ship is taken"
    assert helpers.lacking([("figures", ["walk_graph"])]) is None
    assert "def walk_graph" in helpers.cell_source()
    assert "def graph_figure" not in helpers.cell_source()


@pytest.mark.build
@pytest.mark.parametrize("download", DOWNLOADS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_download_opens_on_its_title_with_its_helpers_in_one_collapsed_cell(download):
    notebook = nbformat.read(download, as_version=4)
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), first.source[:200]
    helpers = [cell for cell in notebook.cells if HELPERS in cell.metadata.get("tags", [])]
    assert len(helpers) <= 1
    for cell in helpers:
        assert cell.source.startswith(TITLE) and cell.metadata["jupyter"]["source_hidden"]
        defined = {node.name for node in ast.parse(cell.source).body
                   if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        uses = [index for index, other in enumerate(notebook.cells) if other.cell_type == "code"
                and defined & cell_names(other, ast.Load) and other is not cell]
        assert uses and notebook.cells.index(cell) == uses[0] - 1, "it comes at its first use"
    assert not any(cell.source.startswith("%%writefile") for cell in notebook.cells)


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
    said = [cell for cell in notebook.cells if PROVENANCE in cell.metadata.get("tags", [])]
    assert [cell.cell_type for cell in said] == ["markdown", "code"]
    made = notebook.metadata[PROVENANCE]
    assert f"torch {made['torch']}" in said[0].source and f"Python {made['python']}" in said[0].source
    assert made["built"] in said[0].source
    assert "torch.__version__" in said[1].source
    first_code = next(c for c in notebook.cells if c.cell_type == "code")
    assert first_code is said[1], "it says what made the outputs before any code runs"


def test_the_provenance_cell_prints_one_line_only_for_another_torch(capsys):
    import torch

    for made, says in [(torch.__version__, ""),
                       ("1.0.0", f"outputs were made with torch 1.0.0; you have "
                                 f"{torch.__version__}: some outputs may differ\n")]:
        exec(Provenance(made, "3.11.0", "2026-01-01").cells()[1].source, {})
        assert capsys.readouterr().out == says


# -- Python scripts -------------------------------------------------------------------

def test_a_script_is_the_notebook_in_percent_format(tmp_path):
    new = nbformat.v4
    page = new.new_notebook(cells=[
        new.new_markdown_cell("# A page\n\nSome prose."),
        new.new_code_cell("%xmode Minimal\ndef square(t):\n    return t * t\n\nsquare(3)"),
        new.new_code_cell("square(None)", metadata={"tags": ["raises-exception"]}),
        new.new_code_cell("print('done')"),
    ])
    script = reader_script(reader_notebook(page, tmp_path))
    assert script.startswith("# %% [markdown]\n# # A page\n#\n# Some prose.")
    assert "# %xmode Minimal  (IPython only)" in script
    assert "show_value((\n    print" not in script
    folder = tmp_path / "reader"
    folder.mkdir()
    (folder / "page.py").write_text(script)
    ran = subprocess.run([sys.executable, "page.py"], cwd=folder, capture_output=True,
                         text=True, check=True)
    assert ran.stdout == ("9\nTypeError: unsupported operand type(s) for *: "
                          "'NoneType' and 'NoneType'\ndone\n")


@pytest.mark.build
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(SITE)))
def test_a_downloaded_script_runs_alone(script, reader_python, reader_folder):
    assert script.is_file(), f"no {script.name} beside {script.with_suffix('.ipynb').name}"
    returncode, stdout, stderr = reader_python.run_script(script, reader_folder)
    assert returncode == 0, f"{script.relative_to(SITE)} failed:\n{stderr[-3000:]}"
    # What the page prints (and the errors it shows) the script prints, in order;
    # a traceback's line numbers count the script's lines, not the cell's.
    position, stdout = 0, LINE_NUMBER.sub("line N", stdout)
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
