"""How fast is the build, and how close to the floor? (`make bench`)

Works on a copy of the repository in a temporary folder (your _build is never
touched), runs every measurement --reps times (default 3) and prints medians:

floor_proc    every page's code run as a plain `python` script (converted from the
              page with myst-nb's own reader, run in the page's folder), total / cores,
              plus the render-only build
floor_warm    torch imported once, then every page's code exec'd in that warm process
              (a fresh globals dict per page), page-code total / cores, plus render-only
render-only   a clean build with execution off (nb_execution_mode=off)
clean         a clean `make html`: every page executed (fork server)
clean, protocol  the same with AUTOGRAD_DOCS_KERNEL_PROTOCOL=1: each page in a forked
              Jupyter kernel over the kernel protocol (the path before the page
              runner, which runs the cells with IPython's shell in the forked child)
clean, plain  the same with AUTOGRAD_DOCS_FORK_SERVER=0: one cold kernel per page
no-change     `make html` again with nothing changed
edit page     after editing a code cell of one page (and how many pages executed)
edit snippet  after editing one snippet (and how many pages executed, against how
              many import it)
livehtml      under `make livehtml`: from saving a page whose output changes to the
              server serving the new output
scaling       clean builds of a synthetic site of 10, 20, 40 copies of one page

Times are wall-clock seconds on this machine, under whatever else it is doing.
Targets are printed beside the ratios; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from autograd_docs.build_log import EXECUTED, FAILED, FROM_CACHE, PageLine
from autograd_docs.code_cells import code_cells
from autograd_docs.scratch_copy import copy_repo

ROOT = Path(__file__).resolve().parent.parent
CORES = os.cpu_count() or 1
# Seconds myst-nb reports per executed page (kernel start to shutdown), per build kind.
EXECUTION_SECONDS: dict[str, list[float]] = {}
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed"]  # never pip install


# -- the scratch copy (autograd_docs.scratch_copy) ------------------------------------


def executed_pages(repo: Path) -> list[Path]:
    return sorted(p for p in (repo / "docs").rglob("*.md")
                  if "file_format: mystnb" in p.read_text())


# -- builds ------------------------------------------------------------------------------

PROTOCOL_SWITCH = "AUTOGRAD_DOCS_KERNEL_PROTOCOL"  # =1: forked kernels over the protocol


def build(repo: Path, *, fork: bool = True, render_only: bool = False,
          strict: bool = True, record: bool = False,
          protocol: bool = False) -> tuple[float, int]:
    """Run `make html`; return (seconds, pages executed).

    ``protocol``: the old execution path (each page in a forked Jupyter kernel
    over the kernel protocol), else the build's default.
    """
    args = list(MAKE) + ["html"]
    if not strict:  # a synthetic site: its copies link to pages it does not have
        args.append("STRICT=--keep-going")
    if render_only:
        args += ["O=-D nb_execution_mode=off", "BUILDDIR=_build_render"]
    env = {**os.environ, "AUTOGRAD_DOCS_FORK_SERVER": "1" if fork else "0"}
    env.pop(PROTOCOL_SWITCH, None)
    if protocol:
        env[PROTOCOL_SWITCH] = "1"
    start = time.perf_counter()
    result = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        sys.exit(f"build failed in {repo}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    log = result.stdout + result.stderr
    pages = PageLine.parse(log)  # the build's line per page (autograd_docs/build_log.py)
    if any(page.state == FAILED for page in pages):
        sys.exit(f"a page failed to execute in {repo}:\n{log[-3000:]}")
    if record:
        kind = "plain" if not fork else "protocol" if protocol else "fork"
        EXECUTION_SECONDS.setdefault(kind, []).extend(
            page.seconds for page in pages if page.state == EXECUTED)
    return seconds, sum(page.state != FROM_CACHE for page in pages)


def clean(repo: Path, *folders: str) -> None:
    for folder in folders or ("_build",):
        shutil.rmtree(repo / folder, ignore_errors=True)


def insert_line(text: str, line: int, new: str) -> str:
    """``text`` with ``new`` inserted as its line ``line`` (counting from 1)."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:line - 1] + [new + "\n"] + lines[line - 1:])


def add_to_first_cell(text: str, line: str) -> str:
    """The page's text with ``line`` added at the top of its first code cell's code."""
    return insert_line(text, code_cells(text)[0].body_line, line)


def edit_code_cell(page: Path, mark: str) -> None:
    """Add a comment to the page's first code cell: its code changes, its output not."""
    page.write_text(add_to_first_cell(page.read_text(), f"# {mark}"))


