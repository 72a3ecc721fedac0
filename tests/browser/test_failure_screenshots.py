"""A failing browser test leaves a screenshot of each page it had open and names
it; a passing one takes none (conftest.py's ``pytest_runtest_makereport``). No
browser: a stand-in whose pages write what a screenshot would."""

from __future__ import annotations

from types import SimpleNamespace

import conftest
import pytest
from playwright.sync_api import Error as PlaywrightError


class StandInPage:
    def __init__(self, url: str, crashed: bool = False):
        self.url, self.crashed, self.shots = url, crashed, 0

    def screenshot(self, path, full_page, timeout):
        self.shots += 1
        if self.crashed:
            raise PlaywrightError("Target crashed")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"png")


def reported(outcome: str, when: str, pages: list[StandInPage]):
    item = SimpleNamespace(nodeid="tests/browser/test_x.py::test_y[chromium]", funcargs={
        "browser": SimpleNamespace(contexts=[SimpleNamespace(pages=pages)])})
    report = SimpleNamespace(when=when, failed=outcome == "failed", sections=[])
    hook = conftest.pytest_runtest_makereport(item, None)
    next(hook)
    with pytest.raises(StopIteration) as done:
        hook.send(report)
    return done.value.value


def test_a_failing_test_leaves_a_screenshot_of_each_page_and_names_it(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "FAILURES", tmp_path)
    pages = [StandInPage("http://site/a.html"), StandInPage("http://site/b.html", crashed=True)]
    (title, text), = reported("failed", "call", pages).sections
    shot = tmp_path / "tests-browser-test_x.py-test_y-chromium" / "page-1.png"
    assert text.splitlines() == [
        str(shot), "page 2 (http://site/b.html): no screenshot, Target crashed"]
    assert shot.read_bytes() == b"png"


@pytest.mark.parametrize(("outcome", "when"), [("passed", "call"), ("failed", "setup")])
def test_no_screenshot_otherwise(tmp_path, monkeypatch, outcome, when):
    monkeypatch.setattr(conftest, "FAILURES", tmp_path)
    page = StandInPage("http://site/a.html")
    assert reported(outcome, when, [page]).sections == [] and page.shots == 0
