"""Readers can see what the build proved: the text a checked sentence sits in is
marked, and the page carries what its checks proved.

``execution/claims.py`` keeps, per page, the sentences hidden checks quote
(``claims.claims_of``). When a page is written, each sentence's text element
(a paragraph, also inside a list item, a table cell or an admonition, or a
definition list's term) gets the class ``checked-claim`` and an id, and the page
gets:

* a JSON script (``#checked-claims-data``) with, for each claim, the id of its
  element, a pattern for the sentence's words as the browser shows them, the
  check that proved it and where, and the torch that ran it. Added at
  html-page-context, not as nodes in the doctree, so the search index never
  reads it; inline, so a page opened from a file needs no fetch;
* a numbered view of the page's source (``SOURCE_LINES``), so the link to a
  check opens at its line, highlighted;
* ``claims.js`` and ``claims.css`` (docs/_static), which draw the reveal, and
  ``checked_claims`` in the template's context, which puts the toggle beside
  "view source" (docs/_templates/components/view-this-page.html): in the HTML
  from the start, so nothing moves when the script arrives.

Pages without claims get none of it.

The role ``{claim-count}`key``` puts into prose a number ``make claims`` prints,
counted over the site as this build read it (``site_counts``): ``coverage``
("N of M (P%)"), ``counted``, one of ``claim_sentences.VERDICTS``,
``generalising`` (generalising sentences checked on an example only), or a
marker, ``% explanation``; ``<section>: <key>`` counts one section. A page that
uses it is written again whenever any page was read again.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from autograd_docs import claim_sentences
from autograd_docs.diagnostics import AuthorError, report
from autograd_docs.execution import claims

# The elements a sentence can sit in. Headings are left out: a heading's HTML
# may not hold the detail the reveal opens beside its text.
TEXT_ELEMENTS = (nodes.paragraph, nodes.term)
CLASS = "checked-claim"
# Set on a marked node: (index in claims_of's order, words of its quote the node
# shows) for each of its claims.
INDEXES = "checked_claim_indexes"
DATA_ID = "checked-claims-data"
# Where each page's numbered source goes: <SOURCE_LINES>/<docname>.md.html#L-<n>.
SOURCE_LINES = "_source-lines"
# What a record says of itself, passed to the reveal as it is.
RECORD_FIELDS = (
    "scope",
    "compared",
    "examples",
    "families",
    "fixed",
    "members",
    "drawn",
    "smallest",
    "largest",
)

# MyST inline syntax, as the browser will show it (see ``sentence_pattern``).
INLINE = re.compile(
    r"(?P<math>\$\$?(?:[^$\\]|\\.)+\$\$?)"  # $TeX$: drawn as one SVG
    r"|\{(?P<role>[\w:.-]+)\}`(?P<content>[^`]*)`"  # {role}`content`
    r"|\{\{[^}]*\}\}"  # {{ substitution }}: unknown here
    r"|(?P<ticks>`+)(?P<code>.*?)(?P=ticks)"  # `code`
    r"|\[(?P<link>[^\]]*)\]\([^)]*\)"  # [text](target)
    r"|\\(?P<escaped>.)"  # \* and kin
    # *emphasis* and _emphasis_ markers: touching a word (2 * 3 is an asterisk)
    r"|(?P<emphasis>(?<=\S)\*+|\*+(?=\S)|(?<!\w)_+(?=\S)|(?<=\S)_+(?!\w))",
    re.S,
)
# Where a Markdown table row splits into cells: every unescaped "|", inside code
# and equations too (the row is split before its cells are parsed).
CELL_EDGE = re.compile(r"(?<!\\)\|")
MATH = "\ue000"  # how claims.js flattens a drawn equation: one character
ANY = r"[\s\S]*?"  # text the build cannot know (a section title, a substitution)
# docutils' smart quotes and dashes: the typed character or what it becomes.
TYPOGRAPHY = {
    "'": "['‘’]",
    '"': '["“”]',
    "...": "(?:\\.\\.\\.|…)",
    "---": "(?:---|—)",
    "--": "(?:--|–)",
}
TYPOGRAPHIC = re.compile(r"\.\.\.|---|--|['\"]|\s+|[\\^$.*+?()[\]{}|/-]")


def literal(text: str) -> str:
    """A JavaScript regular expression that matches ``text`` as the page shows it."""

    def one(match: re.Match) -> str:
        token = match.group()
        if token.isspace():
            return r"\s+"
        return TYPOGRAPHY.get(token, "\\" + token)

    return TYPOGRAPHIC.sub(one, text)


def _role(role: str, content: str) -> str:
    title = re.fullmatch(r"(?s)(.*?)\s*<[^>]*>", content)
    if role in {"math", "eq"}:
        return MATH
    if title:  # {ref}`words <target>`: the words
        return literal(title.group(1))
    if role.startswith("py:"):  # {py:func}`~a.b`: b, and () after a callable
        shown = content.lstrip("~").rsplit(".", 1)[-1] if content.startswith("~") else content
        return literal(shown.lstrip("!")) + r"(?:\(\))?"
    if role in {"ref", "doc", "numref"}:
        return ANY  # a section's or page's title
    return literal(content)


def sentence_pattern(quote: str) -> str:
    """The quote (MyST source) as a JavaScript regular expression over the text
    claims.js reads: roles become what they render to, each equation one
    ``MATH`` character, markup characters go, whitespace is any whitespace."""
    parts, at = [], 0
    for match in INLINE.finditer(quote):
        parts.append(literal(quote[at : match.start()]))
        at = match.end()
        if match["math"]:
            parts.append(MATH)
        elif match["role"]:
            parts.append(_role(match["role"], match["content"]))
        elif match["ticks"]:
            parts.append(literal(match["code"].strip()))
        elif match["link"] is not None:
            parts.append(literal(match["link"]))
        elif match["escaped"]:
            parts.append(literal(match["escaped"]))
        elif match["emphasis"]:
            continue
        else:
            parts.append(ANY)
    parts.append(literal(quote[at:]))
    pattern = "".join(parts)
    # A pattern that starts or ends unknown would reach into the next sentence.
    while (trimmed := _trim(pattern)) != pattern:
        pattern = trimmed
    return pattern


def _trim(pattern: str) -> str:
    for end in (ANY, r"\s+"):
        pattern = pattern.removeprefix(end).removesuffix(end)
    return pattern


def _folded(text: str) -> str:
    return " ".join(text.split())


def text_elements(doctree: nodes.document) -> list[tuple[nodes.Element, str]]:
    """The page's text elements that have a line, each with its source folded:
    read once per page, for all its claims."""
    return [
        (node, _folded(node.rawsource))
        for node in doctree.findall(lambda n: isinstance(n, TEXT_ELEMENTS))
        if node.line is not None
    ]


def text_element(elements: list[tuple[nodes.Element, str]], claim: dict) -> nodes.Element | None:
    """The text element that holds the claim's sentence: of those whose source
    says it, the last one starting at or before the sentence's line (a page may
    say a sentence twice); else, for a quote that runs over two elements, the
    last element starting at or before that line."""
    quote, line = _folded(claim["quote"]), claim["sentence_line"]
    saying = [node for node, source in elements if quote in source]
    before = [node for node in saying or [node for node, _ in elements] if node.line <= line]
    if before:
        return max(before, key=lambda node: node.line)
    return saying[0] if saying else None


def shown_in(elements: list[tuple[nodes.Element, str]], claim: dict) -> list[tuple]:
    """The text elements that show the claim's quote, each with the words it
    shows: the one element that says it; or, for a quote over a table row's cells
    (which no one cell says), each cell it covers, in the row's order, with the
    words of the quote in that cell."""
    quote = _folded(claim["quote"])
    first = text_element(elements, claim)
    defined = _definition_of(first, claim["quote"], elements)
    if defined is not None:
        return [defined]
    in_a_table = first is not None and isinstance(first.parent, nodes.entry)
    if not in_a_table or any(quote in source for _, source in elements):
        return [(first, claim["quote"])] if first is not None else []
    pieces = [piece.strip() for piece in CELL_EDGE.split(quote) if piece.strip()]
    first = pieces and text_element(elements, {**claim, "quote": pieces[0]})
    if not first:
        return []
    start = next(i for i, (node, _) in enumerate(elements) if node is first)
    shown = []
    for piece in pieces:
        at = next((i for i in range(start, len(elements)) if piece in elements[i][1]), None)
        if at is None:
            break
        shown.append((elements[at][0], piece))
        start = at + 1
    return shown


def _definition_of(first, quote: str, elements) -> tuple | None:
    """For a quote over a glossary entry's term and its definition (a sentence
    begins at the term), the definition's paragraph with the quote's words after
    the term: the term is another element, so neither says the whole quote."""
    item = first.parent.parent if first is not None and first.parent is not None else None
    if not isinstance(item, nodes.definition_list_item) or any(
        _folded(quote) in source for _, source in elements
    ):
        return None
    term = _folded(" ".join(t.astext() for t in item.children if isinstance(t, nodes.term)))
    words = quote.split()
    if not term or _folded(" ".join(words))[: len(term)] != term:
        return None
    rest = " ".join(words[len(term.split()) :])
    source = next(source for node, source in elements if node is first)
    return (first, rest) if rest and _folded(rest) in source else None


def _mark(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    found = claims.claims_of(app.env, docname)
    elements = text_elements(doctree) if found else []
    for index, claim in enumerate(found):
        for element, words in shown_in(elements, claim):
            element[INDEXES] = [*element.get(INDEXES, []), (index, words)]
    for number, element in enumerate(_marked(doctree), 1):  # ids in reading order
        element["classes"].append(CLASS)
        if not element["ids"]:
            element["ids"].append(f"{CLASS}-{number}")


def _marked(doctree: nodes.document):
    return doctree.findall(lambda node: isinstance(node, nodes.Element) and INDEXES in node)


def page_data(app: Sphinx, docname: str, doctree: nodes.document, source: str | None) -> dict:
    """What claims.js reads: each check with its element's id, in page order; a
    check run several times on one quote (in a loop) is one entry with its runs.
    An entry whose sentence has words no quote covers lists them (``outside``)."""
    found = claims.claims_of(app.env, docname)
    path = Path(app.env.doc2path(docname))
    said = claim_sentences.sentences(path.read_text(encoding="utf8"), "")
    shown: dict[tuple, dict] = {}
    # A quote over a table row's cells is one check: its marker and detail go
    # on the last cell it covers; the cells before it are only highlighted.
    last_cell = {}
    for element in _marked(doctree):
        for index, _ in element[INDEXES]:
            last_cell[index] = element["ids"][0]
    for element in _marked(doctree):
        for index, words in element[INDEXES]:
            claim = found[index]
            key = (element["ids"][0], claim["quote"], claim["check_line"])
            if key in shown:
                shown[key]["runs"] += 1
                continue
            if last_cell[index] != element["ids"][0]:
                shown[key] = {
                    "target": element["ids"][0],
                    "pattern": sentence_pattern(words),
                    "highlight_only": True,
                    "runs": 1,
                }
                continue
            shown[key] = {
                "target": element["ids"][0],
                "pattern": sentence_pattern(words),
                "check": claim["check"],
                "check_line": claim["check_line"],
                "torch": claim["torch"],
                "runs": 1,
                "outside": _outside(said, found, claim),
                **(
                    {"claim": claim["claim"]}
                    if _folded(claim["claim"]) != _folded(claim["quote"])
                    else {}
                ),
                **{key: claim[key] for key in RECORD_FIELDS if key in claim},
            }
    name = path.relative_to(app.srcdir).as_posix()
    lines = app.builder.get_target_uri(docname)  # where the page is, for the view's path
    return {
        "source": {
            "href": source,
            "name": name,
            "lines": _relative(lines, f"{SOURCE_LINES}/{name}.html"),
        },
        "claims": list(shown.values()),
    }


def _outside(said: list, found: list[dict], claim: dict) -> list[str]:
    """The words of the claim's sentence that no check of the page quotes."""
    for sentence in said:
        if claim_sentences.quoting(sentence, [claim]):
            return claim_sentences.unquoted_words(
                sentence, claim_sentences.quoting(sentence, found)
            )
    return []


