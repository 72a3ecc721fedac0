"""A small copy of the site to break on purpose, and the strict build to run on it.

The copy holds the real configuration (``conf.py``, ``Makefile``, ``docs/_static``,
``snippets/`` and the glossary) plus pages a test writes; the build engine is the
installed ``autograd_docs``. The real landing page and tutorials stay out: they
link to every other page, and the copy holds only a few. Building it takes
seconds, where the whole site takes minutes, and a test can break it without
touching the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# Real pages in the copy: the glossary every {term} resolves against.
REAL_PAGES = ["reference/glossary"]

# The Makefile's SPHINXOPTS but -j: a clean build of the copy reads its pages in
# two workers (12 s instead of 22 s, measured); a build after one fault has one
# page to execute, and the fault tests run two such builds at a time anyway.
STRICT = ["-n", "-W", "--keep-going"]

FRONT_MATTER = """\
---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
  language: python
{extra}---
"""

# A page in the house shape: label, title, a term, a checked claim, a doctest
# and a snippet included by marker. Tests replace one piece of it with a fault.
TEST_PAGE = """\
(test-page)=
# Check a gradient the build re-computes

The {term}`seed` of `backward` comes back for the identity.

```{code-cell} ipython3
import torch
from oracle import check_close

z = torch.linspace(-1, 1, steps=5, requires_grad=True)
z.backward(z)
print(z.grad)
```

```{code-cell} ipython3
:tags: [remove-cell]
check_close(z.grad, z, "the identity gives the seed back")
```

```{code-cell} ipython3
:tags: [raises-exception]
torch.ones(2).backward()
```

```{literalinclude} ../snippets/why_backward_z_gives_z.py
:start-after: "# [start-question]"
:end-before: "# [end-question]"
```

```{doctest}
>>> torch.ones(3).sum()
tensor(3.)
```

Back to {ref}`test-page`, or the {doc}`reference/glossary`.
"""

# A figure and a set: the outputs most likely to differ between two builds.
FIGURE_PAGE = """\
(figure-page)=
# Plot the gradient of a sum of squares

```{code-cell} ipython3
import matplotlib.pyplot as plt
import torch

z = torch.linspace(-1, 1, steps=5, requires_grad=True)
(z**2).sum().backward()
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot(z.detach(), z.grad, marker="o")
ax.set(xlabel="z", ylabel="z.grad", title="the gradient is 2z")
plt.show()
```

The words this page uses, as a set, printed in an order that depends on str
hashes (IPython's display would sort it; `print` does not):

```{code-cell} ipython3
print({"seed", "Jacobian", "vector-Jacobian product", "tangent", "gradient"})
```
"""


@dataclass
class Build:
    returncode: int
    log: str  # stdout and stderr together, as an author sees them

    @property
    def warnings(self) -> list[str]:
        return [line for line in self.log.splitlines() if "WARNING" in line
                or "ERROR" in line]


def page(body: str, front_matter: str = "") -> str:
    """A MyST-NB page: the model page's front matter, then ``body``."""
    return FRONT_MATTER.format(extra=front_matter) + "\n" + textwrap.dedent(body)


def make_copy(folder: Path, pages: dict[str, str] | None = None) -> Path:
    """Copy the site's machinery into ``folder`` and write ``pages`` (name -> text).

    The copy's landing page is a title and a toctree of the test's pages and
    ``REAL_PAGES``. Without ``pages`` it holds ``TEST_PAGE`` and ``FIGURE_PAGE``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("conf.py", "Makefile", "requirements.txt", "package.json",
                 "package-lock.json"):
        shutil.copy2(ROOT / name, folder / name)
    # make would otherwise reinstall the venv: requirements.txt is older than it.
    os.utime(folder / "requirements.txt", (0, 0))
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "snippets", folder / "snippets", ignore=ignore)
    shutil.copytree(ROOT / "docs" / "_static", folder / "docs" / "_static", ignore=ignore)
    # The build draws equations with MathJax from node_modules (autograd_docs/html/svg_math.py).
    (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    for name in REAL_PAGES:
        (folder / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "docs" / f"{name}.md", folder / "docs" / f"{name}.md")
    if pages is None:
        pages = {"test-page": page(TEST_PAGE), "figure-page": page(FIGURE_PAGE)}
    toctree = "\n".join([*sorted(pages), *REAL_PAGES])
    (folder / "docs" / "index.md").write_text(
        "# A small copy of the site\n\n```{toctree}\n\n" + toctree + "\n```\n",
        encoding="utf8",
    )
    for name, text in pages.items():
        write(folder / "docs" / f"{name}.md", text)
    return folder


def write(path: Path, text: str) -> None:
    """Write a file so a build after this one sees it as changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf8")
    if path.stat().st_mtime_ns <= before:  # same tick on a coarse clock
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def build(folder: Path, builder: str = "html", *extra: str, jobs: int = 1,
          timeout: int = 300) -> Build:
    """Run the Makefile's strict sphinx-build on the copy in ``folder``."""
    result = subprocess.run(
        [PYTHON, "-m", "sphinx", "-c", ".", *STRICT, "-j", str(jobs), *extra,
         "-b", builder,
         "-d", f"_build/doctrees-{builder}", "docs", f"_build/{builder}"],
        cwd=folder, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return Build(result.returncode, result.stdout + result.stderr)


def executed_outputs(notebooks: Path) -> dict[tuple[str, int], str]:
    """(page, line of the cell) -> the outputs stored for that cell.

    ``notebooks`` is a build's ``_build/jupyter_execute`` (or a folder laid out
    like it), or a copy of the site holding one.
    """
    if (notebooks / "_build" / "jupyter_execute").is_dir():
        notebooks = notebooks / "_build" / "jupyter_execute"
    outputs = {}
    for notebook in sorted(notebooks.rglob("*.ipynb")):
        data = json.loads(notebook.read_text(encoding="utf8"))
        source_map = data["metadata"].get("source_map", [])
        name = notebook.relative_to(notebooks)
        for index, cell in enumerate(data["cells"]):
            # A cell tagged "measured" shows timings of the build machine on
            # purpose (the reverse-mode page's plot); it differs run to run.
            measured = "measured" in cell.get("metadata", {}).get("tags", [])
            if cell["cell_type"] == "code" and not measured:
                line = source_map[index] if index < len(source_map) else index
                outputs[(f"docs/{name.with_suffix('.md')}", line)] = json.dumps(
                    merged_streams(cell.get("outputs", [])), sort_keys=True
                )
    return outputs


def merged_streams(outputs: list[dict]) -> list[dict]:
    """Outputs with each stream's pieces joined, as the page shows them."""
    merged, streams = [], {}
    for output in outputs:
        if output.get("output_type") != "stream":
            merged.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += "".join(output["text"])
        else:
            streams[output["name"]] = {**output, "text": "".join(output["text"])}
            merged.append(streams[output["name"]])
    return merged


def outputs_that_differ(first: Path, second: Path) -> list[str]:
    """Cells whose outputs differ between two executions, as ``page:line`` messages.

    Takes what ``executed_outputs`` takes.
    """
    a, b = executed_outputs(first), executed_outputs(second)
    return [
        f"{page}:{line}: this cell printed something different when the same "
        f"source ran twice: seed the randomness it uses (torch.manual_seed(0) in "
        f"the page's first cell) or print something that does not vary"
        for page, line in sorted(set(a) | set(b))
        if a.get((page, line)) != b.get((page, line))
    ]
