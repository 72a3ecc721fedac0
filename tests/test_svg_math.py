"""Equations drawn once (autograd_docs/html/svg_math.py): a rebuild starts MathJax
only for an equation no earlier build drew, and keeps what a page it did not
write may still show. Whether a kept SVG is the bytes MathJax draws afresh is
test_reproducible.py's: the small site's figure page has equations."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograd_docs.html import svg_math


class Site:
    """A written site's pages (HTML with equations pending) and a build's app."""

    def __init__(self, root: Path, monkeypatch):
        self.out, self.doctrees = root / "html", root / "doctrees"
        self.doctrees.mkdir(parents=True)
        self.app = SimpleNamespace(
            builder=SimpleNamespace(format="html", math_renderer_name="svgmath"),
            outdir=str(self.out), doctreedir=str(self.doctrees), confdir=str(root),
            env=SimpleNamespace(all_docs={}))
        self.drawn: list[list[str]] = []  # each start of MathJax: the TeX it drew
        monkeypatch.setattr(svg_math, "render", self.render)

    def render(self, equations, cwd):
        self.drawn.append(sorted(tex for tex, *_ in equations if tex != "x"))
        return "css", [f"<mjx-container>{tex} #{rest}</mjx-container>"
                       for tex, *rest in equations]

    def write(self, page: str, *tex: str) -> None:
        path = self.out / f"{page}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f'<span data-math-pending="inline">{t}</span>' for t in tex))

    def build(self) -> list[list[str]]:
        """What MathJax drew in this build: one list per start of it."""
        before = len(self.drawn)
        svg_math._start_drawing(self.app, None)
        svg_math._finish_drawing(self.app, None)
        return self.drawn[before:]

    def kept(self) -> set[str]:
        record = json.loads((self.doctrees / svg_math.DRAWN).read_text())["drawn"]["svg"]
        return {svg.split(" #")[0].removeprefix("<mjx-container>") for svg in record.values()}


def test_an_equation_is_drawn_once_and_kept_while_a_page_may_show_it(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    site.write("a", "a^2", "b^2")
    site.write("b", "c^2")
    assert site.build() == [["a^2", "b^2", "c^2"]]
    assert "<mjx-container>b^2 #[False, 2]</mjx-container>" in (site.out / "a.html").read_text()

    site.write("a", "a^2", "b^2")  # page a written again, its equations unchanged
    assert site.build() == [], "nothing new to draw: MathJax not started"
    assert "<mjx-container>b^2 #[False, 2]</mjx-container>" in (site.out / "a.html").read_text()

    site.write("a", "a^2", "d^2")  # an edited equation: only it is drawn
    assert site.build() == [["d^2"]]
    assert site.kept() == {"a^2", "b^2", "c^2", "d^2"}, "page b, not written, shows c^2"

    site.write("a", "a^2", "d^2")
    site.write("b", "c^2")  # every page written: what no page shows goes
    assert site.build() == [] and site.kept() == {"a^2", "c^2", "d^2"}


# a^2 as another renderer drew it, or a record no build could read
OLD = json.dumps({"rules": "another renderer", "drawn": {
    "css": "old", "svg": {svg_math._key("a^2", False, 1): "<mjx-container>old a^2"}}})


@pytest.mark.parametrize("kept", [OLD, "{not json"])
def test_another_renderer_or_an_unreadable_record_draws_everything(tmp_path, monkeypatch, kept):
    site = Site(tmp_path, monkeypatch)
    (site.doctrees / svg_math.DRAWN).write_text(kept)
    site.write("a", "a^2")
    assert site.build() == [["a^2"]] and site.kept() == {"a^2"}