def _relative(page_uri: str, target: str) -> str:
    """``target`` (from the site's root) as a link from the page at ``page_uri``."""
    return "../" * page_uri.count("/") + target


def write_source_lines(app: Sphinx, docname: str) -> None:
    """The page's source as a numbered HTML page: line n is ``#L-n``, highlighted
    when opened at it, with a few lines above it in view, so a reader lands on the
    check the reveal names, in the site's light or dark theme, as they chose."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import MarkdownLexer

    path = Path(app.env.doc2path(docname))
    name = path.relative_to(app.srcdir).as_posix()
    # Each line a span with the id L-n; its number links to it (Pygments takes the
    # links' prefix from linespans: lineanchors too would give each id twice).
    formatter = HtmlFormatter(linenos="inline", linespans="L", anchorlinenos=True, wrapcode=True)
    body = highlight(path.read_text(encoding="utf8"), MarkdownLexer(), formatter)
    up = "../" * name.count("/") + "../"
    back = up + app.builder.get_target_uri(docname)
    # The site's icon (Sphinx copies it into _static): without one a browser asks
    # the server for /favicon.ico, a 404 in the reader's console.
    favicon = app.config.html_favicon or ""
    href = favicon if "://" in favicon else f"{up}_static/{Path(favicon).name}"
    icon = f'<link rel="icon" href="{href}">\n' if favicon else ""
    # The site's code colours, light and dark (furo's pygments.css), and the theme
    # the reader chose on the site (furo keeps it in localStorage), as furo applies it.
    html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{name}, numbered: the source of the page and its checks</title>
{icon}<link rel="stylesheet" href="{up}_static/pygments.css">
<style>
body {{ font-family: system-ui, sans-serif; margin: 1rem; }}
pre {{ font-size: 0.85rem; line-height: 1.45; overflow-x: auto; }}
pre span[id] {{ scroll-margin-top: 6em; }}  /* a few lines above the one opened */
/* A block as wide as the longest line: the line opened is marked across the
   code, and the next line still starts below it (inline-block, it ran on to
   the block's right, out of sight). */
pre span[id]:target {{ background: #fff3b0; display: block; width: max-content; min-width: 100%; }}
pre a {{ color: inherit; }}  /* the line numbers */
body[data-theme="dark"] {{ background: #131416; color: #cfd0d0; }}
body[data-theme="dark"] p a {{ color: #79b8ff; }}
body[data-theme="dark"] pre span[id]:target {{ background: #3d3300; }}
@media (prefers-color-scheme: dark) {{
  body[data-theme="auto"] {{ background: #131416; color: #cfd0d0; }}
  body[data-theme="auto"] p a {{ color: #79b8ff; }}
  body[data-theme="auto"] pre span[id]:target {{ background: #3d3300; }}
}}
</style></head>
<body><script>document.body.dataset.theme = localStorage.getItem("theme") || "auto";</script>
<p><a href="{back}">Back to the page</a>. The source of <code>{name}</code>,
with the hidden checks the page does not show; each line is numbered.</p>
{body}</body></html>
"""
    target = Path(app.outdir, SOURCE_LINES, f"{name}.html")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or target.read_text(encoding="utf8") != html:
        target.write_text(html, encoding="utf8")


