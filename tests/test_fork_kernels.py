"""The page runner's processes: isolated from each other, and under the build's control.

Each page runs in ``page_runner.py``, in a process forked from one warm server
(autograd_docs/kernels/server.py), or started cold (``cold.py``) where no server
answers. These tests drive it the way the build does (nbclient, through
``page_client``), and check that nothing a page does reaches the next page, that
the runner's outputs and errors are a stock kernel's, that a cold page prints
what a forked one prints, and that nothing outlives the server. They assert
behaviour, never times.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import nbclient
import nbformat
import pytest
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from sphinx.errors import ConfigError

from autograd_docs import settings
from autograd_docs.devkit import stock_kernel
from autograd_docs.execution.cache_key import NBCLIENT_OPTIONS
from autograd_docs.kernels import (
    fork_server,
    page_client,
    page_runner,
    start_lock,
    warm_server,
)
from autograd_docs.kernels.environment import kernel_environment

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    fork_server.unavailable_reason() is not None,
    reason=f"fork server unavailable: {fork_server.unavailable_reason()}",
)

# What the build starts its server with (hash seed, matplotlibrc, SOURCE_DATE_EPOCH).
BUILD_ENVIRONMENT = kernel_environment(ROOT)


@pytest.fixture(scope="module")
def server():
    """One fork server, as the build starts it."""
    server = fork_server.ForkServer(BUILD_ENVIRONMENT)
    yield server
    server.stop()


@pytest.fixture
def temp():
    """A temp folder of the test's own with a short path: a unix socket's path
    (the server's, inside it) must fit in 108 bytes, which pytest's tmp_path under
    xdist does not."""
    folder = tempfile.mkdtemp(prefix="fk-")
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return not stat.read_text().split(") ")[-1].startswith("Z")
    except FileNotFoundError:
        return False


def wait_until_dead(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


PRISTINE = """
    import torch, numpy
    print(json.dumps({
        "leak": "leak" in globals(),
        "initial_seed": torch.initial_seed(),
        "seeded": (torch.manual_seed(0), torch.rand(3).tolist())[1],
        "precision": torch._tensor_str.PRINT_OPTS.precision,
        "grad": torch.is_grad_enabled(),
        "dtype": str(torch.get_default_dtype()),
        "numpy_precision": numpy.get_printoptions()["precision"],
        "threads": torch.get_num_threads(),
    }))
"""

MESS_UP = """
    import torch, numpy
    leak = "page A was here"
    torch.manual_seed(1234); torch.rand(5)
    torch.set_printoptions(precision=1)
    torch.set_grad_enabled(False)
    torch.set_default_dtype(torch.float64)
    numpy.set_printoptions(precision=2)
    torch.set_num_threads(1)
"""


def fresh_interpreter_defaults() -> dict:
    """The oracle: what a brand-new Python process sees, no server involved."""
    code = "import json\n" + textwrap.dedent(PRISTINE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


# -- pages run by page_runner.py, as the build runs them ---------------------------

def notebook(*cells) -> nbformat.NotebookNode:
    """A page's notebook: each cell its source, or (source, tags)."""
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(textwrap.dedent(cell), metadata={})
        if isinstance(cell, str) else
        nbformat.v4.new_code_cell(textwrap.dedent(cell[0]), metadata={"tags": cell[1]})
        for cell in cells])


def run_forked(server, page: nbformat.NotebookNode, cwd: Path, timeout: int = 60):
    """Run ``page`` as the build runs a page: forked from ``server``, or, with
    None, started cold."""
    return page_client.execute_page(
        nbclient.execute, page, server and server.socket_path,
        {**os.environ, **BUILD_ENVIRONMENT}, cwd=str(cwd), timeout=timeout, allow_errors=False,
        **NBCLIENT_OPTIONS)


def run_in_kernel(page: nbformat.NotebookNode, cwd: Path, monkeypatch) -> nbformat.NotebookNode:
    """The oracle: the same page in a stock Jupyter kernel started cold, with the
    build's environment."""
    for name, value in BUILD_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    return stock_kernel.run_in_kernel(nbclient.execute, page, str(cwd), timeout=60,
                                      allow_errors=False, kernel_name="python3", **NBCLIENT_OPTIONS)


