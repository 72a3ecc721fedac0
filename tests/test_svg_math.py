"""Equations drawn once (autograd_docs/html/svg_math.py): a rebuild starts MathJax
only for an equation no earlier build drew, and keeps the SVG of each equation a
page shows. Whether a kept SVG is the bytes MathJax draws afresh, and what the
page shows, is test_reproducible.py's edit-and-revert test (the small site's
figure page has equations, and one is edited, drawn, reverted and kept)."""

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


def test_an_equation_is_drawn_once_and_kept_while_a_page_shows_it(tmp_path, monkeypatch):
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
    assert site.kept() == {"a^2", "c^2", "d^2"}, "page b, not written, still shows c^2"

    (site.out / "b.html").unlink()  # a page removed: what only it showed goes
    site.write("a", "a^2", "d^2")
    assert site.build() == [] and site.kept() == {"a^2", "d^2"}


def test_a_definition_is_refused_and_drawn_for_no_page(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    said = []
    monkeypatch.setattr(svg_math, "report", lambda error, where, **fields: said.append(
        (error.name, fields.get("command"))))
    site.write("a", r"\newcommand{\R}{\mathbb{R}} x \in \R", "a^2", r"a \\ b \\label")
    assert site.build() == [["a \\\\ b \\\\label", "a^2"]], "a line break is no command"
    assert said == [("TEX_ACROSS_EQUATIONS", "\\newcommand")]
    assert 'data-math-pending="inline"' in (site.out / "a.html").read_text(), "left as TeX"


def test_a_page_removed_or_written_again_meanwhile_is_left_alone(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    site.write("a", "a^2")
    site.write("b", "b^2")
    svg_math._start_drawing(site.app, None)
    (site.out / "a.html").unlink()  # the page left the project while MathJax drew
    site.write("b", "c^2")  # an overlapping build wrote b again: it draws c^2 itself
    svg_math._finish_drawing(site.app, None)
    assert not (site.out / "a.html").exists()
    assert (site.out / "b.html").read_text() == '<span data-math-pending="inline">c^2</span>'


def test_a_build_that_failed_meanwhile_writes_nothing(tmp_path, monkeypatch):
    site = Site(tmp_path, monkeypatch)
    site.write("a", "a^2")
    svg_math._start_drawing(site.app, None)
    svg_math._finish_drawing(site.app, RuntimeError("a handler in between failed"))
    assert "data-math-pending" in (site.out / "a.html").read_text()
    assert not (site.doctrees / svg_math.DRAWN).exists()


# a^2 as another renderer drew it, or a record no build could read
OLD = json.dumps({"rules": "another renderer", "drawn": {
    "css": "old", "svg": {svg_math._key("a^2", False, 1): "<mjx-container>old a^2"}}})


@pytest.mark.parametrize("kept", [OLD, "{not json"])
def test_another_renderer_or_an_unreadable_record_draws_everything(tmp_path, monkeypatch, kept):
    site = Site(tmp_path, monkeypatch)
    (site.doctrees / svg_math.DRAWN).write_text(kept)
    site.write("a", "a^2")
    assert site.build() == [["a^2"]] and site.kept() == {"a^2"}
