"""The data search.html ranks pages with (``docs/_static/site-search.js`` ranks).

Sphinx's own index says only which pages hold a word, so its search can rank
no better than "a page with the word in some heading" and then alphabetically,
and it drops every page that misses one word of the query. This writes, beside
it, ``searchdata.js``: for each section of each page, its heading, its index
entries (``{index}`` directives, glossary terms, and the API names the page
uses most, as ``api_roles`` decides), how often each word occurs in its prose
and in its code and outputs, and its opening words for the results list.
Words are split, lower-cased, stop-listed and stemmed by the same rules as
Sphinx's index, whose JavaScript stemmer site-search.js reuses (numbers are
kept: a reader pastes code).

It also carries the synonyms (``search_synonyms.txt``): reader words the pages
do not use, each with the site's words for it. A phrase of theirs of two words
or more is counted as a term of its own, in each section's prose and code where
its words stand in a row. A script, not JSON fetched, so the search works from
``file://`` too.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from collections import Counter
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.search.en import SearchEnglish
from sphinx.util import docname_join, logging

from autograd_docs.diagnostics import AuthorError, report, shown_path
from autograd_docs.execution.cache_key import digest, environment_fingerprint
from autograd_docs.kept_record import KeptRecord, source_digest

logger = logging.getLogger(__name__)

DATA_FILE = "searchdata.js"
SYNONYMS = Path(__file__).with_name("search_synonyms.txt")
# This module's code as imported, for FactsCache's rules (kept_record.py).
_THIS_MODULE = source_digest(__file__)
# Not content: nothing to find there.
NOT_SEARCHED = {"genindex", "search", "404"}
SUMMARY_CHARS = 180
# Nodes whose text is no reader's word: TeX source, raw HTML, comments.
SKIPPED = (
    nodes.math,
    nodes.math_block,
    nodes.raw,
    nodes.comment,
    nodes.image,
    nodes.system_message,
)
# A heading on this many pages ("Next steps", "Summary") is the site's frame:
# its links say nothing about the pages they point to.
FRAME_HEADING_PAGES = 3


class Words:
    """Sphinx's own rules for the search index's words (its ``SearchLanguage``)."""

    def __init__(self, lang) -> None:
        self.lang = lang
        # A word's stem, or None for a word the index leaves out. Remembered:
        # the site has some 55,000 words and under 4,000 different ones (stemming
        # every one was 0.6 s of a 3.4 s no-change rebuild).
        self._stems: dict[str, str | None] = {}

    def _stem(self, part: str) -> str | None:
        if part not in self._stems:
            lower = part.lower()
            # Numbers stay, unlike in Sphinx's index: pasted code has them.
            keep = part and (lower.isdigit() or self.lang.word_filter(lower))
            self._stems[part] = self.lang.stem(lower) if keep else None
        return self._stems[part]

    def __call__(self, text: str) -> list[str]:
        stems = []
        for word in self.lang.split(text):
            # `zero_grad` is found as itself, and by `zero grad` too.
            for part in [word, *word.split("_")] if "_" in word.strip("_") else [word]:
                if (stem := self._stem(part)) is not None:
                    stems.append(stem)
        return stems


# TeX as a results list shows it: the commands the pages use, as the symbols
# they draw. A summary keeps its equations (a sentence without them has holes
# where the answer was); the ranking does not read them.
TEX_SYMBOLS = {
    "partial": "∂",
    "top": "ᵀ",
    "sum": "Σ",
    "times": "×",
    "cdot": "·",
    "to": " → ",
    "mapsto": " ↦ ",
    "varepsilon": "ε",
    "epsilon": "ε",
    "odot": "⊙",
    "nabla": "∇",
    "infty": "∞",
    "sigma": "σ",
    "approx": " ≈ ",
    "pi": "π",
    "ne": " ≠ ",
    "le": " ≤ ",
    "ge": " ≥ ",
    "in": " ∈ ",
    "eta": "η",
    "lambda": "λ",
    "theta": "θ",
    "alpha": "α",
    "beta": "β",
    "mu": "μ",
    "dots": "…",
    "cdots": "⋯",
    "ldots": "…",
    "lVert": "‖",
    "rVert": "‖",
    "langle": "⟨",
    "rangle": "⟩",
    "sqrt": "√",
    "quad": " ",
    "qquad": " ",
    "R": "ℝ",
    ",": " ",
    ";": " ",
    "!": "",
    "{": "{",
    "}": "}",
}
NAMED_FUNCTIONS = {"sin", "cos", "tanh", "log", "exp", "max", "min"}
TEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
TEX_COMMAND = re.compile(r"\\([A-Za-z]+|[,;!{}])\s*")


def tex_as_text(tex: str) -> str:
    """An equation's TeX as plain text for a summary, e.g. ``v^\\top J`` as
    ``vᵀ J`` and ``\\frac{\\partial y}{\\partial x}`` as ``∂y/∂x``."""
    text = TEX_FRACTION.sub(r"\1/\2", tex)
    text = re.sub(r"\\(?:begin|end)\{\w+\*?\}", " ", text)  # an environment's frame
    # Commands with no symbol (\\mathbf, \\operatorname, \\left, \\sin) are
    # dropped; the word after a named function (\\sin x) keeps its space.
    text = text.replace("\\\\", "; ")  # a line break in an aligned display
    text = TEX_COMMAND.sub(
        lambda m: TEX_SYMBOLS.get(m[1], m[1] + " " if m[1] in NAMED_FUNCTIONS else ""), text
    )
    text = re.sub(r"\^\s*ᵀ", "ᵀ", text)
    text = text.replace("{", "").replace("}", "").replace("&", "")
    return re.sub(r"\s+", " ", text).strip()


class _Section:
    def __init__(self, anchor: str, heading: str) -> None:
        self.anchor, self.heading = anchor, heading
        self.prose: list[str] = []
        self.summary: list[str] = []  # the prose with its equations, as text
        self.code: list[str] = []
        self.entries: list[tuple[str, str, bool]] = []  # (text, anchor, from the glossary)


def _walk(node: nodes.Node, section: _Section, sections: list[_Section]) -> None:
    if isinstance(node, (nodes.math, nodes.math_block)):
        section.summary.append(tex_as_text(node.astext()))
        return
    if isinstance(node, SKIPPED) or (
        isinstance(node, nodes.Element) and "tag_measured" in node["classes"]
    ):
        return  # a measured cell prints this machine's timings: nothing to search
    if isinstance(node, nodes.section):
        inner = _Section(node["ids"][0] if node["ids"] else "", node[0].astext())
        sections.append(inner)
        for child in node.children[1:]:
            _walk(child, inner, sections)
        return
    if isinstance(node, addnodes.index):
        in_glossary = any(isinstance(a, addnodes.glossary) for a in _ancestors(node))
        for _type, value, target, _main, _key in node["entries"]:
            section.entries.append((value.replace(";", " "), target or "", in_glossary))
        return
    if isinstance(node, nodes.literal_block):
        section.code.append(node.astext())
        return
    if isinstance(node, nodes.Text):
        section.prose.append(node.astext())
        section.summary.append(node.astext())
        return
    for child in node.children:
        _walk(child, section, sections)


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def page_sections(doctree: nodes.document) -> list[_Section]:
    """The page's sections in order; the first is the page itself (its title)."""
    sections: list[_Section] = []
    top = _Section("", "")
    for child in doctree.children:
        _walk(child, top, sections)
    if top.prose or top.code or top.entries:  # text before the first heading
        if sections:
            first = sections[0]
            first.prose[:0], first.code[:0] = top.prose, top.code
            first.summary[:0] = top.summary
            first.entries[:0] = top.entries
        else:
            sections.append(top)
    return sections