# What a kernel makes of a cell: every kind of output, in a kernel's order. Not
# a write to the file descriptor: ipykernel captures it on a thread of its own,
# and in a kernel as in the runner it sometimes lands in the next cell.
EVERY_KIND_OF_OUTPUT = [
    """
    import sys, warnings
    import torch
    print("to stdout"); print("to stderr", file=sys.stderr); print("stdout again")
    warnings.warn("a warning")
    torch.arange(3.0)
    """,
    """
    from IPython.display import HTML, Markdown, display
    display(HTML("<b>rich</b>"), Markdown("*md*"))
    handle = display("to be updated", display_id=True)
    handle.update("updated")
    """,
    """
    import matplotlib.pyplot as plt
    plt.plot([0, 1], [1, 0]); plt.title("a figure")
    """,
    ("""
    def fails():
        raise ValueError("expected")
    fails()
    """, ["raises-exception"]),
    "%time x = sum(range(10))\nx",
    # What the kernel app sets up for a page: matplotlib's backend, the working
    # folder on the path.
    """
    import os, sys
    print(os.environ.get("MPLBACKEND"), sys.path.index("") if "" in sys.path else None)
    """,
]


def without_pids(outputs) -> str:
    """A warning names the cell's file, /tmp/ipykernel_<pid>/…: a pid, either way."""
    return re.sub(r"ipykernel_\d+", "ipykernel_<pid>", json.dumps(outputs))


def assert_same_outputs(ours: nbformat.NotebookNode, theirs: nbformat.NotebookNode) -> None:
    assert ours.metadata == theirs.metadata  # language_info, from kernel_info
    for index, (mine, other) in enumerate(zip(ours.cells, theirs.cells, strict=True)):
        if "%time" in mine.source:  # a timing: the same outputs, other numbers
            assert [o.get("name") for o in mine.outputs] == [
                o.get("name") for o in other.outputs]
            continue
        assert (mine.execution_count, without_pids(mine.outputs)) == (
            other.execution_count, without_pids(other.outputs)), f"cell {index}"
    kinds = {output.output_type for cell in ours.cells for output in cell.outputs}
    assert kinds == {"stream", "execute_result", "display_data", "error"}
    figure = ours.cells[2].outputs[-1]
    assert figure.data["image/png"] == theirs.cells[2].outputs[-1].data["image/png"]


def test_a_forked_page_prints_what_a_kernel_prints(server, tmp_path, monkeypatch):
    forked = run_forked(server, notebook(*EVERY_KIND_OF_OUTPUT), tmp_path)
    kernel = run_in_kernel(notebook(*EVERY_KIND_OF_OUTPUT), tmp_path, monkeypatch)
    assert_same_outputs(forked, kernel)


def test_a_page_whose_server_is_gone_runs_cold_and_prints_the_same(server, temp, tmp_path,
                                                                  caplog):
    """The one fallback: no server answers (or none can fork, not Linux), and the
    page runs in a process started cold with the same request and runner."""
    gone = temp / "gone" / "server.sock"
    # Every kind of output, then where the page ran (one cold start for both).
    probe = "import os, sys\nprint(os.getppid(), 'torch' in sys.modules, sys.argv[0].rsplit('/', 1)[-1])"
    with caplog.at_level("INFO"):
        cold = page_client.execute_page(
            nbclient.execute, notebook(*EVERY_KIND_OF_OUTPUT, probe), str(gone),
            {**os.environ, **BUILD_ENVIRONMENT}, cwd=str(tmp_path), timeout=120,
            allow_errors=False, **NBCLIENT_OPTIONS)
    # Its parent is this process, not a server; it imported what a server imports.
    assert cold.cells.pop().outputs[0].text.split() == [
        str(os.getpid()), "True", "page_runner.py"]
    assert "this page runs cold" in caplog.text
    assert_same_outputs(cold, run_forked(server, notebook(*EVERY_KIND_OF_OUTPUT), tmp_path))


