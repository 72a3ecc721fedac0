"""Equations rendered to SVG at build time: no script, font or CDN in the reader's browser.

The HTML writer leaves each equation's TeX in a placeholder element. When the build
finishes, the placeholders of the pages it wrote are replaced by SVGs that MathJax,
running in Node (``render_math.cjs``, MathJax from ``node_modules``), draws, with
hidden MathML beside each for screen readers. A page written in an earlier build
has no placeholders left (unless an equation of it failed), so an incremental
build renders only what it wrote.

The SVG of each equation the pages show is kept in the doctree folder
(``DRAWN``), with the equations of each page, so MathJax starts (0.3 s) only for
an equation no page showed after the last build. An equation is keyed by its TeX,
kind and place on its page (its SVG's glyph ids), and MathJax draws the new ones
while the build's other finishing work runs. TeX that MathJax cannot parse
(``TEX_INVALID``), or that would reach other equations (``ACROSS_EQUATIONS``:
``TEX_ACROSS_EQUATIONS``), is a build warning naming the page (and so, with ``-W``,
a failed build), never red text on a page.
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
from autograd_docs.execution.cache_key import digest
from autograd_docs.kept_record import KeptRecord, source_digest

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
# Drawn with every batch: the stylesheet is complete even when no page has math.
SAMPLE = ("x", False)
# TeX that reaches other equations in MathJax's document (a macro, a colour, a
# delimiter or an arrow defined; a label set or referred to) would reach those
# drawn after it in the same batch: some in one build, others in the next. Refused:
# each equation is drawn on its own. A command is a backslash after an even run of
# them (``\\`` is a line break).
ACROSS_EQUATIONS = re.compile(
    r"(?<!\\)(?:\\\\)*\\(?P<command>[gex]?def|let|(?:re|provide)?newcommand"
    r"|(?:re)?newenvironment|DeclareMathOperator|DeclarePairedDelimiter(?:X|XPP)?"
    r"|definecolor|Newextarrow|label|eqref|ref)(?![A-Za-z])"
)
# This module's code as imported (kept_record.py): what is drawn depends on it too.
_THIS_MODULE = source_digest(__file__)


def _key(tex: str, display: bool, number: int) -> str:
    return hashlib.sha256(json.dumps([tex, display, number]).encode()).hexdigest()


@dataclass
class Drawing:
    """A build's equations on their way from MathJax into the pages it wrote."""

    pages: dict[Path, str]  # each page with placeholders (this build's, or a failed TeX's)
    keys: dict[Path, list[str]]  # each such page's equations, in order
    record: KeptRecord  # what earlier builds drew, and which page shows what
    new: list[str]  # the equations sent to MathJax, in the order sent
    refused: dict[str, str]  # equations not sent: the command that reaches others
    still_shown: set[str]  # pages not written by this build that show equations
    answer: Future | None  # MathJax's stylesheet and its SVG (or error) for each of ``new``


def _start_drawing(app: Sphinx, exception: Exception | None) -> None:
    """Early in build-finished: start MathJax (in Node, on another core) on the
    equations the record does not hold, while the other handlers run."""
    if exception is not None or app.builder.format != "html":
        return
    if getattr(app.builder, "math_renderer_name", None) != "svgmath":
        return
    outdir = Path(app.outdir)
    pages, still_shown = {}, set()
    for path in outdir.rglob("*.html"):
        text = path.read_text(encoding="utf8")
        if 'data-math-pending="' in text:
            pages[path] = text
        elif "<mjx-container" in text:
            still_shown.add(path.relative_to(outdir).as_posix())
    if not pages and (outdir / "_static" / STYLESHEET).exists():
        return
    # Numbered from 1 on each page (the SVG's glyph ids): an incremental build,
    # which renders only the pages it wrote, then writes the ids a clean build writes.
    keys: dict[Path, list[str]] = {}
    equations: dict[str, tuple[str, bool, int]] = {}
    for path, text in pages.items():
        keys[path] = []
        for number, (kind, tex) in enumerate(PLACEHOLDER.findall(text), start=1):
            equation = (html.unescape(tex), kind == "display", number)
            keys[path].append(_key(*equation))
            equations[keys[path][-1]] = equation
    record = KeptRecord(
        Path(app.doctreedir) / DRAWN,
        rules=digest([_THIS_MODULE, renderer_fingerprint()]),
        name="drawn",
        what="every equation's SVG",
    )
    svg = record.entries.get("svg")
    if not isinstance(svg, dict):
        svg = {}
    refused = {
        key: found["command"]
        for key, (tex, *_) in equations.items()
        if (found := ACROSS_EQUATIONS.search(tex))
    }
    new = [key for key in equations if key not in refused and not isinstance(svg.get(key), str)]
    answer = None
    if new or not isinstance(record.entries.get("css"), str):
        pool = ThreadPoolExecutor(1)  # Node draws; the pool's thread only waits for it
        answer = pool.submit(render, [*(equations[key] for key in new), SAMPLE], Path(app.confdir))
        pool.shutdown(wait=False)  # its thread ends once Node has answered
    build_state.of(app).drawing = Drawing(pages, keys, record, new, refused, still_shown, answer)


