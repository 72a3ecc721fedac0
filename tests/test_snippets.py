"""Every snippet runs on its own and passes its own asserts."""

import functools
import subprocess
import sys
from pathlib import Path

import pytest

SNIPPETS = Path(__file__).resolve().parent.parent / "snippets"

# What the asker printed in the Stack Overflow question, copied verbatim: an oracle
# PyTorch's output today is held to, independent of anything this repo computes.
QUESTION_OUTPUT = (
    "Z tensor is: tensor([-1.0000, -0.5000,  0.0000,  0.5000,  1.0000], requires_grad=True) \n"
    " Gradient of y with respect to z is: tensor([-1.0000, -0.5000,  0.0000,  0.5000,  1.0000])\n"
)


@functools.cache  # each snippet runs once, for every test that reads what it printed
def run_snippet(name: str) -> str:
    result = subprocess.run(
        [sys.executable, str(SNIPPETS / name)],
        capture_output=True, text=True, cwd=SNIPPETS, timeout=120,
    )
    assert result.returncode == 0, f"snippets/{name} failed:\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in SNIPPETS.glob("*.py")))
def test_snippet_runs_cleanly(name):
    run_snippet(name)


def test_question_snippet_prints_what_the_asker_saw():
    assert run_snippet("why_backward_z_gives_z.py").startswith(QUESTION_OUTPUT)