def _script_body(data: dict) -> str:
    # Inside <script>: no "</script>" or "<!--" can end it early.
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _add_to_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None or not any(True for _ in _marked(doctree)):
        return
    # The page's source as "view source" shows it (none without html_copy_source).
    source = context.get("sourcename") and context["pathto"]("_sources/" + context["sourcename"], 1)
    data = page_data(app, pagename, doctree, source)
    write_source_lines(app, pagename)
    context["checked_claims"] = sum(not claim.get("highlight_only") for claim in data["claims"])
    app.add_js_file(None, body=_script_body(data), type="application/json", id=DATA_ID)
    app.add_js_file("claims.js", defer="defer")
    app.add_css_file("claims.css")


class _ThisBuild:
    """What one build (in this process) knows: whether it read any page, and the
    site's counts once a page asks for them (every page is read by then)."""

    pages_read = False
    counts: dict[str, Counter] | None = None


_this_build = _ThisBuild()


class claim_count(nodes.Inline, nodes.TextElement):
    """A number of ``make claims``'s, filled in when the page is written."""


COUNT_ROLE = "claim-count"
COUNTING_PAGES = "autograd_docs_claim_count_pages"


def _count_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    node = claim_count(rawtext, "", key=" ".join(text.split()))
    node.source, node.line = inliner.document.current_source, lineno
    env = inliner.document.settings.env
    _counting_pages(env).add(env.docname)
    return [node], []


