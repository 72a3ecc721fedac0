"""`make bench`'s report: the medians, the ratios against the targets, the scaling."""

from __future__ import annotations

import os
from statistics import median

CORES = os.cpu_count() or 1


def report(runs, n_pages, page, snippet, snippet_users, scaling, scaling_plain,
           execution_seconds: dict[str, list[float]]) -> None:
    """Print the tables of bench/README.md: medians, ratios against the targets."""
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
        ("clean, stock kernels", t["clean, stock kernels"],
         f"myst-nb's own execution, a stock ipykernel per page; "
         f"{count('clean, stock kernels')} executed"),
        ("clean `make html`", t["clean"], f"{count('clean')} of {n_pages} pages executed"),
        ("no-change rebuild", t["no-change"], f"{count('no-change')} executed"),
        ("edit one page", t["edit page"], f"{count('edit page')} executed ({page}; expect 1)"),
        ("edit one snippet", t["edit snippet"],
         f"{count('edit snippet')} executed ({snippet}; {snippet_users} pages import it)"),
        ("property checks", t["property checks"],
         "inside check_property, summed over the pages of a clean build"),
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
        ("clean / floor_warm", t["clean"] / floor_warm, "<= 1.3"),
        ("no-change / render-only", t["no-change"] / render, "<= 0.3"),
        ("edit one page - no-change, s", t["edit page"] - t["no-change"],
         f"<= 0.5, with exactly 1 executed ({count('edit page')})"),
        ("clean, stock kernels / clean", t["clean, stock kernels"] / t["clean"],
         "speed-up of the page runner over myst-nb's own execution"),
        (f"property checks / {CORES} cores / clean", t["property checks"] / CORES / t["clean"],
         "<= 0.10"),
    ]:
        print(f"| {name} | {value:.2f} | {target} |")
    if "livehtml" in t:
        print(f"| `make livehtml`, save to served, s | {t['livehtml']:.2f} | <= 1.5 |")
    warm_page = t["page code, warm process"] / n_pages
    print("\nper page, inside the build (myst-nb's 'Executed notebook in', kernel start "
          "to shutdown, median):\n")
    print("| kernel | s per page | minus the page's code in a warm process |")
    print("| --- | ---: | ---: |")
    for kind, label in (("stock", "a stock ipykernel per page, cold (myst-nb's own)"),
                        ("fork", "the page runner, forked from the server")):
        if execution_seconds.get(kind):
            per_page = median(execution_seconds[kind])
            print(f"| {label} | {per_page:.2f} | {per_page - warm_page:.2f} |")
    if scaling:
        counts = sorted(scaling)
        slope = ((scaling[counts[-1]] - scaling[counts[0]]) / (counts[-1] - counts[0])
                 if len(counts) > 1 else float("nan"))
        print("\n| synthetic pages | clean build, s | s per page | s per page x cores "
              "| stock kernels, s |")
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
            print(f"| clean, stock kernels / clean | {floors['plain'] / clean_s:.2f} | "
                  "speed-up of the page runner |")
        print(f"\nmarginal cost: {slope:.2f} s per added page "
              f"({slope * CORES:.2f} s of a core), "
              f"fixed cost: {scaling[counts[0]] - slope * counts[0]:.2f} s")
