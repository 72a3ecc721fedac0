"""Where `make test`'s time goes, file by file: the table bench/README.md reports.

    python bench/suite_by_file.py run LOG [pytest options]
        runs pytest with ``--durations=0`` (its output in LOG) and prints its wall
        time and the machine's busy and idle CPU-seconds, Chromium's included:
        every process counts, so run nothing else meanwhile (Linux: /proc/stat)
    python bench/suite_by_file.py table LOG [AFTER_LOG]
        worker-seconds by test file (setup, call and teardown summed), as a
        Markdown table; with two logs, before and after side by side

Worker-seconds are each test's wall time summed: under ``-n 3`` on 2 cores they
include the time a worker waited for a core, so compare files within one run,
and runs by the machine's CPU-seconds (issue 41; bench/README.md says why).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

# One line of pytest's ``--durations=0`` report.
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S+?)::", re.MULTILINE)


def seconds_by_file(log: str, name: str = "the log") -> Counter[str]:
    """Test file (under tests/) -> its tests' worker-seconds in ``log``. A file
    whose every step took under 5 ms is not in pytest's report, so not here."""
    found: Counter[str] = Counter()
    for seconds, path in DURATION.findall(log):
        found[path.removeprefix("tests/")] += float(seconds)
    if not found:
        raise SystemExit(f"no --durations=0 lines in {name}: run pytest with --durations=0")
    return found


def table(before: Counter[str], after: Counter[str] | None = None) -> str:
    """Markdown, the largest file first (by ``after`` when there are two runs)."""
    runs = [before] if after is None else [before, after]
    order = sorted(set().union(*runs), key=lambda name: (-runs[-1][name], name))
    head = ["file", "worker-s"] if after is None else ["file", "before", "after"]
    rows = [head, ["---"] + ["---:"] * len(runs)]
    rows += [[f"`{name}`", *(f"{run[name]:,.0f}" if name in run else "–" for run in runs)]
             for name in order]
    rows.append(["**all**", *(f"**{sum(run.values()):,.0f}**" for run in runs)])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def busy_and_idle() -> tuple[float, float]:
    """The machine's CPU-seconds so far, busy and idle, every core and process."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq = fields[:7]  # not steal: the host's
    return (user + nice + system + irq + softirq) / tick, (idle + iowait) / tick


def run(log: Path, options: list[str]) -> None:
    (busy, idle), start = busy_and_idle(), time.monotonic()
    with log.open("w", encoding="utf8") as out:
        code = subprocess.call([sys.executable, "-m", "pytest", "--durations=0", *options],
                               stdout=out, stderr=subprocess.STDOUT)
    (busy_end, idle_end), wall = busy_and_idle(), time.monotonic() - start
    last = log.read_text(encoding="utf8").rstrip().rsplit("\n", 1)[-1]
    print(f"{wall:.0f} s wall, {busy_end - busy:,.0f} CPU-s busy, {idle_end - idle:,.0f} idle "
          f"(pytest exited {code}): {last}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["run"] and len(argv) >= 2:
        run(Path(argv[1]), argv[2:])
    elif argv[:1] == ["table"] and len(argv) in (2, 3):
        logs = [seconds_by_file(Path(name).read_text(encoding="utf8"), name)
                for name in argv[1:]]
        print(table(*logs))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
