"""What every page's process runs with: the snippets it imports on its path,
and what makes its outputs the same bytes on every build.

A fixed str hash seed (sets print in one order), and for figures saved as SVG or
PDF the commit's time instead of now and a fixed salt for SVG element ids (PNG,
the inline default, carries neither). Both are read when Python and matplotlib
start, so the fork server starts with them too.

And torch's OpenMP threads wait passively: by default an idle worker (and the
main thread at a barrier) spins before it sleeps, and with two readers' pages
on two cores the spinning takes the core the other page needs. Measured, the
pages' code forked from one warm process (bench/README.md): 1.6 times the
CPU seconds when spinning over all pages, 4 to 8 times on the two worst.
How the work is split between threads, and so every value computed, stays
the same; libgomp reads the variable as torch loads.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from autograd_docs.claim_record import PUBLISHED_WHEN

MATPLOTLIBRC = Path(__file__).with_name("matplotlibrc")


def source_date_epoch(repository: Path) -> str:
    """SOURCE_DATE_EPOCH if set, else the time of the checked-out commit."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        return (
            subprocess.run(
                ["git", "log", "-1", "--format=%ct"],
                cwd=repository,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            or "0"
        )
    except (OSError, subprocess.CalledProcessError):
        return "0"  # not a git checkout: any fixed time keeps builds identical


def kernel_environment(repository: Path, snippets: Path | None = None) -> dict[str, str]:
    """The variables every page's process (and the fork server) starts with;
    ``snippets``, the folder of the modules pages import, first on their path."""
    path = os.pathsep.join(filter(None, [str(snippets or ""), os.environ.get("PYTHONPATH")]))
    return {
        **({"PYTHONPATH": path} if path else {}),
        "PYTHONHASHSEED": "0",
        "MATPLOTLIBRC": str(MATPLOTLIBRC),
        "SOURCE_DATE_EPOCH": source_date_epoch(repository),
        PUBLISHED_WHEN: "1",  # quoting checks publish their records for the build
        # Unless the builder chose a policy of their own.
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
    }
