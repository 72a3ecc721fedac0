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
* ``claims.js`` and ``claims.css`` (docs/_static), which draw the reveal, and
  ``checked_claims`` in the template's context, which puts the toggle beside
  "view source" (docs/_templates/components/view-this-page.html): in the HTML
  from the start, so nothing moves when the script arrives.

Pages without claims get none of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from autograd_docs.execution import claims

# The elements a sentence can sit in. Headings are left out: a heading's HTML
# may not hold the detail the reveal opens beside its text.
TEXT_ELEMENTS = (nodes.paragraph, nodes.term)
CLASS = "checked-claim"
# Set on a marked node: the indexes (in claims_of's order) of its claims.
INDEXES = "checked_claim_indexes"
DATA_ID = "checked-claims-data"

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


def _mark(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    found = claims.claims_of(app.env, docname)
    elements = text_elements(doctree) if found else []
    for index, claim in enumerate(found):
        element = text_element(elements, claim)
        if element is not None:
            element[INDEXES] = [*element.get(INDEXES, []), index]
    for number, element in enumerate(_marked(doctree), 1):  # ids in reading order
        element["classes"].append(CLASS)
        if not element["ids"]:
            element["ids"].append(f"{CLASS}-{number}")


def _marked(doctree: nodes.document):
    return doctree.findall(lambda node: isinstance(node, nodes.Element) and INDEXES in node)


def page_data(app: Sphinx, docname: str, doctree: nodes.document, source: str | None) -> dict:
    """What claims.js reads: each claim with its element's id, in page order."""
    found = claims.claims_of(app.env, docname)
    shown = []
    for element in _marked(doctree):
        for index in element[INDEXES]:
            claim = found[index]
            shown.append(
                {
                    "target": element["ids"][0],
                    "pattern": sentence_pattern(claim["quote"]),
                    "check": claim["check"],
                    "check_line": claim["check_line"],
                    "torch": claim["torch"],
                    **(
                        {"claim": claim["claim"]}
                        if _folded(claim["claim"]) != _folded(claim["quote"])
                        else {}
                    ),
                    **{key: claim[key] for key in ("examples", "families") if key in claim},
                }
            )
    name = Path(app.env.doc2path(docname)).relative_to(app.srcdir).as_posix()
    return {"source": {"href": source, "name": name}, "claims": shown}


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
    context["checked_claims"] = len(data["claims"])
    app.add_js_file(None, body=_script_body(data), type="application/json", id=DATA_ID)
    app.add_js_file("claims.js", defer="defer")
    app.add_css_file("claims.css")


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _mark)
    app.connect("html-page-context", _add_to_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