def _summary(parts: list[str]) -> str:
    text = re.sub(r"\s+", " ", " ".join(parts)).strip()
    text = re.sub(r" ([,.;:)?!])", r"\1", text)  # "x.grad , where": one text node ends at a role
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"


def _counts(stems: list[str], vocabulary: dict[str, int]) -> str:
    """``id:count`` pairs (``id`` alone for once): compact, the file is read whole."""
    counts = Counter(vocabulary.setdefault(stem, len(vocabulary)) for stem in stems)
    return ",".join(str(i) if n == 1 else f"{i}:{n}" for i, n in sorted(counts.items()))


def _ids(stems: list[str], vocabulary: dict[str, int]) -> list[int]:
    return [vocabulary.setdefault(stem, len(vocabulary)) for stem in stems]


def api_entries(app: Sphinx) -> dict[str, list[str]]:
    """docname -> the API names whose search entry is that page (api_roles)."""
    pages: dict[str, list[str]] = {}
    for name, _dispname, _type, docname, _anchor, _prio in app.env.get_domain("api").get_objects():
        pages.setdefault(docname, []).append(name)
    return pages


def read_synonyms(path: Path = SYNONYMS) -> list[list[str]]:
    """Groups of phrases: a reader's phrase first, then what the pages say."""
    groups = []
    for line in path.read_text(encoding="utf8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            groups.append([phrase.strip() for phrase in line.split("|") if phrase.strip()])
    return groups


def phrase_stems(groups: list[list[str]], words: Words) -> dict[str, list[str]]:
    """The synonyms' phrases of two words or more, as stems, keyed as the search
    data names them ("check gradient"): a phrase counts where a page has its
    words in a row, not where they stand apart (site-search.js)."""
    phrases = {}
    for phrase in (phrase for group in groups for phrase in group):
        stems = words(phrase)
        if len(words.lang.split(phrase)) > 1 and len(stems) > 1:  # "create_graph" is one word
            phrases[" ".join(stems)] = stems
    return phrases


def phrase_hits(stems: list[str], phrases: dict[str, list[str]]) -> list[str]:
    """Each phrase of ``phrases`` as often as ``stems`` holds it in a row."""
    starting: dict[str, list[tuple[str, list[str]]]] = {}  # looked up at each stem
    for key, phrase in phrases.items():
        starting.setdefault(phrase[0], []).append((key, phrase))
    return [
        key
        for at, stem in enumerate(stems)
        for key, phrase in starting.get(stem, ())
        if stems[at : at + len(phrase)] == phrase
    ]


def _link_target(app: Sphinx, docname: str, reftype: str, target: str) -> str | None:
    """The page a `{ref}` or `{doc}` points to (terms and API names are lookups)."""
    if reftype == "ref":
        label = app.env.domains.standard_domain.labels.get(target)
        return label[0] if label else None
    if reftype == "doc":
        return docname_join(docname, target)  # relative, or absolute with a "/"
    return None


def page_facts(doctree: nodes.document, words: Words) -> dict:
    """What the search data takes from one page's doctree, and from nothing else:
    its sections' words (stemmed), its headings, and the links its sections make
    (resolved later: a label can move to another page without this one changing)."""
    links = []
    for xref in doctree.findall(addnodes.pending_xref):
        section = next((a for a in _ancestors(xref) if isinstance(a, nodes.section)), None)
        # A section with code shows its own answer (an error message's page
        # reproduces it, then points on): its heading is about itself.
        if (
            section is None
            or section.parent is doctree
            or next(section.findall(nodes.literal_block), None) is not None
        ):
            continue
        links.append([xref.get("reftype", ""), xref.get("reftarget", ""), section[0].astext()])
    return {
        "headings": sorted({section[0].astext() for section in doctree.findall(nodes.section)}),
        "links": links,
        "sections": [
            {
                "anchor": section.anchor,
                "heading": section.heading,
                "heading_words": words(section.heading),
                "entries": [
                    [words(text), anchor, glossary] for text, anchor, glossary in section.entries
                ],
                "prose": words(" ".join(section.prose)),
                "code": words(" ".join(section.code)),
                "summary": _summary(section.summary),
            }
            for section in page_sections(doctree)
        ],
    }


class FactsCache:
    """Each page's facts, kept in the doctree folder between builds and taken
    again while the page's doctree file is the same bytes: a rebuild reads and
    walks only the doctrees that changed (all 36 took 0.7 s of every rebuild).
    Kept only for the same rules: this module as imported, Python and every
    installed package (Sphinx, docutils, the stemmer), and the search options."""

    FILE = "search-facts.json"

    def __init__(self, app: Sphinx) -> None:
        self.app = app
        options = sorted(app.config.html_search_options.items())
        self.record = KeptRecord(
            Path(app.doctreedir) / self.FILE,
            rules=digest([_THIS_MODULE, environment_fingerprint(), repr(options)]),
            name="pages",
            what="every page's search facts",
        )
        self.pages: dict[str, list] = self.record.entries

    def facts(self, docname: str, words: Words) -> dict:
        # The bytes hashed are the bytes read: another build rewriting the file
        # meanwhile cannot pair one version's digest with another's facts.
        pickled = (Path(self.app.doctreedir) / f"{docname}.doctree").read_bytes()
        same_bytes = hashlib.sha256(pickled).hexdigest()
        kept = self.pages.get(docname)
        if not (isinstance(kept, list) and len(kept) == 2 and kept[0] == same_bytes):
            kept = self.pages[docname] = [same_bytes, page_facts(pickle.loads(pickled), words)]
        return kept[1]

    def save(self, docnames: list[str]) -> None:
        """Keep the facts of ``docnames`` (a removed page's are dropped)."""
        self.record.save({name: self.pages[name] for name in docnames})


def frame_headings(facts: dict[str, dict]) -> set[str]:
    """Headings on ``FRAME_HEADING_PAGES`` pages or more ("Next steps", "Summary",
    "Check yourself"): the site's frame, not what a page is about."""
    pages_with: Counter = Counter()
    for page in facts.values():
        pages_with.update(page["headings"])
    return {heading for heading, n in pages_with.items() if n >= FRAME_HEADING_PAGES}


def is_hub(app: Sphinx, docname: str) -> bool:
    """A page that routes readers to others (front matter ``search: hub``)."""
    return app.env.metadata[docname].get("search") == "hub"


def reader_questions(app: Sphinx, docname: str) -> list[str] | None:
    """The page's front matter ``search_questions``: what readers who never read
    the site type when this page is their answer (slang, error fragments,
    goals). Searched as a field of their own, never shown: MyST keeps front
    matter out of the page, and hands a list over as its JSON. None when it is
    not a list of strings (``_check_reader_questions`` says where)."""
    value = app.env.metadata.get(docname, {}).get("search_questions", [])
    try:
        questions = json.loads(value) if isinstance(value, str) else value
    except ValueError:  # a single string, not a list
        questions = None
    if not (isinstance(questions, list) and all(isinstance(q, str) for q in questions)):
        return None
    return questions


def _check_reader_questions(app: Sphinx, env) -> list[str]:
    """At every build, before anything is written: a page whose questions are not
    a list is an author's mistake at its front matter's key (each build says it
    again, so an unchanged page cannot let a rebuild pass)."""
    for docname in sorted(env.found_docs):
        if reader_questions(app, docname) is None:
            path = env.doc2path(docname)
            lines = path.read_text(encoding="utf8").splitlines()
            line = next(
                (n for n, text in enumerate(lines, 1) if text.startswith("search_questions:")), 1
            )
            report(AuthorError.SEARCH_QUESTIONS_NOT_A_LIST, f"{shown_path(path)}:{line}")
    return []


def anchor_texts(app: Sphinx, facts: dict[str, dict], frame: set[str]) -> dict[str, list[str]]:
    """docname -> the headings of hub pages' sections that link to it.

    As web search reads link texts: the questions page asks, in readers'
    words, under each heading, and links the page that answers. Only a page
    that routes (front matter ``search: hub``) is read so: elsewhere a heading
    names its own page's topic and its links point on for more ("Why .grad is
    None: a checklist" links five pages, and lent them its words). The page's
    own title is no such heading, nor are the site's ``frame`` headings, nor
    those of sections with code.
    """
    links: dict[str, set[tuple[str, str]]] = {}
    for docname, page in facts.items():
        if not is_hub(app, docname):
            continue
        for reftype, reftarget, heading in page["links"]:
            target = _link_target(app, docname, reftype, reftarget)
            if target not in (None, docname):
                links.setdefault(target, set()).add((docname, heading))
    return {
        target: sorted(heading for _source, heading in pairs if heading not in frame)
        for target, pairs in links.items()
    }


def search_data(app: Sphinx) -> dict:
    # English, as the language_data.js Sphinx gives search.html (no `language` set).
    words = Words(SearchEnglish(app.config.html_search_options))
    vocabulary: dict[str, int] = {}
    apis = api_entries(app)
    pages = []
    cache = FactsCache(app)
    docnames = sorted(app.env.found_docs - NOT_SEARCHED)
    facts = {name: cache.facts(name, words) for name in docnames}
    cache.save(docnames)
    frame = frame_headings(facts)
    anchors = anchor_texts(app, facts, frame)
    synonyms = read_synonyms()
    phrases = phrase_stems(synonyms, words)
    for docname, page in facts.items():
        sections = page["sections"]
        if not sections:
            continue
        title = app.env.titles[docname].astext()
        # Sorted: the domain's objects come in the order parallel readers merged them.
        api_names = [[words(name), "", False] for name in sorted(apis.get(docname, []))]
        pages.append(
            {
                "doc": docname,
                "title": title,
                # A page that routes readers to others (front matter ``search: hub``)
                # ranks below the page it routes to when both match.
                "hub": int(is_hub(app, docname)),
                "t": _ids(words(title), vocabulary),
                "an": [_ids(words(text), vocabulary) for text in anchors.get(docname, [])],
                "q": [
                    _ids(words(text), vocabulary) for text in reader_questions(app, docname) or []
                ],
                "s": [
                    {
                        "a": section["anchor"] if number else "",
                        "h": section["heading"] if number else "",
                        "ht": _ids(section["heading_words"], vocabulary) if number else [],
                        "ix": [
                            [_ids(stems, vocabulary), anchor, int(glossary)]
                            for stems, anchor, glossary in section["entries"]
                            + (api_names if number == 0 else [])
                        ],
                        # A phrase's hits count as a term of their own, not in the
                        # section's length (site-search.js); titles, headings and
                        # entries are sequences site-search.js finds the phrases in itself.
                        "p": _counts(
                            section["prose"] + phrase_hits(section["prose"], phrases), vocabulary
                        ),
                        "c": _counts(
                            section["code"] + phrase_hits(section["code"], phrases), vocabulary
                        ),
                        "x": section["summary"],
                        # A result lands on a frame section only if no other matches.
                        "f": int(number > 0 and section["heading"] in frame),
                    }
                    for number, section in enumerate(sections)
                ],
            }
        )
    for key in phrases:  # a phrase only a heading holds still needs its id
        vocabulary.setdefault(key, len(vocabulary))
    return {
        "vocabulary": sorted(vocabulary, key=vocabulary.__getitem__),
        "synonyms": synonyms,
        "pages": pages,
    }


def _write_search_data(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or app.builder.name != "html":
        return
    data = json.dumps(search_data(app), ensure_ascii=False, separators=(",", ":"))
    (Path(app.outdir) / DATA_FILE).write_text(f"SiteSearch.setData({data});\n", encoding="utf8")


def setup(app: Sphinx) -> dict:
    app.connect("env-updated", _check_reader_questions)
    app.connect("build-finished", _write_search_data)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
