"""Every snippet runs on its own and passes its own asserts.

Each runs as ``python snippet.py`` in the snippets folder, in a process of its
own forked from one that imported torch and nothing of the snippets
(``reader_forks.py``): what one snippet imports or sets reaches no other, and
the snippets do not pay for a dozen cold imports of torch.
"""

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import reader_forks

SNIPPETS = Path(__file__).resolve().parent.parent / "snippets"

# What the asker printed in the Stack Overflow question, copied verbatim: an oracle
# PyTorch's output today is held to, independent of anything this repo computes.
QUESTION_OUTPUT = (
    "Z tensor is: tensor([-1.0000, -0.5000,  0.0000,  0.5000,  1.0000], requires_grad=True) \n"
    " Gradient of y with respect to z is: tensor([-1.0000, -0.5000,  0.0000,  0.5000,  1.0000])\n"
)


@pytest.fixture(scope="module")
def forks():
    """The socket of a ``reader_forks`` server in this venv's Python (a short path:
    a unix socket's must fit in 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="snippets-"))
    socket = str(folder / "forks.sock")
    server = subprocess.Popen([sys.executable, reader_forks.__file__, "serve", socket],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline() == "ready\n", "the fork server did not start"
    yield socket, folder
    server.kill()
    server.wait()


@functools.cache  # each snippet runs once, for every test that reads what it printed
def run_snippet(forks: tuple[str, Path], name: str) -> str:
    socket, folder = forks
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    _, returncode = reader_forks.ask(socket, {
        "folder": str(SNIPPETS), "script": name, "stdout": str(out), "stderr": str(err),
        "env": {"MPLBACKEND": "Agg"}})
    assert returncode() == 0, f"snippets/{name} failed:\n{err.read_text(encoding='utf8')}"
    return out.read_text(encoding="utf8")


@pytest.mark.parametrize("name", sorted(p.name for p in SNIPPETS.glob("*.py")))
def test_snippet_runs_cleanly(forks, name):
    run_snippet(forks, name)


def test_question_snippet_prints_what_the_asker_saw(forks):
    assert run_snippet(forks, "why_backward_z_gives_z.py").startswith(QUESTION_OUTPUT)