def _counting_pages(env) -> set:
    if not hasattr(env, COUNTING_PAGES):
        setattr(env, COUNTING_PAGES, set())
    return getattr(env, COUNTING_PAGES)


def site_counts(env) -> dict[str, Counter]:
    """What ``make claims`` prints, by section and ``total``: the tally of every
    page's sentences against its checks (``claim_sentences.tally``)."""
    md = claim_sentences.parser()
    counts: dict[str, Counter] = {"total": Counter()}
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        if path.suffix != ".md":
            continue
        said = claim_sentences.sentences(path.read_text(encoding="utf8"), "", md)
        tally, _ = claim_sentences.tally(said, claims.claims_of(env, docname))
        counts.setdefault(claim_sentences.section_of(docname), Counter()).update(tally)
        counts["total"].update(tally)
    return counts


def count_text(counts: dict[str, Counter], key: str) -> str | None:
    """The text ``{claim-count}`key``` stands for, or None for a key it does not know."""
    section, _, key = key.rpartition(": ")
    tally = counts.get(section or "total")
    if tally is None:
        return None
    fully, counted = claim_sentences.fully_checked(tally)
    if key == "coverage":
        return f"{fully} of {counted} ({100 * fully / counted:.0f}%)" if counted else "0 of 0"
    if key == "counted":
        return str(counted)
    if key == "generalising":
        return str(tally[claim_sentences.GENERAL_ON_EXAMPLE])
    known = (*claim_sentences.VERDICTS, *(f"% {m}" for m in claim_sentences.MARKERS))
    return str(tally[key]) if key in known else None