def add_print_to_first_visible_cell(text: str, marker: str) -> str:
    """The page's text with ``print(marker, n)`` at the top of its first code cell
    not tagged remove-cell: what that cell prints changes. The printed text
    (``marker n``) is not in the highlighted source, which keeps the quotes."""
    cell = next(cell for cell in code_cells(text) if "remove-cell" not in cell.tags)
    name, n = marker.rsplit(" ", 1)
    return insert_line(text, cell.body_line, f"print({name!r}, {n})")


# -- make livehtml -----------------------------------------------------------------------

LIVEHTML_STARTUP = 600  # seconds for the server's first build (the scratch copy is warm)
LIVEHTML_WAIT = 120  # seconds for one edit to show


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf8")
    except (OSError, http.client.HTTPException):
        # refused while starting, an HTTP error, or the page cut short because
        # the rebuild replaced it while it was being served
        return ""


def stop_group(process: subprocess.Popen) -> None:
    """Stop the server we started, its whole process group (make, autobuild, Sphinx)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def start_livehtml(repo: Path, page_url: str, log: Path, attempts: int = 5):
    """`make livehtml PORT=...` in ``repo``, once it serves the page: (process, url).

    The port is probed free, then released; should another process take it before
    the server binds it (after its first build), the server exits saying so and
    is started again on another port.
    """
    for _ in range(attempts):
        port = free_port()
        url = f"http://127.0.0.1:{port}/{page_url}"
        with open(log, "w") as out:
            server = subprocess.Popen(
                list(MAKE) + ["livehtml", f"PORT={port}"], cwd=repo, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "PORT": str(port), "NO_COLOR": "1",
                     "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + LIVEHTML_STARTUP
        while time.monotonic() < deadline and server.poll() is None:
            if "<title>" in fetch(url):
                return server, url
            time.sleep(0.2)
        stop_group(server)
        if "address already in use" not in log.read_text().lower():
            sys.exit(f"make livehtml did not serve {url}:\n{log.read_text()[-3000:]}")
    sys.exit(f"make livehtml found no free port in {attempts} attempts")


def livehtml_latency(repo: Path, page: Path, reps: int, scratch: Path) -> list[float]:
    """Seconds from saving ``page`` (a print added to a visible cell) to the served
    page showing the new output, under `make livehtml`; one per rep, one server."""
    page_url = str(page.relative_to(repo / "docs").with_suffix(".html"))
    original = page.read_text()
    server, url = start_livehtml(repo, page_url, scratch / "livehtml.log")
    seconds = []
    try:
        for rep in range(reps):
            marker = f"bench livehtml {rep}"
            text = add_print_to_first_visible_cell(original, marker)
            start = time.perf_counter()
            page.write_text(text)
            deadline = time.monotonic() + LIVEHTML_WAIT
            while marker not in fetch(url):
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit(f"the edit did not show within {LIVEHTML_WAIT} s:\n"
                             f"{(scratch / 'livehtml.log').read_text()[-3000:]}")
                time.sleep(0.05)
            seconds.append(time.perf_counter() - start)
            print(f"  livehtml, edit to served: {seconds[-1]:.2f} s", flush=True)
            time.sleep(1)  # let the server settle before the next save
    finally:
        stop_group(server)
        page.write_text(original)
    return seconds


def snippet_to_edit(repo: Path) -> tuple[Path, int]:
    """The snippet imported by the fewest (but some) pages, and how many import it.

    Counted from the page text with a plain regex, not with the build's own code.
    """
    counts = {}
    pages = [p.read_text() for p in executed_pages(repo)]
    for snippet in sorted((repo / "snippets").glob("*.py")):
        pattern = re.compile(rf"^\s*(from|import)\s+{snippet.stem}\b", re.MULTILINE)
        users = sum(bool(pattern.search(page)) for page in pages)
        if users:
            counts[snippet] = users
    if not counts:
        sys.exit("no page imports a snippet")
    snippet = min(counts, key=lambda s: (counts[s], s.name))
    return snippet, counts[snippet]


# -- the floors --------------------------------------------------------------------------

def page_scripts(repo: Path, out: Path) -> list[tuple[Path, Path]]:
    """Convert each executed page to a script (code cells in order); return (script, folder)."""
    scripts = []
    for page in executed_pages(repo):
        # IPython line magics (%xmode: how a traceback prints) are not Python and
        # change nothing a plain script computes: drop them.
        cells = [("\n".join(line for line in cell.source.splitlines()
                            if not line.lstrip().startswith("%")),
                  "raises-exception" in cell.tags)
                 for cell in code_cells(page.read_text(), path=page)]
        script = out / (str(page.relative_to(repo / "docs")).replace("/", "__") + ".py")
        # As IPython runs a cell: source findable by linecache under a name of its
        # own (pages inspect tracebacks), and an expected error left in
        # sys.last_value (pages check the message a raising cell left).
        # And as IPython's display hook: a cell ending in an expression leaves
        # its value (if not None) in `_`, which the hidden checks read.
        script.write_text(
            "import ast, linecache, sys\n"
            f"_cells = {cells!r}\n"
            f"_g = {{'__name__': '__main__'}}\n"
            "def _run(source, name):\n"
            "    tree = ast.parse(source, name)\n"
            "    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) \\\n"
            "        else None\n"
            "    exec(compile(tree, name, 'exec'), _g)\n"
            "    if last is not None:\n"
            "        value = eval(compile(ast.Expression(last.value), name, 'eval'), _g)\n"
            "        if value is not None:\n"
            "            _g['_'] = value\n"
            "for _index, (_source, _raises) in enumerate(_cells):\n"
            "    _name = f'<cell {_index}>'\n"
            "    linecache.cache[_name] = (len(_source), None, _source.splitlines(True), _name)\n"
            "    try:\n"
            "        _run(_source, _name)\n"
            "    except Exception:\n"
            "        if not _raises:\n"
            "            raise\n"
            "        sys.last_type, sys.last_value, sys.last_traceback = sys.exc_info()\n"
        )
        scripts.append((script, page.parent))
    return scripts


def page_env(repo: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(repo / "snippets"), "MPLBACKEND": "Agg"}


def floor_proc_total(repo: Path, scripts) -> float:
    total = 0.0
    python = str(repo / ".venv" / "bin" / "python")
    for script, folder in scripts:
        start = time.perf_counter()
        subprocess.run([python, str(script)], cwd=folder, env=page_env(repo), check=True,
                       capture_output=True)
        total += time.perf_counter() - start
    return total


WARM_RUNNER = r"""
import json, os, sys, time
import torch, numpy, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
total = 0.0
for script, folder in json.loads(sys.argv[1]):
    os.chdir(folder)
    code = compile(open(script).read(), script, "exec")
    start = time.perf_counter()
    exec(code, {"__name__": "__main__"})
    total += time.perf_counter() - start
    matplotlib.pyplot.close("all")
