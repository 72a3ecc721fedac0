"""Fixtures for the browser tests (they live in browser_support.py).

Without Chromium, on a reader's machine, the browser tests are left out of the
run and one line at the end says how to enable them. In CI (CI=true) they stay
in, and fail.
"""

from pathlib import Path

from browser_support import base_url, browser, browser_missing, in_ci, open_page  # noqa: F401

HERE = Path(__file__).parent
_left_out: list = []


def pytest_collection_modifyitems(config, items):
    reason = browser_missing()
    if reason is None or in_ci():
        return
    browser_items = [item for item in items if HERE in Path(item.path).parents]
    if browser_items:
        _left_out[:] = [reason, len(browser_items)]
        items[:] = [item for item in items if item not in browser_items]
        config.hook.pytest_deselected(items=browser_items)


def pytest_terminal_summary(terminalreporter):
    if _left_out:
        reason, count = _left_out
        terminalreporter.write_line(f"SKIPPED {count} {reason}", yellow=True, bold=True)
