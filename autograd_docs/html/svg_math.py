"""Equations rendered to SVG at build time: no script, font or CDN in the reader's browser.

The HTML writer leaves each equation's TeX in a placeholder element. When the build
finishes, every placeholder in the written pages is sent, in one batch (one entry per occurrence), to MathJax
running in Node (``render_math.cjs``, MathJax from ``node_modules``), and replaced by
the SVG it returns, with hidden MathML beside it for screen readers. Pages written in
an earlier build have no placeholders left, so an incremental build renders only
what it wrote, and starts MathJax only for an equation no earlier build drew (each
drawn SVG is kept in the doctree folder, ``DRAWN``). TeX that MathJax cannot parse is a build warning naming the page
(and so, with ``-W``, a failed build), never red text on a page.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

from autograd_docs import build_state
from autograd_docs.diagnostics import AuthorError, report
from autograd_docs.kept_record import KeptRecord

RENDERER = Path(__file__).with_name("render_math.cjs")
STYLESHEET = "mathjax-svg.css"  # written into _static by the build
PLACEHOLDER = re.compile(r'<span data-math-pending="(inline|display)">([^<]*)</span>')


def _pending(kind: str, tex: str, translator) -> str:
    return f'<span data-math-pending="{kind}">{translator.encode(tex)}</span>'


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_pending("inline", node.astext(), self) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    tex = node.astext()
    if not node.get("no-wrap", node.get("nowrap", False)):
        # As sphinx.ext.mathjax: blank-line separated equations are aligned
        # together, and an equation with line breaks is a split.
        parts = [part for part in tex.split("\n\n") if part.strip()]
        parts = [rf"\begin{{split}}{p}\end{{split}}" if r"\\" in p else p for p in parts]
        tex = (
            (r"\begin{align}\begin{aligned}" + r"\\".join(parts) + r"\end{aligned}\end{align}")
            if len(parts) > 1
            else "".join(parts)
        )
    self.body.append(_pending("display", tex, self) + "</div>\n")
    raise nodes.SkipNode


def node_executable() -> str:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("equations are rendered by Node.js: install `node` (20 or newer)")
    return node


def render(equations: list[tuple], cwd: Path) -> tuple[str, list]:
    """MathJax's stylesheet and one SVG (or ``{"error": ...}``) per equation.

    Each equation is ``(tex, display)`` or ``(tex, display, number)``: the number
    goes into its SVG's glyph ids (``MJX-<number>-…``), so that they are unique on
    its page and the same whichever other pages a build renders, in any order.
    """
    payload = json.dumps(
        [
            {"tex": tex, "display": display, "id": number}
            for tex, display, number, *_ in ((*equation, None) for equation in equations)
        ]
    )
    result = subprocess.run(
        [node_executable(), str(RENDERER)],
        input=payload,
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"MathJax failed to start ({result.stderr.strip()[-800:]}); "
            "`make html` installs it with `npm ci`"
        )
    rendered = json.loads(result.stdout)
    return rendered["css"], rendered["html"]


DRAWN = "svg-math.json"  # in the doctree folder: each equation's SVG, for the next build


def _key(tex: str, display: bool, number: int) -> str:
    return hashlib.sha256(json.dumps([tex, display, number]).encode()).hexdigest()


@dataclass
class Drawing:
    """The equations of the pages a build wrote, while MathJax draws the new ones."""

    pages: dict[Path, str]  # each written page's HTML, placeholders in it
    keys: list[str]  # each equation's key, in the pages' order
    kept: KeptRecord  # what earlier builds drew
    drawn_before: bool  # whether a page this build did not write shows equations
    drawing: Future | None  # MathJax's (css, SVGs) of the keys not kept, in order
    missing: list[str]


def _start_drawing(app: Sphinx, exception: Exception | None) -> None:
    """Early in build-finished: start MathJax (in Node, on another core) on the
    equations no earlier build drew, while the other handlers run."""
    if exception is not None or app.builder.format != "html":
        return
    if getattr(app.builder, "math_renderer_name", None) != "svgmath":
        return
    outdir = Path(app.outdir)
    pages, drawn_before = {}, False
    for path in outdir.rglob("*.html"):
        text = path.read_text(encoding="utf8")
        if 'data-math-pending="' in text:
            pages[path] = text
        elif "<mjx-container" in text:
            drawn_before = True  # a page this build did not write
    if not pages and (outdir / "_static" / STYLESHEET).exists():
        return
    # One equation per occurrence, not per distinct TeX: each SVG's glyph ids must
    # be unique on its page.
    # Numbered from 1 on each page: an incremental build, which renders only the
    # pages it wrote, then writes the ids a clean build writes.
    found = [
        (html.unescape(tex), kind == "display", number)
        for text in pages.values()
        for number, (kind, tex) in enumerate(PLACEHOLDER.findall(text), start=1)
    ]
    keys = [_key(*equation) for equation in found]
    # What MathJax drew in earlier builds, kept for the same renderer and MathJax:
    # a rebuild starts Node (0.3 s) only for an equation not drawn before.
    kept = KeptRecord(
        Path(app.doctreedir) / DRAWN, renderer_fingerprint(), "drawn", "every equation's SVG"
    )
    if not isinstance(kept.entries.get("svg"), dict):
        kept.entries["svg"] = {}
    missing = {
        key: equation
        for key, equation in zip(keys, found)
        if not isinstance(kept.entries["svg"].get(key), str)
    }
    drawing = None
    if missing or not isinstance(kept.entries.get("css"), str):
        # The sample equation keeps the stylesheet complete even when no page has math.
        pool = ThreadPoolExecutor(1)  # Node draws; the pool's thread only waits for it
        drawing = pool.submit(render, [*missing.values(), ("x", False)], Path(app.confdir))
        pool.shutdown(wait=False)  # its thread ends once Node has answered
    build_state.of(app).drawing = Drawing(pages, keys, kept, drawn_before, drawing, [*missing])


def _finish_drawing(app: Sphinx, exception: Exception | None) -> None:
    """Late in build-finished: put each equation's SVG in its page, and keep them."""
    state = build_state.of(app)
    started, state.drawing = state.drawing, None
    if started is None:
        return
    outdir, kept = Path(app.outdir), started.kept
    svg, css = kept.entries["svg"], kept.entries.get("css")
    drawn: dict = {}
    if started.drawing is not None:
        css, rendered = started.drawing.result()
        drawn = dict(zip(started.missing, rendered))
    assert isinstance(css, str), "a stylesheet kept, or drawn now (_start_drawing)"
    by_key = {key: drawn[key] if key in drawn else svg[key] for key in started.keys}
    outputs = iter([by_key[key] for key in started.keys])
    for path, text in started.pages.items():

        def substitute(match: re.Match, path=path) -> str:
            out = next(outputs)
            if isinstance(out, dict):
                docname = path.relative_to(outdir).with_suffix("").as_posix()
                report(
                    AuthorError.TEX_INVALID,
                    docname if docname in app.env.all_docs else None,
                    tex=html.unescape(match[2]),
                    error=out["error"],
                )
                return match[0]
            return out

        path.write_text(PLACEHOLDER.sub(substitute, text), encoding="utf8")
    stylesheet = outdir / "_static" / STYLESHEET
    stylesheet.parent.mkdir(parents=True, exist_ok=True)
    stylesheet.write_text(css, encoding="utf8")
    # Kept: what this build drew, and what earlier builds drew while a page it
    # did not write may show it (a build that wrote every page keeps only its own).
    used = {key: out for key, out in by_key.items() if isinstance(out, str)}
    keep = {**svg, **used} if started.drawn_before else used
    kept.save({"css": css, "svg": keep})


