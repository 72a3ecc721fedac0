"""Every notebook a reader downloads runs where readers run it, and prints what the page shows.

A reader's Jupyter starts a stock ipykernel in an empty folder, with torch, numpy
and matplotlib installed and no ``snippets/`` on its path. So each ``.ipynb`` that
the last ``make html`` put beside its page is copied alone into an empty folder and
executed top to bottom there, in the standard ``python3`` kernel (not the build's
page kernel), with ``PYTHONPATH`` cleared. Every cell must print what the page
shows: the same text, the same error, the same figure bytes (cells tagged
``measured`` time the machine, so only they may print other numbers).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from autograd_docs.html.notebooks import reader_notebook

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
DOWNLOADS = sorted(SITE.rglob("*.ipynb"))


# What only the build gives a kernel: the snippets on the path, the page kernel's
# kernelspec, the figures' fixed salt and the fixed hash seed.
BUILD_ONLY = ("PYTHONPATH", "JUPYTER_PATH", "MATPLOTLIBRC", "PYTHONHASHSEED")
MEASURED = "measured"  # cells that time this machine: their output changes on purpose


@pytest.fixture
def reader_environment(monkeypatch):
    for name in BUILD_ONLY:
        monkeypatch.delenv(name, raising=False)


def shown(cell) -> list:
    """What a code cell displays, in a form two runs can be compared by."""
    found = []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            # Prints in a row are one block, on the page (nb_merge_streams) as in Jupyter.
            if found and found[-1][:2] == (kind, output["name"]):
                found[-1] = (kind, output["name"], found[-1][2] + output["text"])
            else:
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
    NotebookClient(ran, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()

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