def _finish_drawing(app: Sphinx, exception: Exception | None) -> None:
    """Late in build-finished: put each equation's SVG in its page, and keep them."""
    state = build_state.of(app)
    started, state.drawing = state.drawing, None
    if started is None or exception is not None:
        return  # a build that failed since: its error is the one to show
    outdir, record = Path(app.outdir), started.record
    kept_svg = record.entries.get("svg")
    drawn: dict = dict(kept_svg) if isinstance(kept_svg, dict) else {}
    css = record.entries.get("css")
    if started.answer is not None:
        css, answers = started.answer.result()
        drawn.update(zip(started.new, answers))
    assert isinstance(css, str), "a stylesheet kept, or drawn now (_start_drawing)"
    shown: dict[str, list[str]] = {}  # page -> its equations, for the next build
    for path, text in started.pages.items():
        if not path.is_file() or path.read_text(encoding="utf8") != text:
            continue  # removed since (a page gone), or written again by another build
        outputs = iter([(key, drawn.get(key)) for key in started.keys[path]])

        def substitute(match: re.Match, path=path, outputs=outputs) -> str:
            key, out = next(outputs)
            if key not in started.refused and isinstance(out, str):
                return out
            docname = path.relative_to(outdir).with_suffix("").as_posix()
            where, tex = docname if docname in app.env.all_docs else None, html.unescape(match[2])
            if key in started.refused:
                report(
                    AuthorError.TEX_ACROSS_EQUATIONS,
                    where,
                    tex=tex,
                    command="\\" + started.refused[key],
                )
            else:
                report(AuthorError.TEX_INVALID, where, tex=tex, error=out["error"])
            return match[0]

        path.write_text(PLACEHOLDER.sub(substitute, text), encoding="utf8")
        shown[path.relative_to(outdir).as_posix()] = started.keys[path]
    stylesheet = outdir / "_static" / STYLESHEET
    stylesheet.parent.mkdir(parents=True, exist_ok=True)
    stylesheet.write_text(css, encoding="utf8")
    # Kept: the SVG of each equation a page shows: of the pages this build wrote,
    # and of those it did not write that still show equations, as the record says.
    before = record.entries.get("pages")
    for page, page_keys in (before if isinstance(before, dict) else {}).items():
        if page in started.still_shown:
            shown[page] = page_keys
    svg = {
        key: drawn[key]
        for page_keys in shown.values()
        for key in page_keys
        if isinstance(drawn.get(key), str) and key not in started.refused
    }
    record.save({"css": css, "svg": svg, "pages": shown})


def _add_stylesheet(app: Sphinx) -> None:
    if getattr(app.builder, "math_renderer_name", None) != "svgmath":
        return
    app.add_css_file(STYLESHEET)
    # Sphinx adds a ?v=checksum to a stylesheet's link only if the file exists when
    # a page is written; write it now, so a clean build links it as a rebuild does.
    stylesheet = Path(app.outdir) / "_static" / STYLESHEET
    if not stylesheet.exists():
        css, _ = render([SAMPLE], Path(app.confdir))
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
