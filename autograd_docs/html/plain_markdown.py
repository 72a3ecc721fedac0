"""A page's MyST Markdown as the plain Markdown Jupyter and Colab render.

A downloaded notebook's Markdown cells hold the page's MyST source, whose
roles, ``(label)=`` lines, ``%`` comments and directive fences Jupyter shows as
literal text. ``plain_markdown`` parses a cell with myst-parser's own
markdown-it parser (the site's MyST configuration), so it is the parser that
says where a role, a target, a comment or a directive is, and rewrites only
those: a role becomes a Markdown link to the page on the site that Sphinx's
environment says defines it (``Links``), a label or comment line disappears, an
admonition becomes a blockquote with its title, a glossary a list of bold terms,
a ``{{ substitution }}`` its value. Math, figures, code and the rest of the
text are left as written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ADMONITIONS = {
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
    "admonition",
    "exercise",
    "solution",
}
TITLES = {"seealso": "See also"}
DROPPED = {"toctree", "index", "nb-exec-table", "include", "raw", "only"}
CODE_DIRECTIVES = {
    "doctest": "python",
    "code-block": None,
    "code": None,
    "sourcecode": None,
    "testcode": "python",
}
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
OPTION = re.compile(r"^:[\w-]+:")


def parser(myst_config: MdParserConfig) -> MarkdownIt:
    """myst-parser's markdown-it parser, configured as the site's pages are."""
    return create_md_parser(myst_config, RendererHTML)


@dataclass
class Links:
    """Where the site shows what a role names, as Markdown.

    ``url(docname, anchor)`` is the page's address (absolute, or relative to the
    notebook's page, or None when neither is known); the dictionaries come from
    Sphinx's environment and intersphinx.
    """

    url: Callable[[str, str], str | None]
    docname: str
    terms: dict[str, tuple[str, str]] = field(default_factory=dict)  # term -> (doc, anchor)
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # -> (doc, anchor, title)
    titles: dict[str, str] = field(default_factory=dict)  # docname -> title
    api: dict[str, str] = field(default_factory=dict)  # "py:function torch.x" -> url
    substitutions: dict[str, str] = field(default_factory=dict)
    glue: dict[str, str] = field(default_factory=dict)  # name -> text/plain

    def link(self, text: str, url: str | None) -> str:
        return f"[{text}]({url})" if url else text

    def role(self, name: str, content: str) -> str:
        """The Markdown ``{name}`content``` becomes."""
        name = name.removeprefix("std:")
        match = EXPLICIT.match(content)
        text, target = (match["text"], match["target"]) if match else (None, content)
        if name == "term":
            doc, anchor = self.terms.get(normal(target), (None, ""))
            return self.link(text or target, doc and self.url(doc, anchor))
        if name in ("ref", "numref"):
            doc, anchor, title = self.labels.get(target.lower(), (None, "", ""))
            return self.link(text or title or target, doc and self.url(doc, anchor))
        if name == "doc":
            doc = resolve_doc(self.docname, target)
            return self.link(
                text or self.titles.get(doc, target),
                doc in self.titles and self.url(doc, "") or None,
            )
        if name.startswith("py:"):
            short = target.startswith("~")
            target = target.lstrip("~.!")
            shown = text or (target.rsplit(".", 1)[-1] if short else target)
            if not text and name in ("py:func", "py:meth"):
                shown += "()"
            kind = {
                "func": "function",
                "meth": "method",
                "mod": "module",
                "attr": "attribute",
                "exc": "exception",
            }.get(name[3:], name[3:])
            return self.link(f"`{shown}`", self.api.get(f"py:{kind} {target}"))
        if name in ("math", "eq"):
            return f"${content}$"
        if name.startswith("glue"):
            key = target.split(":", 1)[0] if name == "glue:text" else target
            return self.glue.get(key, key)
        if name in ("code", "literal", "command", "file", "samp", "kbd"):
            return f"`{text or target}`"
        return text or target  # abbr, sub, sup, and any other role: its text


def normal(term: str) -> str:
    """A glossary term as Sphinx's std domain files it."""
    return unicodedata.normalize("NFC", " ".join(term.split())).lower()


