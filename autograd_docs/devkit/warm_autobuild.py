"""``make livehtml``: sphinx-autobuild, each rebuild forked from a process that
has already imported Sphinx, the site's extensions and what executing a page imports.

Under plain sphinx-autobuild every save starts a new ``python -m sphinx``: about
1.1 s of imports and set-up before Sphinx reads the page, and 0.5 s more
(jupyter-cache, SQLAlchemy, nbclient) when the page executes. Here this process
imports all that once, before sphinx-autobuild starts, and each rebuild runs
Sphinx's own command line (``sphinx.cmd.build.main``) in a fork of it. Each
rebuild is still a new process, and nothing of an earlier build can remain in it:
this process only imports, it never builds.

A module file imported at the start that has changed since (the engine being
edited, a package upgraded) would be stale in the fork. Each rebuild checks
first; if one has changed, the rebuild runs as ``python -m sphinx``, as
sphinx-autobuild's own does, and the log says which file and what to do.

    python -m autograd_docs.devkit.warm_autobuild <sphinx-autobuild's arguments>
"""

from __future__ import annotations

import ast
import importlib
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path

# Imported ahead besides conf.py's extensions and their parts: Sphinx's command
# line, the theme, and what a build imports only when a page executes.
AHEAD = (
    "sphinx.cmd.build",
    "furo",
    "myst_nb.core.execute",
    "jupyter_cache.cache.main",
    "nbclient",
    "autograd_docs.kernels.page_client",
)
SAYS = "livehtml:"  # how this module's lines in the log begin


def conf_extensions(conf: Path) -> list[str]:
    """The extensions ``conf.py`` lists, if it lists them as a literal (ours does);
    read, not run: running conf.py is each build's business."""
    tree = ast.parse(conf.read_text(encoding="utf8"), str(conf))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "extensions" for target in node.targets
        ):
            try:
                return [name for name in ast.literal_eval(node.value) if isinstance(name, str)]
            except ValueError:
                return []
    return []


def import_ahead(conf: Path) -> dict[str, int]:
    """Import what a build imports; return each imported module file's mtime."""
    import autograd_docs

    for name in (*AHEAD, *conf_extensions(conf), *autograd_docs.PARTS):
        importlib.import_module(name)
    return modification_times()


def modification_times() -> dict[str, int]:
    times = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:
            try:
                times[path] = os.stat(path).st_mtime_ns
            except OSError:
                continue  # a module from a zip or a frozen one: no file to go stale
    return times


def changed_since(imported: dict[str, int]) -> str | None:
    """A module file imported ahead that changed or went since, or None."""
    for path, mtime in imported.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return path
        except OSError:
            return path
    return None


class WarmSphinx:
    """What sphinx-autobuild calls to run Sphinx: in a fork of this process, or,
    once a file imported ahead has changed, as a new ``python -m sphinx``."""

    def __init__(self, imported: dict[str, int]) -> None:
        self.imported = imported

    def __call__(self, arguments: list[str]) -> int:
        stale = changed_since(self.imported)
        if stale is not None:
            print(
                f"{SAYS} {stale} changed since the preview started: this rebuild runs "
                "`python -m sphinx` (restart `make livehtml` to rebuild in a fork again)",
                flush=True,
            )
            return subprocess.run([sys.executable, "-m", "sphinx", *arguments]).returncode
        _flush()
        child = os.fork()
        if child == 0:
            _build_here(arguments)  # never returns
        _, status = os.waitpid(child, 0)
        return os.waitstatus_to_exitcode(status)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # a closed pipe (`| tee` gone), Ctrl-C: nothing to save
            pass


def _build_here(arguments: list[str], announce: bool = True) -> None:
    """In the fork: run Sphinx as a fresh ``python -m sphinx`` would, then exit,
    whatever happens; never return into the code that forked. ``announce``: say
    so in the log first (the tests' forked builds, ``tests/build_forks.py``, must
    log what ``make`` logs)."""
    from autograd_docs._compat import process  # imported ahead, with the parts

    code = 1
    try:
        # What the forking process set up is not Sphinx's: sphinx-autobuild's
        # server (uvicorn) turns SIGINT and SIGTERM into "exit later", and its
        # exit handlers are its own. Python's defaults, as a new interpreter has.
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        process.forget_exit_functions()
        if announce:
            print(
                f"{SAYS} rebuilding in a fork of the preview's process (pid {os.getpid()})",
                flush=True,
            )
        from sphinx.cmd.build import main

        code = main(arguments)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            process.run_exit_functions()  # what the build registered (kernels' close)
        finally:
            _flush()
            os._exit(code)


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    conf_dir = arguments[arguments.index("-c") + 1] if "-c" in arguments else "."
    imported = import_ahead(Path(conf_dir) / "conf.py")
    print(
        f"{SAYS} each rebuild forks this process ({len(imported)} modules imported once)",
        flush=True,
    )

    from sphinx_autobuild.__main__ import main as autobuild

    from autograd_docs._compat.autobuild import run_sphinx_with

    run_sphinx_with(WarmSphinx(imported))
    autobuild(arguments)


if __name__ == "__main__":
    main()