def _add_stylesheet(app: Sphinx) -> None:
    if getattr(app.builder, "math_renderer_name", None) != "svgmath":
        return
    app.add_css_file(STYLESHEET)
    # Sphinx adds a ?v=checksum to a stylesheet's link only if the file exists when
    # a page is written; write it now, so a clean build links it as a rebuild does.
    stylesheet = Path(app.outdir) / "_static" / STYLESHEET
    if not stylesheet.exists():
        css, _ = render([("x", False)], Path(app.confdir))
        stylesheet.parent.mkdir(parents=True, exist_ok=True)
        stylesheet.write_text(css, encoding="utf8")


def renderer_fingerprint() -> str:
    """What the drawn SVG depends on: the renderer script and MathJax's version."""
    parts = [RENDERER.read_bytes()]
    for parent in RENDERER.parents:
        package = parent / "node_modules" / "mathjax-full" / "package.json"
        if package.is_file():
            parts.append(package.read_bytes())
            break
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def setup(app: Sphinx) -> dict:
    # Not set by conf.py: when the renderer or MathJax changes, this value does,
    # and Sphinx writes every page again (so every equation is drawn again).
    app.add_config_value("svg_math_renderer", renderer_fingerprint(), "html", str)
    app.add_html_math_renderer(
        "svgmath",
        inline_renderers=(visit_math, None),
        block_renderers=(visit_displaymath, None),
    )
    app.connect("builder-inited", _add_stylesheet)
    # MathJax draws while the other parts finish (search data, downloads), and its
    # problems are reported before the build lists them (build_log, priority 1000).
    app.connect("build-finished", _start_drawing, priority=100)
    app.connect("build-finished", _finish_drawing, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
