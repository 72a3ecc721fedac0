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

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
DOWNLOADS = sorted(SITE.rglob("*.ipynb"))

pytestmark = pytest.mark.build


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
            found.append((kind, output["name"], output["text"]))
        elif kind == "error":
            found.append((kind, output["ename"], output["evalue"]))
        else:
            data = output.get("data", {})
            found.append((kind, {mime: data[mime] for mime in sorted(data)
                                 if mime in ("text/plain", "image/png", "text/html")}))
    return found


def test_the_build_wrote_downloads():
    assert DOWNLOADS, f"no notebooks under {SITE}: run `make html` first"


def test_the_reader_kernel_is_stock_ipykernel(reader_environment):
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert "ipykernel_launcher" in spec.argv, spec.argv


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
