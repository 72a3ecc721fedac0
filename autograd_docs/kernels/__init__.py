"""How a page is executed: one choice, ``autograd_docs_page_execution`` in
``conf.py``, and the one owner of the ``python3`` kernelspec.

The choice names one of ``ways.WAYS``:

* ``"forked-pages"`` (the default): each page runs in a process forked from a
  warm server that imported torch once, which runs the cells itself
  (``page_runner.py``) and streams the messages back to nbclient
  (``page_client.py``);
* ``"forked-kernels"``: each page gets a Jupyter kernel forked from that server,
  driven over the kernel protocol (the way before the page runner, and its
  oracle in tests);
* ``"plain-kernels"``: each page starts a kernel of its own, from cold.

Two environment variables override it, for one build:
``AUTOGRAD_DOCS_FORK_SERVER=0`` chooses plain kernels and
``AUTOGRAD_DOCS_KERNEL_PROTOCOL=1`` forked kernels. Where fork is not available
(not Linux), a forked way says so once and runs plain kernels.

A forked way's server outlives the build (``warm_server.py``): the next build
of the same site, with the same interpreter, packages, engine and snippets,
forks its pages from it instead of waiting seconds for a new one to import
torch. It exits after ``autograd_docs_server_idle`` seconds without a page (600
by default; ``AUTOGRAD_DOCS_SERVER_IDLE`` overrides it, and 0 makes the server
end with the build, as ``make test`` does), or at ``make clean``.

jupyter-cache's ``executenb``, the one call through which myst-nb executes a
page, is wrapped here to call the chosen way's ``execute``. The way is started
while Sphinx is still loading when pages are likely to be read (so the server's
imports overlap the other extensions'), its kernelspec is written before pages
are read, and it is closed when the build finishes, or at interpreter exit if
the build fails. Parallel readers (``-j``) are forked after it starts and share
it. The kernelspec is named ``python3`` so that the downloadable notebooks name
the kernel readers have.
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ConfigError
from sphinx.util import logging

from autograd_docs import _compat
from autograd_docs._compat import config_value_at_setup
from autograd_docs.execution import cache_key
from autograd_docs.kernels import fork_server
from autograd_docs.kernels.environment import kernel_environment
from autograd_docs.kernels.ways import WAYS, Keep, PageExecution, run_in_kernel

logger = logging.getLogger(__name__)

CONFIG = "autograd_docs_page_execution"
DEFAULT = "forked-pages"
ENV_SWITCH = "AUTOGRAD_DOCS_FORK_SERVER"  # =0: plain kernels
PROTOCOL_SWITCH = "AUTOGRAD_DOCS_KERNEL_PROTOCOL"  # =1: forked kernels
# How long the fork server waits for the next build (warm_server.py), in seconds.
IDLE = "autograd_docs_server_idle"
IDLE_DEFAULT = 600.0
IDLE_SWITCH = "AUTOGRAD_DOCS_SERVER_IDLE"  # overrides it for one build; 0: no warm server

# The one piece of module state: the way pages run in this process. It is here,
# not on the application, because jupyter-cache calls ``executenb`` with no
# application to find it on; parallel readers inherit it when they fork.
_active: PageExecution | None = None


def chosen(configured: str) -> tuple[str, str | None]:
    """The way this build runs pages, from conf.py's choice (or ``-D``), which
    the environment overrides, and why it is not the configured one (None if it is)."""
    name, reason = configured, None
    if os.environ.get(ENV_SWITCH, "1") == "0":
        name, reason = "plain-kernels", f"{ENV_SWITCH}=0"
    elif os.environ.get(PROTOCOL_SWITCH) == "1":
        name, reason = "forked-kernels", f"{PROTOCOL_SWITCH}=1"
    unavailable = fork_server.unavailable_reason() if WAYS[name].forks else None
    if unavailable:
        name, reason = "plain-kernels", unavailable
    return name, reason if name != configured else None


def _check(app: Sphinx, config) -> None:
    if config[CONFIG] not in WAYS:
        raise ConfigError(
            f"conf.py: {CONFIG} = {config[CONFIG]!r} is not a way to run pages; "
            f"choose one of {', '.join(map(repr, WAYS))} (autograd_docs/kernels/ways.py)"
        )


def _activate(app: Sphinx, configured: str) -> PageExecution:
    global _active
    if _active is None:
        name, reason = chosen(configured)
        idle = _idle_seconds(app)
        snippets = config_value_at_setup(app.config, "autograd_docs_snippets_dir")
        keep = Keep(Path(app.confdir), idle, Path(snippets) if snippets else None)
        _active = WAYS[name](kernel_environment(Path(app.confdir)), reason, keep)
        atexit.register(_close)
    return _active


def _idle_seconds(app: Sphinx) -> float:
    """How long the fork server waits for the next build: the environment's
    override, else conf.py's (or ``-D``) value; a clear error if it is no number
    of seconds from 0 to a day."""
    raw = os.environ.get(IDLE_SWITCH) or config_value_at_setup(app.config, IDLE, IDLE_DEFAULT)
    try:
        idle = float(raw)
    except (TypeError, ValueError):
        idle = -1.0
    if not 0 <= idle <= 86400:
        where = IDLE_SWITCH if os.environ.get(IDLE_SWITCH) else f"conf.py: {IDLE}"
        raise ConfigError(
            f"{where} = {raw!r}: give the seconds the fork server waits "
            "for the next build, from 0 (it ends with the build) to 86400"
        )
    return idle


def _sources_changed(app: Sphinx) -> bool:
    """A cheap guess at whether this build will read pages: no saved environment,
    or a page, snippet or conf.py newer than it."""
    saved = Path(app.doctreedir) / "environment.pickle"
    if not saved.exists():
        return True
    since = saved.stat().st_mtime
    snippets = config_value_at_setup(app.config, "autograd_docs_snippets_dir")
    candidates = [Path(app.confdir) / "conf.py", *Path(app.srcdir).rglob("*.md")]
    if snippets:
        candidates += Path(snippets).glob("*.py")
    return any(path.stat().st_mtime > since for path in candidates)


def _start_early(app: Sphinx) -> None:
    """Start the way while Sphinx is still loading, if pages will be read.

    If the guess says nothing changed, the way waits until Sphinx knows it has
    pages to read (``_install_kernelspec``): a no-change rebuild never starts a
    server. A choice conf.py misspelt starts nothing: ``_check`` reports it.
    """
    configured = config_value_at_setup(app.config, CONFIG, DEFAULT)
    executes = config_value_at_setup(app.config, "nb_execution_mode", "auto") != "off"
    if configured in WAYS and executes and _sources_changed(app):
        _activate(app, configured).start()


def kernelspec_file(app: Sphinx) -> Path:
    """Where the build's ``python3`` kernelspec lives (searched via JUPYTER_PATH)."""
    return Path(app.doctreedir) / "jupyter" / "kernels" / "python3" / "kernel.json"