def test_a_forked_page_sees_none_of_what_the_page_before_it_did(server, tmp_path):
    page_a = run_forked(server, notebook("import os\nos.getpid()", MESS_UP), tmp_path)
    page_b = run_forked(server, notebook("import os\nos.getpid()",
                                         "import json\n" + textwrap.dedent(PRISTINE)),
                        tmp_path)
    pid_a, pid_b = (int(page.cells[0].outputs[0].data["text/plain"])
                    for page in (page_a, page_b))
    assert pid_a != pid_b, "every page runs in its own process"
    seen = json.loads(page_b.cells[1].outputs[0].text)
    fresh = fresh_interpreter_defaults()
    assert seen.pop("initial_seed") not in (fresh.pop("initial_seed"), 1234)
    assert seen == fresh


def test_a_forked_page_fails_as_nbclient_fails_a_kernel(server, tmp_path):
    page = notebook("x = 1", "raise KeyError('missing')", "x = 2")
    with pytest.raises(CellExecutionError) as failed:
        run_forked(server, page, tmp_path)
    assert failed.value.ename == "KeyError"
    assert page.cells[1].outputs[0].ename == "KeyError"
    assert page.cells[2].execution_count is None, "the cell after the error never ran"


def test_a_forked_page_times_out_and_its_process_is_killed(server, tmp_path):
    page = notebook("import os\nprint(os.getpid(), flush=True)",
                    "import time\ntime.sleep(600)")
    with pytest.raises(CellTimeoutError):
        run_forked(server, page, tmp_path, timeout=2)
    assert page.cells[1].execution_count == 2, "the cell that timed out had started"
    assert wait_until_dead(int(page.cells[0].outputs[0].text)), (
        "the timed-out page's process is gone")


def test_a_forked_page_whose_process_dies_fails_as_a_dead_kernel(server, tmp_path):
    with pytest.raises(DeadKernelError):
        run_forked(server, notebook("import os\nos._exit(3)"), tmp_path)


def test_cells_to_run_follows_nbclient(server, tmp_path):
    """nbclient skips empty cells, markdown and skip-execution; the runner must
    be given exactly the cells nbclient asks for, or the page fails loudly."""
    page = notebook("", ("raise SystemExit('skipped')", ["skip-execution"]), "1 + 1")
    page.cells.insert(0, nbformat.v4.new_markdown_cell("# a page"))
    assert [cell["source"] for cell in page_client.cells_to_run(page, False)] == ["1 + 1"]
    run_forked(server, page, tmp_path)
    assert page.cells[-1].outputs[0].data["text/plain"] == "2"


# One process imports what both need, then forks: the child runs the server's first
# property and draws, the parent draws after it without; each prints its members
# (a tensor's repr spans lines) and a NUL.
DRAW_MEMBERS = """
import os, sys
sys.path.insert(0, {snippets!r})
from autograd_docs.kernels import preload
warm = os.fork() == 0
if not warm:
    os.waitpid(-1, 0)
if warm:
    preload._first_property()
import families, seed_properties
print(repr([families.members(family, 25) for family in (
    families.vector_maps(), families.small_networks(), families.points(),
    families.batches(), seed_properties.leaf_graphs_with_cut_paths())]), end="\\0", flush=True)
"""


def test_the_servers_first_property_changes_nothing_a_page_draws(tmp_path):
    """preload runs one empty property in the server, to pay Hypothesis's first-run
    cost once: the members a page's families then draw must be the ones they draw
    without it."""
    code = DRAW_MEMBERS.format(snippets=str(ROOT / "snippets"))
    warm, cold, _ = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                                   capture_output=True, text=True).stdout.split("\0")
    assert warm.startswith("[[") and warm == cold
    assert not (tmp_path / ".hypothesis").exists()