def _fill_counts(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    found = list(doctree.findall(claim_count))
    if not found:
        return
    if _this_build.counts is None:
        _this_build.counts = site_counts(app.env)
    for node in found:
        text = count_text(_this_build.counts, node["key"])
        if text is None:
            report(AuthorError.UNKNOWN_CLAIM_COUNT, node, key=node["key"])
            text = "?"
        node.replace_self(nodes.Text(text))


def _write_counting_pages_again(app: Sphinx, env) -> list[str]:
    """A page that states the site's counts is stale when any page was read again."""
    return sorted(_counting_pages(env)) if _this_build.pages_read else []


def _note_pages_read(app: Sphinx, env, docnames: list[str]) -> None:
    _this_build.pages_read = bool(docnames)
    _this_build.counts = None
    _counting_pages(env).difference_update(docnames)


def _merge_counting_pages(app: Sphinx, env, docnames, other) -> None:
    _counting_pages(env).update(_counting_pages(other) & set(docnames))


def setup(app: Sphinx) -> dict:
    app.add_node(claim_count)
    app.add_role(COUNT_ROLE, _count_role)
    app.connect("env-before-read-docs", _note_pages_read)
    app.connect("env-merge-info", _merge_counting_pages)
    app.connect("env-get-updated", _write_counting_pages_again)
    app.connect("doctree-resolved", _fill_counts)
    app.connect("doctree-resolved", _mark)
    app.connect("html-page-context", _add_to_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