def _install_kernelspec(app: Sphinx, env, docnames: list[str]) -> None:
    """Before pages are read: start the way and write the ``python3`` kernelspec,
    once, with the command that runs its kernels.

    JUPYTER_PATH is searched before the venv's own kernelspecs, and kernels
    started by parallel readers inherit it.
    """
    # A page's own front matter may execute it whatever nb_execution_mode says.
    if not any(_compat.executes_page(app, docname) for docname in docnames):
        return
    way = _activate(app, app.config[CONFIG])
    if way.reason and way.name == "plain-kernels":
        logger.info(
            f"fork server off ({way.reason}): each page starts its own kernel "
            "and imports torch itself"
        )
    elif way.reason:
        logger.info(f"pages run as {way.name}, not as {app.config[CONFIG]} ({way.reason})")
    way.start()
    spec = {
        "argv": way.kernel_argv(),
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "env": way.environment,
    }
    spec_file = kernelspec_file(app)
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(spec, indent=1), encoding="utf8")
    kernels = str(spec_file.parent.parent.parent)
    if kernels not in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            filter(None, [kernels, os.environ.get("JUPYTER_PATH")])
        )


def _execute_page(original):
    """Wrap jupyter-cache's ``executenb``: the active way runs the page."""

    def executenb(notebook, cwd=None, **kwargs):
        kwargs = {**kwargs, **cache_key.NBCLIENT_OPTIONS}
        if _active is None:  # no page was to execute (_install_kernelspec): nbclient's own way
            return run_in_kernel(original, notebook, cwd, **kwargs)
        return _active.execute(original, notebook, cwd, **kwargs)

    return executenb


def _close(*_args) -> None:
    """Close the active way; only the process that started it does (a forked
    reader that exits leaves it to the build)."""
    global _active
    if _active is not None and _active.owner == os.getpid():
        _active.close()
        _active = None


def setup(app: Sphinx) -> dict:
    # Builds in one process run one after another: what an earlier one left
    # active (it failed before build-finished) is not this build's.
    _close()
    # Not an "env" value: every way gives a page the same outputs.
    app.add_config_value(CONFIG, DEFAULT, "", str)
    app.add_config_value(IDLE, IDLE_DEFAULT, "", (int, float))
    app.connect("config-inited", _check)
    _start_early(app)
    # env-before-read-docs: before parallel readers fork, and only when pages are read.
    app.connect("env-before-read-docs", _install_kernelspec)
    app.connect("build-finished", _close)
    _compat.wrap_executenb(_execute_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
