"""A scratch copy of the repository, for the tools that build the site somewhere else.

``make bench``, ``make mutants`` and ``make upgrade-check`` each build a copy so
that the reader's ``_build`` is never touched. Not part of the Sphinx extension.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINKED = (".venv", "node_modules")  # installed once, shared by the copy


def copy_repo(dest: Path, seed_cache_from: Path | None = None) -> Path:
    """The repository's files as git sees them (tracked and new) in ``dest``.

    ``.venv`` and ``node_modules`` are links to the repository's. With
    ``seed_cache_from`` (a build folder), its execution cache is copied in, so
    the copy's first build executes only the pages whose code differs from that
    build's; without it the copy's first build is clean.
    """
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if name in LINKED or not source.is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name)
    for link in LINKED:
        (dest / link).symlink_to((ROOT / link).resolve(), target_is_directory=True)
    cache = seed_cache_from and seed_cache_from / ".jupyter_cache"
    if cache and cache.is_dir():
        shutil.copytree(cache, dest / "_build" / ".jupyter_cache")
    return dest


def finish(scratch: Path, keep: bool) -> None:
    """Stop the warm fork server of every copy in ``scratch`` (none may outlive
    the tool), then remove the folder unless asked to ``keep`` it."""
    from autograd_docs.kernels import warm_server

    for site in scratch.iterdir():
        if (site / "conf.py").exists():
            warm_server.stop(site)
    if keep:
        print(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
