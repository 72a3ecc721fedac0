"""The repository's address on GitHub, read in one place and never invented.

In order: GitHub Actions' ``GITHUB_REPOSITORY`` (``owner/name``, with
``GITHUB_REF_NAME`` its branch), Read the Docs' ``READTHEDOCS_GIT_CLONE_URL``
(with ``READTHEDOCS_GIT_IDENTIFIER``), else the checkout's ``origin`` remote
when it is on github.com. Without any, ``find`` returns None, and whatever
links to the repository is left out (the build says so in one line).

The Pages workflow (.github/workflows/docs.yml) publishes the built notebooks
to the branch ``NOTEBOOKS_BRANCH``, each at its page's path: Colab opens them
from there (``colab_url``).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging

from autograd_docs import build_state

NOTEBOOKS_BRANCH = "notebooks"  # where .github/workflows/docs.yml pushes the notebooks
GITHUB_URL = re.compile(
    r"^(?:https://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)


@dataclass(frozen=True)
class Repository:
    name: str  # owner/name
    branch: str | None  # the branch built, when known
    source: str  # which variable or remote said so

    def colab_url(self, path: str) -> str:
        """Colab's address for the notebook ``path`` published on ``NOTEBOOKS_BRANCH``."""
        return (
            f"https://colab.research.google.com/github/{self.name}/blob/{NOTEBOOKS_BRANCH}/{path}"
        )


def from_url(url: str) -> str | None:
    """``owner/name`` of a github.com clone URL, else None."""
    match = GITHUB_URL.match(url.strip())
    return match["repo"] if match else None


def find(root: Path, environ: Mapping[str, str] = os.environ) -> Repository | None:
    """The repository ``root`` is built from, as the environment or git says."""
    if environ.get("GITHUB_REPOSITORY"):
        return Repository(
            environ["GITHUB_REPOSITORY"],
            environ.get("GITHUB_REF_NAME") or None,
            "GITHUB_REPOSITORY",
        )
    if name := from_url(environ.get("READTHEDOCS_GIT_CLONE_URL", "")):
        return Repository(
            name, environ.get("READTHEDOCS_GIT_IDENTIFIER") or None, "READTHEDOCS_GIT_CLONE_URL"
        )
    try:
        origin = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    if name := from_url(origin):
        return Repository(name, None, "the git remote origin")
    return None


def _find_once(app: Sphinx) -> None:
    # One lookup per build, kept with the build's state: every link reads it (of).
    build_state.of(app).repository = found = find(Path(app.confdir))
    if found is None:
        sphinx_logging.getLogger(__name__).info(
            "no repository address (GITHUB_REPOSITORY, READTHEDOCS_GIT_CLONE_URL or a "
            'github.com origin remote): pages get no "Open in Colab", edit or source link'
        )


def of(app: Sphinx) -> Repository | None:
    """The repository this build is from, as read once when the builder started."""
    return build_state.of(app).repository


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _find_once)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
