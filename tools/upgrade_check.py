"""Build the site against another torch and say what an upgrade would change.

Usage: ``make upgrade-check TORCH=2.14.1`` (or ``python tools/upgrade_check.py
--torch 2.14.1``).

On a scratch copy of the repository (tools/site_outputs.py) it builds the site
as pinned (a baseline, its execution cache seeded from _build), then pins the
other torch in the copy's requirements.txt, makes a side virtual environment
from it with the Makefile's own recipe (in _build/upgrade-check/, kept between
runs; the project's .venv is never touched) and builds the copy again with it.
It prints, and writes to _build/upgrade-check/report-torch-<version>.txt:

* every claim that failed, and every other cell that failed, page:line first;
* every error message that was reworded (cells tagged raises-exception whose
  error name or message changed), old and new;
* the pages whose outputs changed, each changed cell's old and new output side
  by side (figures by their bytes);
* tests/test_error_messages.py run against the other torch.

Exits 1 when the strict build fails with the other torch (a claim failed, or a
cell) or the error-messages test fails, 0 when only outputs changed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograd_docs.devkit.builds import make_env, write
from autograd_docs.devkit.executed import executed_pages
from autograd_docs.devkit.scratch_copy import finish
from autograd_docs.diagnostics import AuthorError

import site_outputs
from site_outputs import ROOT, Cell

TORCH_PIN = re.compile(r"^torch==(?P<version>\S+)", re.MULTILINE)
OUT = ROOT / "_build" / "upgrade-check"


def pin_torch(requirements: Path, version: str) -> str:
    """Pin ``version`` in a requirements file; return the version it had."""
    text = requirements.read_text(encoding="utf8")
    old = TORCH_PIN.search(text)
    if not old:
        sys.exit(f"{requirements} has no 'torch==' line to replace")
    write(requirements, TORCH_PIN.sub(f"torch=={version}", text, count=1))
    return old["version"]


def make_side_venv(repo: Path, venv: Path) -> tuple[float, str]:
    """The Makefile's venv recipe, with VENV pointing at ``venv``; (seconds, torch)."""
    start = time.perf_counter()
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    result = subprocess.run(
        ["make", "--no-print-directory", f"VENV={venv}", f"PYTHON_FOR_VENV={base_python}",
         f"{venv}/.installed"],
        cwd=repo, capture_output=True, text=True, env=make_env())
    if result.returncode:
        sys.exit(f"could not make the side venv {venv}:\n{result.stdout}{result.stderr}")
    torch = subprocess.run([venv / "bin" / "python", "-c",
                            "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return time.perf_counter() - start, torch


def error_messages_test(repo: Path, venv: Path) -> tuple[int, str]:
    """tests/test_error_messages.py with the other torch: (exit code, its summary)."""
    result = subprocess.run(
        [venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", "tests/test_error_messages.py"],
        cwd=repo, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return result.returncode, "\n".join(failed + lines[-1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torch", required=True, help="the torch version to try")
    parser.add_argument("--venv", type=Path, help="the side venv "
                        "(default: _build/upgrade-check/venv-torch-<version>)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args()
    venv = (args.venv or OUT / f"venv-torch-{args.torch}").resolve()
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="autograd-docs-upgrade-"))
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    say(f"scratch copy: {scratch}  side venv: {venv}  ({site_outputs.machine_note()})")
    try:
        repo = site_outputs.copy_repo(scratch / "site")
        baseline = site_outputs.build(repo)
        if baseline.returncode or baseline.warnings:
            print(baseline.log[-4000:])
            sys.exit("the site must build cleanly with the pinned torch first")
        before = site_outputs.executed_cells(repo)
        pinned = pin_torch(repo / "requirements.txt", args.torch)
        install_seconds, installed = make_side_venv(repo, venv)
        upgraded = site_outputs.build(repo, venv)
        after = site_outputs.executed_cells(repo)
        test_code, test_summary = error_messages_test(repo, venv)
        n_pages = len(executed_pages(repo))
    finally:
        finish(scratch, args.keep)

    say(f"\nupgrade check: torch {pinned} (pinned) -> {installed}, {n_pages} executed pages")
    say(f"baseline build {baseline.seconds:.0f} s ({baseline.executed} pages executed); "
        f"side venv {install_seconds:.0f} s; build with torch {installed} "
        f"{upgraded.seconds:.0f} s ({upgraded.executed} pages executed)")

    failures = upgraded.warnings
    if upgraded.returncode and not failures:
        failures_text = [f"the build failed (exit {upgraded.returncode}) naming no page:",
                         upgraded.log[-2000:]]
    else:
        failures_text = [str(w) for w in failures]
    claims = [w for w in failures if w.error is AuthorError.CLAIM_FAILED]
    say(f"\n== Claims and cells that failed ({len(claims)} claims, "
        f"{len(failures) - len(claims)} other) ==")
    for text in failures_text or ["none"]:
        say(text)
    # A failing cell stops its page: the cells after it did not run.
    stopped_at = {w.page: w.line for w in failures if w.page and w.line}

    changes = site_outputs.changed_cells(before, after)
    reworded = [(old, new) for old, new in changes
                if old and new and "raises-exception" in old.tags
                and old.error and new.error and old.error != new.error]
    not_run = [(old, new) for old, new in changes
               if old and old.page in stopped_at and old.line > stopped_at[old.page]]
    failed_cells = [(old, new) for old, new in changes
                    if stopped_at.get((old or new).page) == (old or new).line]
    shown = [change for change in changes
             if change not in reworded + not_run + failed_cells]

    say(f"\n== Error messages reworded ({len(reworded)}) ==")
    for old, new in reworded or [(None, None)]:
        if old is None:
            say("none")
            continue
        say(f"{old.page}:{old.line}")
        say(f"  old: {old.error[1]}: {old.error[2]}")
        say(f"  new: {new.error[1]}: {new.error[2]}")

    pages = sorted({(old or new).page for old, new in shown})
    say(f"\n== Outputs that changed ({len(shown)} cells on {len(pages)} pages) ==")
    for page in pages:
        say(f"{page}")
        for old, new in shown:
            cell: Cell = old or new
            if cell.page != page:
                continue
            say(f"  line {cell.line}:")
            shown_before = site_outputs.as_text(old.outputs) if old else "(no cell)"
            shown_after = site_outputs.as_text(new.outputs) if new else "(no cell)"
            say(site_outputs.side_by_side(f"torch {pinned}\n{shown_before}",
                                          f"torch {installed}\n{shown_after}"))
    for page in sorted({old.page for old, _ in not_run}):
        count = sum(old.page == page for old, _ in not_run)
        say(f"{page}: {count} later cell(s) did not run (the page stopped at line "
            f"{stopped_at[page]})")

    say(f"\n== tests/test_error_messages.py with torch {installed} ==")
    say(test_summary)

    failed = bool(upgraded.returncode) or bool(test_code)
    say(f"\n{'FAILED' if failed else 'passed'}: {len(claims)} claims failed, "
        f"{len(failures) - len(claims)} other failures, {len(reworded)} error messages "
        f"reworded, {len(shown)} outputs changed on {len(pages)} pages; error-messages "
        f"test {'failed' if test_code else 'passed'}. "
        f"{time.perf_counter() - started:.0f} s in all ({site_outputs.machine_note()})")
    OUT.mkdir(parents=True, exist_ok=True)
    report = OUT / f"report-torch-{args.torch}.txt"
    report.write_text("\n".join(lines) + "\n", encoding="utf8")
    print(f"written to {report.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
