"""The floors `make bench` measures a build against: every page's code as a plain script.

floor_proc    every page's code run as a plain `python` script (converted from the
              page with the one reader of code cells, myst-nb's), in the page's folder
floor_warm    torch imported once, then every page's code exec'd in that warm process
              (a fresh globals dict per page, torch.compile's caches reset after each)
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from autograd_docs.code_cells import code_cells
from autograd_docs.devkit.executed import executed_pages
from autograd_docs.kernels.environment import kernel_environment


def page_scripts(repo: Path, out: Path) -> list[tuple[Path, Path]]:
    """Convert each executed page to a script (code cells in order); return (script, folder)."""
    scripts = []
    for name in executed_pages(repo):
        page = repo / name
        # IPython line magics (%xmode: how a traceback prints) are not Python and
        # change nothing a plain script computes: drop them.
        cells = [("\n".join(line for line in cell.source.splitlines()
                            if not line.lstrip().startswith("%")),
                  "raises-exception" in cell.tags)
                 for cell in code_cells(page.read_text(), path=page)]
        script = out / (str(page.relative_to(repo / "docs")).replace("/", "__") + ".py")
        # As IPython runs a cell: source findable by linecache under a name of its
        # own (pages inspect tracebacks), and an expected error left in
        # sys.last_value (pages check the message a raising cell left).
        # And as IPython's display hook: a cell ending in an expression leaves
        # its value (if not None) in `_`, which the hidden checks read; and as
        # its history, `In` (a hidden check reads the cell above it, In[-2]).
        script.write_text(
            "import ast, linecache, sys\n"
            f"_cells = {cells!r}\n"
            f"_g = {{'__name__': '__main__', 'In': ['']}}\n"
            "def _run(source, name):\n"
            "    tree = ast.parse(source, name)\n"
            "    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) \\\n"
            "        else None\n"
            "    exec(compile(tree, name, 'exec'), _g)\n"
            "    if last is not None:\n"
            "        value = eval(compile(ast.Expression(last.value), name, 'eval'), _g)\n"
            "        if value is not None:\n"
            "            _g['_'] = value\n"
            "for _index, (_source, _raises) in enumerate(_cells):\n"
            "    _name = f'<cell {_index}>'\n"
            "    linecache.cache[_name] = (len(_source), None, _source.splitlines(True), _name)\n"
            "    _g['In'].append(_source)\n"
            "    try:\n"
            "        _run(_source, _name)\n"
            "    except Exception:\n"
            "        if not _raises:\n"
            "            raise\n"
            "        sys.last_type, sys.last_value, sys.last_traceback = sys.exc_info()\n"
        )
        scripts.append((script, page.parent))
    return scripts


def page_env(repo: Path) -> dict:
    """The environment the build gives a page (its threads' waiting included:
    the floor runs the same code the same way), with figures drawn off-screen."""
    return {**os.environ, **kernel_environment(repo, repo / "snippets"), "MPLBACKEND": "Agg"}


def floor_proc_total(repo: Path, scripts) -> float:
    total = 0.0
    python = str(repo / ".venv" / "bin" / "python")
    for script, folder in scripts:
        start = time.perf_counter()
        subprocess.run([python, str(script)], cwd=folder, env=page_env(repo), check=True,
                       capture_output=True)
        total += time.perf_counter() - start
    return total


WARM_RUNNER = r"""
import json, os, sys, time
import torch, numpy, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
total = 0.0
for script, folder in json.loads(sys.argv[1]):
    os.chdir(folder)
    code = compile(open(script).read(), script, "exec")
    start = time.perf_counter()
    exec(code, {"__name__": "__main__"})
    total += time.perf_counter() - start
    matplotlib.pyplot.close("all")
    torch._dynamo.reset()  # a page's compiled code is its own, as in its own process
print(total)
"""


def floor_warm_total(repo: Path, scripts) -> float:
    python = str(repo / ".venv" / "bin" / "python")
    env = page_env(repo)
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "snippets")])
    out = subprocess.run(
        [python, "-c", WARM_RUNNER, json.dumps([(str(s), str(f)) for s, f in scripts])],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])