def test_a_page_is_forked_from_the_server_with_torch_already_imported(server, tmp_path):
    page = run_forked(server, notebook("""
        import os, sys
        print(os.getppid(), 'torch' in sys.modules, os.getcwd())
        """, """
        import numpy, torch
        a = numpy.random.default_rng(0).random((400, 400)) + 400 * numpy.eye(400)
        print(numpy.allclose(numpy.linalg.inv(a) @ a, numpy.eye(400), atol=1e-6))
        b = torch.from_numpy(a).flip(0).T.contiguous()
        print(torch.allclose(torch.linalg.inv(b) @ b, torch.eye(400, dtype=torch.float64),
                             atol=1e-6))
        """), tmp_path, timeout=120)
    assert page.cells[0].outputs[0].text.split() == [
        str(server.process.pid), "True", str(tmp_path)]
    # numpy's BLAS threads existed in the server before the fork; torch's
    # thread pool did not. Both must work (not hang) in the child.
    assert "".join(o.text for o in page.cells[1].outputs) == "True\nTrue\n"


def test_a_page_runs_with_the_builds_environment(server, tmp_path):
    """What is read when Python and matplotlib start was read by the server, so
    the server must have been started with the build's environment."""
    names = sorted(BUILD_ENVIRONMENT)
    page = run_forked(server, notebook(f"""
        import json, os, sys, matplotlib
        print(json.dumps([{{k: os.environ.get(k) for k in {names!r}}},
                          sys.flags.hash_randomization, hash('seed'),
                          matplotlib.rcParams['svg.hashsalt']]))
        """), tmp_path)
    seen, randomized, seed_hash, salt = json.loads(page.cells[0].outputs[0].text)
    assert seen == BUILD_ENVIRONMENT
    assert randomized == 0
    assert seed_hash == int(subprocess.run(
        [sys.executable, "-c", "print(hash('seed'))"], capture_output=True, text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"}, check=True).stdout)
    assert salt == "autograd-explained"


def test_nothing_outlives_the_server(tmp_path):
    server = fork_server.ForkServer(BUILD_ENVIRONMENT)
    manager = page_client.PageManager(
        server.socket_path, [{"source": "import time; time.sleep(600)", "stop_on_error": True}],
        {**os.environ, **BUILD_ENVIRONMENT})
    manager.start_kernel(cwd=str(tmp_path))
    try:
        server.stop()
        assert wait_until_dead(server.process.pid)
        assert wait_until_dead(manager.pid), "stopping the server kills its children"
        assert not Path(server.folder).exists()
    finally:
        manager.cleanup_resources()


BUILD = f"""
import sys, time
from autograd_docs.kernels import fork_server

from autograd_docs.kernels.environment import kernel_environment
server = fork_server.ForkServer(kernel_environment(__import__("pathlib").Path({str(ROOT)!r})))
print(server.process.pid, server.folder, flush=True)
if sys.argv[1] != "starting":
    server.wait_until(sys.argv[1])
print("at", sys.argv[1], flush=True)
time.sleep(600)
"""


def start_build(moment: str, temp: Path) -> tuple[subprocess.Popen, int, Path]:
    """A stand-in for sphinx-build that starts a fork server, and waits until the
    server is at ``moment``: ``starting`` (Python starting), ``importing`` (torch
    and the rest) or ``ready``."""
    build = subprocess.Popen(
        [sys.executable, "-c", BUILD, moment, json.dumps(BUILD_ENVIRONMENT)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temp)})
    server_pid, folder = build.stdout.readline().split()
    assert build.stdout.readline().strip() == f"at {moment}"
    return build, int(server_pid), Path(folder)


@pytest.mark.parametrize("moment", ["starting", "importing", "ready"])
def test_the_server_exits_and_tidies_up_when_the_build_dies(temp, moment):
    """A build killed outright (no atexit, no build-finished), at any moment of
    its server's life, takes the server along, and the server removes the build's
    folder."""
    build, server_pid, folder = start_build(moment, temp)
    build.kill()
    build.wait()
    assert wait_until_dead(server_pid, timeout=60)
    assert not folder.exists(), f"the server left the build's folder: {list(folder.iterdir())}"


def test_the_next_build_removes_only_folders_nothing_holds(temp):
    """Where no one could tidy up (the build and its server both killed outright),
    the next build removes the folder; a live build's folder, and a folder without
    a lock, it leaves alone."""
    live, live_server, live_folder = start_build("importing", temp)
    dead, dead_server, dead_folder = start_build("importing", temp)
    os.kill(dead_server, signal.SIGKILL)
    dead.kill()
    dead.wait()
    assert wait_until_dead(dead_server)
    assert dead_folder.exists(), "nothing alive was left to remove it"
    unlocked = temp / (fork_server.FOLDER_PREFIX + "older-build")
    unlocked.mkdir()
    (unlocked / "server.sock").touch()
    try:
        # The lock goes when the last process holding it exits: a page process the
        # killed server had forked may outlive it by a moment on a busy machine.
        removed, deadline = [], time.monotonic() + 30
        while dead_folder.exists() and time.monotonic() < deadline:
            removed += fork_server.remove_stale_folders(str(temp))
            time.sleep(0.05)
        assert removed == [dead_folder]
        assert live_folder.exists() and unlocked.exists()
    finally:
        live.kill()
        live.wait()
    assert wait_until_dead(live_server, timeout=60)
    assert not live_folder.exists()


SITE_CONF = """
extensions = ["myst_nb", "autograd_docs.execution", "autograd_docs.kernels"]
autograd_docs_snippets_dir = {snippets!r}
nb_execution_mode = "cache"
# in the test's folder, beside the sources (whose notebooks a rebuild would read)
nb_execution_cache_path = __import__("os").path.join(
    __import__("os").path.dirname(__import__("os").path.dirname(__file__)), "_cache")
nb_execution_raise_on_error = True
"""

SITE_PAGE = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
  language: python
---

# Page {n}

```{{code-cell}} ipython3
import os, sys, torch
torch.manual_seed(0)
print("pid", os.getpid(), "ppid", os.getppid(), "draw", torch.rand(2).tolist())
print("argv", sys.argv[0])
{edit}
```
"""


def build_site(tmp_path: Path, *options: str, snippets: Path = ROOT / "snippets", edit: str = "",
               **env) -> tuple[str, list[str]]:
    """Build (again) a two-page site in ``tmp_path/src``; ``edit`` is a line added
    to both pages' code, so that a build after the first executes them again."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "conf.py").write_text(SITE_CONF.format(snippets=str(snippets)))
    (src / "index.md").write_text("# Site\n\n```{toctree}\na\nb\n```\n")
    for n in "ab":
        (src / f"{n}.md").write_text(SITE_PAGE.format(n=n, edit=edit))
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-j", "2", "-W", "-b", "html", *options,
         "-d", str(tmp_path / "doctrees"), str(src), str(tmp_path / "html")],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pages = [(tmp_path / "html" / f"{n}.html").read_text() for n in "ab"]
    return result.stdout + result.stderr, pages