print(total)
"""


def floor_warm_total(repo: Path, scripts) -> float:
    python = str(repo / ".venv" / "bin" / "python")
    env = page_env(repo)
    env["PYTHONPATH"] = os.pathsep.join([str(repo / "snippets")])
    out = subprocess.run(
        [python, "-c", WARM_RUNNER, json.dumps([(str(s), str(f)) for s, f in scripts])],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


# -- the synthetic site ------------------------------------------------------------------

def synthetic_site(repo: Path, copies: int, model: str) -> None:
    """Replace the docs with `copies` copies of one page (each a little different)."""
    docs = repo / "docs"
    text = (docs / model).read_text()
    label = Path(model).stem
    folder = docs / Path(model).parent
    for page in executed_pages(repo):
        page.unlink()
    names = []
    for n in range(copies):
        name = f"copy-{n:02d}"
        # A unique first cell, or jupyter-cache would serve one execution to all.
        copy = text.replace(f"({label})=", f"({name})=", 1)
        copy = add_to_first_cell(copy, f"copy = {n}")
        (folder / f"{name}.md").write_text(copy)
        names.append(f"{Path(model).parent}/{name}")
    (docs / "index.md").write_text(
        "# Synthetic site\n\n```{toctree}\n" + "\n".join(names)
        + "\nreference/glossary\n```\n")
    for section in ("tutorial", "explanation", "how-to", "reference"):
        index = docs / section / "index.md"
        if index.exists():
            index.unlink()


# -- the report --------------------------------------------------------------------------

def median(values):
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--scaling", default="10,20,40",
                        help="copies for the synthetic site ('' to skip)")
    parser.add_argument("--scaling-plain", default="10",
                        help="synthetic sizes also built with plain kernels ('' to skip)")
    parser.add_argument("--model", default="tutorial/why-backward-z-gives-z.md",
                        help="the page the synthetic site copies")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--no-livehtml", dest="livehtml", action="store_false",
                        help="skip the make livehtml latency")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="autograd-docs-bench-"))
    print(f"scratch copy: {scratch}  cores: {CORES}  reps: {args.reps}", flush=True)
    try:
        repo = copy_repo(scratch / "repo")
        pages = executed_pages(repo)
        edited_page = repo / "docs" / args.model
        snippet, snippet_users = snippet_to_edit(repo)
        scripts = page_scripts(repo, scratch)
        runs: dict[str, list] = {}

        def note(name, value):
            runs.setdefault(name, []).append(value)
            shown = f"{value[0]:.2f} s, {value[1]} executed" if isinstance(value, tuple) \
                else f"{value:.2f} s"
            print(f"  {name}: {shown}", flush=True)

        for rep in range(args.reps):
            print(f"rep {rep + 1}/{args.reps}", flush=True)
            note("page code, plain processes", floor_proc_total(repo, scripts))
            note("page code, warm process", floor_warm_total(repo, scripts))
            clean(repo, "_build_render")
            note("render-only", build(repo, render_only=True)[0])
            clean(repo)
            note("clean, plain kernels", build(repo, fork=False, record=True))
            clean(repo)
            note("clean, kernel protocol", build(repo, protocol=True, record=True))
            clean(repo)
            note("clean", build(repo, record=True))
            note("no-change", build(repo))
            edit_code_cell(edited_page, f"bench edit {rep}")
            note("edit page", build(repo))
            snippet.write_text(snippet.read_text() + f"# bench edit {rep}\n")
            note("edit snippet", build(repo))

        if args.livehtml:
            print("make livehtml", flush=True)
            build(repo)  # the server's first build then reads nothing
            runs["livehtml"] = livehtml_latency(repo, edited_page, args.reps, scratch)

        scaling, scaling_plain = {}, {}
        for copies in filter(None, (int(c) for c in args.scaling.split(",") if c)):
            site = copy_repo(scratch / f"site-{copies}")
            synthetic_site(site, copies, args.model)
            print(f"synthetic site, {copies} pages", flush=True)
            for _ in range(args.reps):
                clean(site)
                runs.setdefault(f"scale {copies}", []).append(build(site, strict=False)[0])
            scaling[copies] = median(runs[f"scale {copies}"])
            print(f"  clean: {scaling[copies]:.2f} s", flush=True)
            if str(copies) in args.scaling_plain.split(","):
                folder = scratch / f"site-{copies}-scripts"
                folder.mkdir()
                site_scripts = page_scripts(site, folder)
                for _ in range(args.reps):
                    clean(site)
                    runs.setdefault(f"scale {copies} plain", []).append(
                        build(site, strict=False, fork=False)[0])
                    runs.setdefault(f"scale {copies} proc", []).append(
                        floor_proc_total(site, site_scripts))
                    runs.setdefault(f"scale {copies} warm", []).append(
                        floor_warm_total(site, site_scripts))
                    clean(site, "_build_render")
                    runs.setdefault(f"scale {copies} render", []).append(
                        build(site, strict=False, render_only=True)[0])
                plain, proc, warm, render = (median(runs[f"scale {copies} {kind}"])
                                             for kind in ("plain", "proc", "warm", "render"))
                scaling_plain[copies] = {
                    "plain": plain, "render": render,
                    "floor_proc": proc / CORES + render, "floor_warm": warm / CORES + render}
                print(f"  clean, plain kernels: {plain:.2f} s", flush=True)

        report(runs, len(pages), edited_page.relative_to(repo / "docs"), snippet.name,
               snippet_users, scaling, scaling_plain)
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def report(runs, n_pages, page, snippet, snippet_users, scaling, scaling_plain) -> None:
    t = {name: median([v[0] if isinstance(v, tuple) else v for v in values])
         for name, values in runs.items()}
    executed = {name: sorted({v[1] for v in values}) for name, values in runs.items()
                if isinstance(values[0], tuple)}
    render = t["render-only"]
    floor_proc = t["page code, plain processes"] / CORES + render
    floor_warm = t["page code, warm process"] / CORES + render

    def count(name):
        return "/".join(map(str, executed[name]))

    rows = [
        ("floor_proc", floor_proc,
         f"{t['page code, plain processes']:.2f} s of scripts / {CORES} cores + render-only"),
        ("floor_warm", floor_warm,
         f"{t['page code, warm process']:.2f} s of page code / {CORES} cores + render-only"),
        ("render-only build", render, "execution off"),
        ("clean, plain kernels", t["clean, plain kernels"],
         f"before: a cold kernel per page; {count('clean, plain kernels')} executed"),
        ("clean, kernel protocol", t["clean, kernel protocol"],
         f"{PROTOCOL_SWITCH}=1: forked kernels over the kernel protocol; "
         f"{count('clean, kernel protocol')} executed"),
        ("clean `make html`", t["clean"], f"{count('clean')} of {n_pages} pages executed"),
        ("no-change rebuild", t["no-change"], f"{count('no-change')} executed"),
        ("edit one page", t["edit page"], f"{count('edit page')} executed ({page}; expect 1)"),
        ("edit one snippet", t["edit snippet"],
         f"{count('edit snippet')} executed ({snippet}; {snippet_users} pages import it)"),
    ]
    if "livehtml" in t:
        rows.append(("`make livehtml`, save to served", t["livehtml"],
                     f"a printed line added to {page}; median of {len(runs['livehtml'])}"))
    print(f"\nmedian of {len(runs['clean'])}, {n_pages} executed pages, {CORES} cores\n")
    print("| measurement | seconds | note |\n| --- | ---: | --- |")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds:.2f} | {note} |")
    print("\n| ratio | value | target |\n| --- | ---: | --- |")
    for name, value, target in [
        ("clean / floor_proc", t["clean"] / floor_proc, "<= 1.0"),
        ("clean / floor_warm", t["clean"] / floor_warm, "<= 1.5"),
        ("clean, kernel protocol / clean", t["clean, kernel protocol"] / t["clean"],
         "speed-up of the page runner"),
        ("no-change / render-only", t["no-change"] / render, "<= 0.3"),
        ("edit one page / (no-change + 1 s)", t["edit page"] / (t["no-change"] + 1),
         "<= 1.0"),
        ("clean, plain kernels / clean", t["clean, plain kernels"] / t["clean"],
         "speed-up of the fork server"),
    ]:
        print(f"| {name} | {value:.2f} | {target} |")
    if "livehtml" in t:
        print(f"| `make livehtml`, save to served, s | {t['livehtml']:.2f} | <= 3 |")
    warm_page = t["page code, warm process"] / n_pages
    print("\nper page, inside the build (myst-nb's 'Executed notebook in', kernel start "
          "to shutdown, median):\n")
    print("| kernel | s per page | minus the page's code in a warm process |")
    print("| --- | ---: | ---: |")
    for kind, label in (("plain", "cold kernel per page (before)"),
                        ("protocol", "forked kernel over the kernel protocol"),
                        ("fork", "forked from the server (after)")):
        if EXECUTION_SECONDS.get(kind):
            per_page = median(EXECUTION_SECONDS[kind])
            print(f"| {label} | {per_page:.2f} | {per_page - warm_page:.2f} |")
    if scaling:
        counts = sorted(scaling)
        slope = ((scaling[counts[-1]] - scaling[counts[0]]) / (counts[-1] - counts[0])
                 if len(counts) > 1 else float("nan"))
        print("\n| synthetic pages | clean build, s | s per page | s per page x cores "
              "| plain kernels, s |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for copies in counts:
            plain = f"{scaling_plain[copies]['plain']:.2f}" if copies in scaling_plain else ""
            print(f"| {copies} | {scaling[copies]:.2f} | {scaling[copies] / copies:.2f} | "
                  f"{scaling[copies] / copies * CORES:.2f} | {plain} |")
        for copies, floors in sorted(scaling_plain.items()):
            clean_s = scaling[copies]
            print(f"\nsynthetic site of {copies} pages: floor_proc {floors['floor_proc']:.2f} s, "
                  f"floor_warm {floors['floor_warm']:.2f} s, render-only {floors['render']:.2f} s\n")
            print("| ratio | value | target |\n| --- | ---: | --- |")
            print(f"| clean / floor_proc | {clean_s / floors['floor_proc']:.2f} | <= 1.0 |")
            print(f"| clean / floor_warm | {clean_s / floors['floor_warm']:.2f} | <= 1.5 |")
            print(f"| clean, plain kernels / clean | {floors['plain'] / clean_s:.2f} | "
                  "speed-up of the fork server |")
        print(f"\nmarginal cost: {slope:.2f} s per added page "
              f"({slope * CORES:.2f} s of a core), "
              f"fixed cost: {scaling[counts[0]] - slope * counts[0]:.2f} s")


if __name__ == "__main__":
    main()
