"""bench/suite_by_file.py reads pytest's --durations=0 report into the table
bench/README.md shows (issue 41: worker-seconds by file, before and after)."""

import importlib.util
from pathlib import Path

import pytest

# Loaded by path: bench/ on sys.path would shadow other modules for the worker.
_SPEC = importlib.util.spec_from_file_location(
    "suite_by_file", Path(__file__).resolve().parent.parent / "bench" / "suite_by_file.py")
suite_by_file = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(suite_by_file)

BEFORE = """\
============================= slowest durations ==============================
12.50s call     tests/test_faults.py::test_the_build_reports[cell_raised+tex_invalid]
3.00s setup    tests/browser/test_browser_pages.py::test_page[chromium-index.html]
0.50s teardown tests/test_faults.py::test_output_varies
1.25s call     tests/browser/test_browser_pages.py::test_page[chromium-404.html]
0.75s call     tests/browser/test_search_landing.py::test_query[chromium-grad is None]
0.25s call     tests/test_wire.py::test_id[a::b]
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
=========== 1082 passed, 5 xfailed, 97 warnings in 645.99s (0:10:45) ===========
"""


def test_setup_call_and_teardown_are_summed_by_file():
    assert suite_by_file.seconds_by_file(BEFORE) == {
        "test_faults.py": 13.0, "browser/test_browser_pages.py": 4.25,
        "browser/test_search_landing.py": 0.75, "test_wire.py": 0.25}


def test_two_runs_side_by_side_the_largest_file_after_first():
    after = suite_by_file.seconds_by_file(
        BEFORE.replace("12.50s", "2.50s").replace("0.25s call     tests/test_wire.py", "-"))
    assert suite_by_file.table(suite_by_file.seconds_by_file(BEFORE), after).splitlines() == [
        "| file | before | after |",
        "| --- | ---: | ---: |",
        "| `browser/test_browser_pages.py` | 4 | 4 |",
        "| `test_faults.py` | 13 | 3 |",
        "| `browser/test_search_landing.py` | 1 | 1 |",
        "| `test_wire.py` | 0 | – |",
        "| **all** | **18** | **8** |"]


def test_a_log_without_durations_says_how_to_get_them():
    with pytest.raises(SystemExit, match="in after.log: run pytest with --durations=0"):
        suite_by_file.seconds_by_file("381 passed in 58.09s\n", "after.log")
