"""Fixtures shared by the tests that build a copy of the site."""

import shutil
import tempfile
from pathlib import Path

import pytest

from site_copy import build, make_copy


@pytest.fixture(scope="session")
def workspace():
    """A folder of our own: other pytest runs on the machine prune /tmp/pytest-of-*."""
    with tempfile.TemporaryDirectory(prefix="autograd-site-") as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def built_copy(workspace) -> Path:
    """The small copy of the site, built once from clean; treat it as read-only.

    Its execution cache is warm, so a copy of it re-executes only the pages a
    test changes.
    """
    folder = make_copy(workspace / "built")
    result = build(folder, jobs=2)
    assert result.returncode == 0, f"the unbroken copy must build:\n{result.log}"
    return folder


@pytest.fixture
def fresh_folder(workspace, request) -> Path:
    """An empty folder for one test, inside the session's workspace."""
    return Path(tempfile.mkdtemp(prefix=request.node.name[:40] + "-", dir=workspace))


@pytest.fixture
def warm_copy(built_copy, fresh_folder) -> Path:
    """A private copy of ``built_copy``, execution cache included, to break."""
    folder = fresh_folder / "site"
    shutil.copytree(built_copy, folder, symlinks=True)
    return folder
