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
clean, stock  the same as the ecosystem runs pages (bench/stock_kernels.py): myst-nb's
              own execution, a stock ipykernel started cold per page
no-change     `make html` again with nothing changed
edit page     after editing a code cell of one page (and how many pages executed)
edit snippet  after editing one snippet (and how many pages executed, against how
              many import it)
property checks  seconds inside check_property, summed over a clean build's pages
livehtml      under `make livehtml`: from saving a page whose output changes to the
              server serving the new output
scaling       clean builds of a synthetic site of 10, 50, 200 copies of one page

Times are wall-clock seconds on this machine, under whatever else it is doing.
Targets are printed beside the ratios; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from autograd_docs.build_log import EXECUTED, FAILED
from autograd_docs.devkit import livehtml
from autograd_docs.devkit.builds import make
from autograd_docs.devkit.executed import executed_pages
from autograd_docs.devkit.scratch_copy import copy_repo, finish
from autograd_docs.kernels import warm_server

from edits import (
    add_print_to_first_visible_cell,
    add_to_first_cell,
    edit_code_cell,
    time_property_checks,
)
from floors import floor_proc_total, floor_warm_total, page_scripts
from report import CORES, report

ROOT = Path(__file__).resolve().parent.parent
# Seconds myst-nb reports per executed page (kernel start to shutdown), per build kind.
EXECUTION_SECONDS: dict[str, list[float]] = {}


# -- builds ------------------------------------------------------------------------------

def build(repo: Path, *, stock: bool = False, render_only: bool = False,
          strict: bool = True, record: bool = False) -> tuple[float, int]:
    """Run `make html`; return (seconds, pages executed).

    ``stock``: each page in a stock ipykernel, as myst-nb runs pages
    (bench/stock_kernels.py), else the build's page runner.
    """
    variables = []
    if not strict:  # a synthetic site: its copies link to pages it does not have
        variables.append("STRICT=--keep-going")
    if render_only:
        variables += ["O=-D nb_execution_mode=off", "BUILDDIR=_build_render"]
    if stock:
        variables.append("SPHINXBUILD=$(PYTHON) bench/stock_kernels.py -c . $(SPHINXOPTS) $(O)")
    result = make(repo, "html", *variables)
    if result.returncode:
        sys.exit(f"build failed in {repo}:\n{result.log[-6000:]}")
    log = result.log
    pages = result.pages  # the build's line per page (autograd_docs/build_log.py)
    if any(page.state == FAILED for page in pages):
        sys.exit(f"a page failed to execute in {repo}:\n{log[-3000:]}")
    if record:
        kind = "stock" if stock else "fork"
        EXECUTION_SECONDS.setdefault(kind, []).extend(
            page.seconds for page in pages if page.state == EXECUTED)
    return result.seconds, result.executed


def property_check_seconds(repo: Path, scratch: Path) -> float:
    """The seconds spent inside check_property, summed over a clean build's pages
    (a build of its own, so the clean build above runs untouched)."""
    oracle, log = repo / "snippets" / "oracle.py", scratch / "property-checks.log"
    log.unlink(missing_ok=True)
    original = time_property_checks(oracle, log)
    try:
        clean(repo)
        build(repo)
    finally:
        oracle.write_text(original)
    return sum(map(float, log.read_text().split()))


def clean(repo: Path, *folders: str) -> None:
    """Remove build folders; for the whole _build, as `make clean` does, stop the
    site's warm fork server too: a clean build starts from nothing."""
    if not folders:
        warm_server.stop(repo)
    for folder in folders or ("_build",):
        shutil.rmtree(repo / folder, ignore_errors=True)


# -- make livehtml -----------------------------------------------------------------------

LIVEHTML_STARTUP = 600  # seconds for the server's first build (the scratch copy is warm)
LIVEHTML_WAIT = 120  # seconds for one edit to show


def livehtml_latency(repo: Path, page: Path, reps: int, scratch: Path) -> list[float]:
    """Seconds from saving ``page`` (a print added to a visible cell) to the served
    page showing the new output, under `make livehtml`; one per rep, one server."""
    page_url = str(page.relative_to(repo / "docs").with_suffix(".html"))
    original = page.read_text()
    log = scratch / "livehtml.log"
    try:
        server, url = livehtml.start(
            repo, page_url, log, serves=lambda status, body: "<title>" in body,
            deadline=time.monotonic() + LIVEHTML_STARTUP, poll=0.2)
    except livehtml.LivehtmlError as error:
        sys.exit(f"make livehtml did not serve {page_url}: {str(error)[-3000:]}")
    seconds = []
    try:
        for rep in range(reps):
            marker = f"bench livehtml {rep}"
            text = add_print_to_first_visible_cell(original, marker)
            start = time.perf_counter()
            page.write_text(text)
            deadline = time.monotonic() + LIVEHTML_WAIT
            while marker not in livehtml.fetch(url, timeout=5)[1]:
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit(f"the edit did not show within {LIVEHTML_WAIT} s:\n"
                             f"{log.read_text()[-3000:]}")
                time.sleep(0.05)
            seconds.append(time.perf_counter() - start)
            print(f"  livehtml, edit to served: {seconds[-1]:.2f} s", flush=True)
            time.sleep(1)  # let the server settle before the next save
    finally:
        livehtml.stop(server)
        page.write_text(original)
    return seconds


def snippet_to_edit(repo: Path) -> tuple[Path, int]:
    """The snippet imported by the fewest (but some) pages, and how many import it.

    Counted from the page text with a plain regex, not with the build's own code.
    """
    counts = {}
    pages = [(repo / page).read_text() for page in executed_pages(repo)]
    for snippet in sorted((repo / "snippets").glob("*.py")):
        pattern = re.compile(rf"^\s*(from|import)\s+{snippet.stem}\b", re.MULTILINE)
        users = sum(bool(pattern.search(page)) for page in pages)
        if users:
            counts[snippet] = users
    if not counts:
        sys.exit("no page imports a snippet")
    snippet = min(counts, key=lambda s: (counts[s], s.name))
    return snippet, counts[snippet]


# -- the synthetic site ------------------------------------------------------------------

def synthetic_site(repo: Path, copies: int, model: str) -> None:
    """Replace the docs with `copies` copies of one page (each a little different)."""
    docs = repo / "docs"
    text = (docs / model).read_text()
    label = Path(model).stem
    folder = docs / Path(model).parent
    for page in executed_pages(repo):
        (repo / page).unlink()
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

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--scaling", default="10,50,200",
                        help="copies for the synthetic site ('' to skip)")
    parser.add_argument("--scaling-plain", default="10",
                        help="synthetic sizes also built with stock kernels ('' to skip)")
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
            note("clean, stock kernels", build(repo, stock=True, record=True))
            clean(repo)
            note("clean", build(repo, record=True))
            note("no-change", build(repo))
            edit_code_cell(edited_page, f"bench edit {rep}")
            note("edit page", build(repo))
            snippet.write_text(snippet.read_text() + f"# bench edit {rep}\n")
            note("edit snippet", build(repo))
            note("property checks", property_check_seconds(repo, scratch))

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
                        build(site, strict=False, stock=True)[0])
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
                print(f"  clean, stock kernels: {plain:.2f} s", flush=True)

        report(runs, len(pages), edited_page.relative_to(repo / "docs"), snippet.name,
               snippet_users, scaling, scaling_plain, EXECUTION_SECONDS)
    finally:
        finish(scratch, args.keep)


if __name__ == "__main__":
    main()