WARM = {settings.IDLE_SWITCH: "120"}


@pytest.mark.build
def test_a_parallel_build_whose_warm_folder_is_open_to_others_runs_its_own_server(
        tmp_path, temp, monkeypatch):
    """A warm folder another user could reach is never used: the build starts a
    server of its own, as a build with no idle time does (``make test``'s), which
    both readers share and which ends with the build, leaving nothing behind."""
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the build looks (TMPDIR)
    folder = warm_server.folder_of(tmp_path / "src")
    folder.mkdir()
    folder.chmod(0o755)
    log, pages = build_site(tmp_path, TMPDIR=str(temp), **WARM)
    assert "warm fork server not used" in log and "open to others" in log, log
    assert list(folder.iterdir()) == [], "nothing was put in it"
    parents = {page.split("ppid ")[1].split()[0] for page in pages}
    assert len(parents) == 1, "both pages were forked by the same server"
    assert all("fork server off" not in line for line in log.splitlines())
    # The seeded draw is what a fresh interpreter draws after manual_seed(0).
    oracle = subprocess.run(
        [sys.executable, "-c", "import torch; torch.manual_seed(0); "
         "print(torch.rand(2).tolist())"], capture_output=True, text=True).stdout.strip()
    assert all(f"draw {oracle}" in page for page in pages)
    assert all("page_runner.py" in page for page in pages)
    assert not (tmp_path / "doctrees" / "jupyter").exists(), "no kernelspec is written"
    server_pid = int(next(iter(parents)))
    assert wait_until_dead(server_pid), "the server is gone when the build ends"
    assert [path for path in temp.glob(fork_server.FOLDER_PREFIX + "*") if path.is_dir()] == [
        folder], "the build removed its server's socket folder"  # the open one stays, empty


