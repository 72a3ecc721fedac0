"""Fixtures shared by the tests that build a copy of the site, and by those that read
what the last `make html` recorded of the real one.

Under pytest-xdist (``-n 3``) every worker is a session of its own; the small
site is still built once, by whichever worker asks first, under a file lock
(pytest-xdist's documented pattern for session fixtures), in a workspace folder
the controlling process makes and removes.

A test that builds is marked ``build`` (pytest.ini): those using a fixture of a
built site (``BUILT_SITE_FIXTURES``) are marked here, and a build of a copy from
a test without the mark fails, naming the test, so ``make check`` (``-m "not
build"``) cannot start one unawares.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

from autograd_docs.execution.claims import read_claims_file

import site_copy
from site_copy import NO_REPOSITORY, ROOT, build, make_copy

WORKSPACE = "AUTOGRAD_DOCS_TEST_WORKSPACE"
# Every build a test runs ends its fork server with it (as `make test` does), unless
# the test asks for a warm one: dozens of copies must not leave servers idling.
os.environ["AUTOGRAD_DOCS_SERVER_IDLE"] = "0"
# torch's OpenMP threads sleep when idle instead of spinning, in the workers and
# in every process they start (readers' kernels and scripts, snippets), as the
# build's pages do (kernels/environment.py says why). It changes no value computed.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_made_here: list[str] = []  # the workspace this process made, to remove at the end


def pytest_configure(config):
    """The controlling process (or the only one) makes the shared workspace.

    A folder of our own, not tmp_path_factory's: other pytest runs on the
    machine prune /tmp/pytest-of-*. Workers inherit the variable.
    """
    if not hasattr(config, "workerinput") and WORKSPACE not in os.environ:
        os.environ[WORKSPACE] = tempfile.mkdtemp(prefix="autograd-site-")
        _made_here.append(os.environ[WORKSPACE])


# The fixtures that build a copy of the site or read the real one `make html` built.
BUILT_SITE_FIXTURES = {"built_copy", "warm_copy", "real_build", "real_claims"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        if BUILT_SITE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.build)


@pytest.fixture(autouse=True)
def _a_build_needs_the_build_mark(request, monkeypatch):
    if request.node.get_closest_marker("build") is None:
        def refused(*args, **kwargs):
            raise AssertionError(f"{request.node.nodeid} builds a copy of the site: "
                                 "mark it @pytest.mark.build (make check runs the others)")
        monkeypatch.setattr(site_copy, "make", refused)


@pytest.fixture(autouse=True)
def _dynamo_as_a_fresh_page_finds_it():
    """After each test, dynamo forgets what it compiled and what it gave up on, as a
    page's own process starts: a torch.func transform of a compiled module makes it
    run every nn.Sequential eagerly from then on, and a compiled member drawn by a
    later test in this worker would then refuse (reader_settings._compiled_setting)."""
    yield
    if (dynamo := sys.modules.get("torch._dynamo")) is not None:
        dynamo.reset()


def pytest_unconfigure(config):
    for folder in _made_here:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(WORKSPACE, None)


@pytest.fixture(scope="session")
def workspace() -> Path:
    return Path(os.environ[WORKSPACE])


@pytest.fixture(scope="session")
def built_copy(workspace) -> Path:
    """The small copy of the site, built once from clean without the repository's
    address (``NO_REPOSITORY``); treat it as read-only.

    Its execution cache is warm, so a copy of it re-executes only the pages a
    test changes.
    """
    folder, done = workspace / "built", workspace / "built.log"
    with FileLock(workspace / "built.lock"):
        if not done.exists():
            make_copy(folder)
            # Two readers: 12 s instead of 22 s for the clean build (measured).
            # Through `make` itself: the contract the other builds' forks follow.
            result = build(folder, jobs=2, env=NO_REPOSITORY, through_make=True)
            done.write_text(f"{result.returncode}\n{result.log}", encoding="utf8")
    returncode, log = done.read_text(encoding="utf8").split("\n", 1)
    assert returncode == "0", f"the unbroken copy must build:\n{log}"
    return folder


@pytest.fixture(scope="session")
def built_copy_log(built_copy, workspace) -> str:
    """What ``built_copy``'s build printed."""
    return (workspace / "built.log").read_text(encoding="utf8").split("\n", 1)[1]


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


@pytest.fixture(scope="session")
def real_build() -> Path:
    """The folder the last `make html` of the real site wrote (make test builds first)."""
    return ROOT / "_build"


@pytest.fixture(scope="session")
def real_claims(real_build) -> dict[str, list[dict]]:
    """What the checks of the site `make html` built last proved, page by page (make
    test builds first): each quoting check's record, with the page lines of the check
    and of its sentence."""
    doctrees = real_build / "doctrees"
    if not (doctrees / "claims.json").is_file():
        pytest.fail("no _build/doctrees/claims.json: run `make html` first", pytrace=False)
    return read_claims_file(doctrees)