def resolve_doc(docname: str, target: str) -> str:
    """``{doc}`target``` seen from ``docname``: the docname it names."""
    target = target.removesuffix(".md")
    if target.startswith("/"):
        return target.lstrip("/")
    parts = docname.split("/")[:-1]
    for part in target.split("/"):
        if part == "..":
            parts = parts[:-1]
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def plain_markdown(text: str, md: MarkdownIt, links: Links) -> str:
    """``text`` (one Markdown cell of a MyST page) with its MyST-only syntax rewritten."""
    lines = text.splitlines()
    out: list[str] = []
    replace: dict[str, str] = {}
    blocks: list[tuple[int, int, list[str] | None]] = []  # (start, end, new lines or None)
    tokens = md.parse(text, {})
    for token in tokens:
        if token.type == "inline":
            for child in token.children or []:
                if child.type == "myst_role":
                    raw = "{" + child.meta["name"] + "}`" + child.content + "`"
                    replace[raw] = links.role(child.meta["name"], child.content)
                elif child.type == "substitution_inline":
                    raw_value = links.substitutions.get(child.content.strip(), child.content)
                    for raw in re.findall(
                        r"\{\{\s*" + re.escape(child.content.strip()) + r"\s*\}\}", token.content
                    ):
                        replace[raw] = str(raw_value)
                elif child.type == "link_open" and (href := child.attrGet("href")):
                    new = page_link(str(href), links)
                    if new != href:
                        replace[f"]({href})"] = f"]({new})"
        if token.level != 0 or token.map is None:
            continue
        start, end = token.map
        if token.type in ("myst_target", "myst_line_comment"):
            blocks.append((start, end, []))
        elif token.type in ("fence", "colon_fence") and token.info.startswith("{"):
            blocks.append((start, end, directive(token, md, links)))
        elif token.type in ("fence", "code_block", "math_block", "math_block_label", "amsmath"):
            blocks.append((start, end, None))  # verbatim: no roles in code or TeX
    line, index = 0, 0
    while line < len(lines):
        if index < len(blocks) and blocks[index][0] == line:
            start, end, rewritten = blocks[index]
            out.extend(lines[start:end] if rewritten is None else rewritten)
            line, index = end, index + 1
            continue
        current = lines[line]
        for raw, new in replace.items():
            current = current.replace(raw, new)
        out.append(current)
        line += 1
    return "\n".join(squeeze(out)).strip("\n")


def page_link(href: str, links: Links) -> str:
    """A Markdown link to a page's ``.md`` source: the page on the site."""
    path, _, anchor = href.partition("#")
    if "://" in href or not path.endswith(".md"):
        return href
    doc = resolve_doc(links.docname, path)
    return links.url(doc, anchor) or href


def squeeze(lines: list[str]) -> list[str]:
    """No runs of blank lines where removed lines stood."""
    kept: list[str] = []
    for line in lines:
        if not line.strip() and kept and not kept[-1].strip():
            continue
        kept.append(line)
    return kept


def directive(token, md: MarkdownIt, links: Links) -> list[str]:
    """A directive fence as plain Markdown lines."""
    name, _, argument = token.info[1:].partition("}")
    argument = argument.strip()
    body = token.content.splitlines()
    options: dict[str, str] = {}
    if body and body[0].strip() == "---":  # YAML options block
        end = body.index("---", 1) if "---" in body[1:] else 0
        for option in body[1:end]:
            key, _, value = option.partition(":")
            options[key.strip()] = value.strip()
        body = body[end + 1 :]
    while body and OPTION.match(body[0]):
        key, _, value = body.pop(0)[1:].partition(":")
        options[key.strip()] = value.strip()
    content = "\n".join(body)
    if name in ADMONITIONS:
        title = (
            argument
            if name in ("admonition", "exercise", "solution") and argument
            else TITLES.get(name, name.capitalize())
        )
        title = plain_markdown(title, md, links)
        inner = plain_markdown(content, md, links).splitlines()
        return ["> **" + title + "**", ">", *[f"> {line}".rstrip() for line in inner], ""]
    if name in CODE_DIRECTIVES:
        language = CODE_DIRECTIVES[name] or argument or ""
        return [f"```{language}", *body, "```", ""]
    if name == "math":
        return ["$$", *body, "$$", ""]
    if name == "glossary":
        return glossary(body, options, md, links)
    if name in ("figure", "image"):
        alt = options.get("alt", "")
        caption = plain_markdown(content, md, links) if content.strip() else ""
        return [f"![{alt}]({argument})", "", *([caption, ""] if caption else [])]
    if name in DROPPED:
        return []
    # Any other directive (container, ...): its content, as plain Markdown.
    return [*plain_markdown(content, md, links).splitlines(), ""]


def glossary(body: list[str], options: dict[str, str], md: MarkdownIt, links: Links) -> list[str]:
    """A ``{glossary}``: each entry's terms in bold, then its definition."""
    entries: list[tuple[list[str], list[str]]] = []
    for line in body:
        if line and not line[0].isspace():
            if entries and not entries[-1][1]:
                entries[-1][0].append(line.strip())  # another name for the same entry
            else:
                entries.append(([line.strip()], []))
        elif entries:
            entries[-1][1].append(line)
    if "sorted" in options:
        entries.sort(key=lambda entry: unicodedata.normalize("NFD", entry[0][0].lower()))
    out: list[str] = []
    for terms, definition in entries:
        indent = min(
            (len(line) - len(line.lstrip()) for line in definition if line.strip()), default=0
        )
        text = "\n".join(line[indent:] for line in definition)
        out += [
            ", ".join(f"**{term}**" for term in terms),
            "",
            *plain_markdown(text, md, links).splitlines(),
            "",
        ]
    return out