def forked_by(pages: list[str]) -> int:
    """The one process every page was forked from."""
    parents = {page.split("ppid ")[1].split()[0] for page in pages}
    assert len(parents) == 1, parents
    return int(parents.pop())


@pytest.mark.build
def test_the_next_build_forks_from_the_warm_server_until_the_snippets_change(tmp_path):
    """A build leaves its server running; the next build of the site forks its
    pages from it; a build whose snippets changed stops it and starts another;
    ``make clean`` stops that one, and nothing is left."""
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    (snippets / "helper.py").write_text("X = 1\n")
    _, first = build_site(tmp_path, snippets=snippets, **WARM)
    server, folder = forked_by(first), warm_server.folder_of(tmp_path / "src")
    try:
        assert alive(server) and (folder / "server.sock").exists(), "it outlives the build"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, "nobody else can reach it"
        _, second = build_site(tmp_path, snippets=snippets, edit="# edited", **WARM)
        assert forked_by(second) == server, "the next build forked its pages from it"
        before, after = ({int(page.split("pid ")[1].split()[0]) for page in pages}
                         for pages in (first, second))
        assert not before & after and server not in after, "each page a process of its own"
        (snippets / "helper.py").write_text("X = 2\n")
        _, third = build_site(tmp_path, snippets=snippets, edit="# edited again", **WARM)
        old, server = server, forked_by(third)
        assert server != old and not alive(old), "the old server was stopped first"
    finally:
        warm_server.stop(tmp_path / "src")  # what make clean does
    assert wait_until_dead(server) and not folder.exists(), "stopped, it leaves nothing"
    assert not Path(start_lock.path(str(folder))).exists()


def test_a_warm_server_exits_once_idle_for_its_idle_time(tmp_path):
    """Started as a build starts it (its idle time from the settings), it forks a
    page, then exits once idle for that long, leaving no folder and no lock.
    (That a build leaves it running and the next build forks from it: above.)"""
    site = tmp_path / "src"
    socket_path = warm_server.socket_for(BUILD_ENVIRONMENT, site, idle=1, snippets=None)
    folder = warm_server.folder_of(site)
    server_pid = warm_server._hello(folder)[1]
    ran = run_forked(SimpleNamespace(socket_path=socket_path),
                     notebook("import os\nprint(os.getppid())"), tmp_path)
    assert ran.cells[0].outputs[0].text.strip() == str(server_pid), "forked from it"
    assert wait_until_dead(server_pid, timeout=60)
    assert not folder.exists() and not Path(start_lock.path(str(folder))).exists()


@pytest.mark.parametrize("idle", ["inf", "-1", "soon", "86401"])
def test_an_idle_time_that_is_no_number_of_seconds_is_refused_clearly(monkeypatch, idle):
    monkeypatch.setenv(settings.IDLE_SWITCH, idle)
    with pytest.raises(ConfigError, match=f"{settings.IDLE_SWITCH} = '{idle}'.* from 0"):
        settings.server_idle(settings.IDLE_DEFAULT)


def test_a_message_read_late_is_filed_under_the_cell_whose_request_it_answers():
    # Under load the IOPub pump lags behind the cells: a message of cell 0 read
    # while cell 1 runs was once filed under cell 1, and showed on its page.
    requests = page_runner._Requests()
    requests.start(0)
    requests.ran("request-0")
    requests.start(1)
    assert requests.cell_of({"parent_header": {"msg_id": "request-0"}}) == 0
    assert requests.cell_of({"parent_header": {"msg_id": "request-1"}}) == 1, \
        "a request that has not returned is the running cell's"
    assert requests.cell_of({"parent_header": {}}) == 1
