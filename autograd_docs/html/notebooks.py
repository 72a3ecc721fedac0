"""Every executed page can be downloaded as a notebook that runs where readers run it.

myst-nb writes each page's notebook to ``<builddir>/jupyter_execute`` (with its
outputs, also on a cache hit: ``autograd_docs.execution`` sees to that). This
extension copies those notebooks into the site beside their pages
(``tutorial/page.html`` gets ``tutorial/page.ipynb``) and gives the page template a
``notebook_download`` link, shown next to furo's "view source" button
(docs/_templates/components/view-this-page.html).

A reader's Jupyter runs in an empty folder with no ``snippets/`` on its path and
only torch, numpy and matplotlib installed, so the copy opens on the page's title
and introduction and carries nothing of the build: it leaves out the cells a page
hides with ``remove-cell`` (the build's oracle checks), keeps a figure the page
shows without its code as the image alone, shows a cell that needs the build with
what it printed instead of running it, and defines what the visible cells import
from ``snippets/`` in one collapsed cell (``helper_cell``: only what they use).

Jupyter and Colab render plain Markdown, not MyST: every Markdown cell is
rewritten by ``plain_markdown`` (roles become links to the site, labels and
comments go, admonitions become blockquotes). After the introduction a cell says
which torch and Python made the outputs and when (``Provenance``: the commit's
time, not the clock, so builds stay byte-identical), and the next one prints a
line when the reader's torch is another.
"""

from __future__ import annotations

import ast
import copy
import datetime
import importlib.metadata
import json
import platform
import re
from dataclasses import dataclass, fields
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from autograd_docs._compat import OUTPUT_FOLDER, intersphinx_urls, myst_config
from autograd_docs.execution import cache_key
from autograd_docs.execution.checks import HIDDEN_CHECK  # the tag of the build's own checks
from autograd_docs.html import plain_markdown as plain
from autograd_docs.html import repository
from autograd_docs.html.helper_cell import Helpers, distributions_asked_about, reader_has
from autograd_docs.kept_record import KeptRecord, source_digest
from autograd_docs.kernels.environment import source_date_epoch

PROVENANCE = "provenance"  # the tag of the cells after the introduction, and the metadata key
HELPERS = "helpers"  # the tag of the cell of the site's helpers
# In the doctrees folder: per page, a digest of what its reader copy was made from.
MADE_FROM = "reader-copies.json"  # a KeptRecord: each page's copies, what they were made from
_THIS_MODULE = source_digest(__file__)


@dataclass(frozen=True)
class Provenance:
    """What made a notebook's outputs: the build's torch and Python, and when."""

    torch: str
    python: str
    built: str  # the commit's date (or SOURCE_DATE_EPOCH's), as YYYY-MM-DD

    @classmethod
    def of_this_build(cls, repository: Path) -> Provenance:
        epoch = int(source_date_epoch(repository))
        return cls(
            torch=importlib.metadata.version("torch"),
            python=platform.python_version(),
            built=datetime.datetime.fromtimestamp(epoch, datetime.UTC).date().isoformat(),
        )

    def cells(self) -> list[nbformat.NotebookNode]:
        torch = self.torch.split("+")[0]
        note = nbformat.v4.new_markdown_cell(
            f"The outputs in this notebook were made with torch {self.torch} on "
            f"Python {self.python}, by the site's build of {self.built}. The next "
            "cell prints a line if your torch is another version."
        )
        check = nbformat.v4.new_code_cell(
            "import torch\n\n"
            f'if torch.__version__.split("+")[0] != "{torch}":\n'
            f'    print(f"outputs were made with torch {torch}; you have '
            '{torch.__version__}: some outputs may differ")'
        )
        for cell in (note, check):
            cell.metadata["tags"] = [PROVENANCE]
        return [note, check]


def glued(notebook: nbformat.NotebookNode) -> dict[str, str]:
    """What the page's ``glue`` calls stored, by name: the text ``{glue}`` shows."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name and "text/plain" in output.get("data", {}):
                values[name] = output["data"]["text/plain"]
    return values


def reader_notebook(
    executed: nbformat.NotebookNode,
    snippets_dir: Path,
    links: plain.Links | None = None,
    md=None,
    provenance: Provenance | None = None,
) -> nbformat.NotebookNode:
    """A copy of ``executed`` that runs top to bottom outside this repository.

    It opens on the page's title and introduction (the Markdown before the first
    code). Then come the provenance cells, if ``provenance`` is given, and the
    one cell of the site's helpers the visible cells import (``helper_cell``),
    just before the first of them. A cell the page shows without its code keeps
    its outputs only (``_outputs_as_markdown``), unless a later cell uses what it
    binds; a cell that needs the build itself is shown with what it printed, not
    run. With ``links`` and ``md`` the Markdown is plain Markdown.
    """
    notebook = copy.deepcopy(executed)
    if links is not None:
        links.glue = glued(notebook)
    notebook.cells = [
        cell for cell in notebook.cells if HIDDEN_CHECK not in cell.metadata.get("tags", [])
    ]
    # What only the build reads: line numbers of its source, and search's front matter.
    for key in ("source_map", "search", "search_questions"):
        notebook.metadata.pop(key, None)

    def plain_text(text: str) -> str:
        return plain.plain_markdown(text, md, links) if links and md else text

    helpers = Helpers(snippets_dir)
    only_outputs = _shown_without_code(notebook.cells)
    cells, first_code, first_helper_use = [], None, None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            cell.source = plain_text(cell.source)
            if cell.source.strip():
                cells.append(cell)
            continue
        first_code = len(cells) if first_code is None else first_code
        tags = cell.metadata.get("tags", [])
        if index in only_outputs:
            shown = _outputs_as_markdown(cell, plain_text)
            cells += [shown] if shown.source else []
            continue
        imports = _imports(cell.source)
        if helpers.lacking([(module, names) for module, names, _ in imports]):
            lacking = next(m for m, _, _ in imports if not reader_has(m, jupyter=True))
            cells.append(_outputs_as_markdown(cell, plain_text, needs=f"`{lacking}`"))
            continue
        if asked := distributions_asked_about(cell.source):
            cells.append(
                _outputs_as_markdown(
                    cell, plain_text, needs=", ".join(f"`{name}`" for name in asked)
                )
            )
            continue
        shipped = [lines for module, _, lines in imports if helpers.is_snippet(module)]
        if shipped:
            first_helper_use = len(cells) if first_helper_use is None else first_helper_use
            cell.source = _without_lines(cell.source, shipped)
        _hide_as_the_page_does(cell, tags)
        if cell.source.strip() or cell.outputs:
            cells.append(cell)
    if first_helper_use is not None:
        cells.insert(first_helper_use, _helper_cell(helpers))
    if provenance is not None:
        at = len(cells) if first_code is None else first_code  # a page without code: last
        cells[at:at] = provenance.cells()
        notebook.metadata[PROVENANCE] = {
            "torch": provenance.torch,
            "python": provenance.python,
            "built": provenance.built,
        }
    notebook.cells = cells
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: the same bytes on every build
    return notebook


def _shown_without_code(cells: list[nbformat.NotebookNode]) -> set[int]:
    """The code cells whose code the page does not show (``hide-input``,
    ``remove-input``) and whose names no later cell that runs reads: the download
    keeps only what they showed. Decided from the last cell back, as a liveness
    analysis: a name a cell binds at its top level is not read from before it."""
    kept: set[int] = set()
    read_later: set[str] = set()
    for index in reversed(range(len(cells))):
        cell = cells[index]
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        if {"remove-input", "hide-input"} & tags and not cell_names(cell, ast.Store) & read_later:
            kept.add(index)
        else:
            read_later = _read_before(cell, read_later)
    return kept


def _read_before(cell: nbformat.NotebookNode, read_after: set[str]) -> set[str]:
    """The names read after the start of ``cell`` before being bound again, given
    those read after it: statement by statement from its end, a name bound at the
    top level whatever happens (not in a loop or a branch) is not read from
    before that statement."""
    tree = _parsed(cell.source)
    if tree is None:
        return read_after | cell_names(cell, ast.Load)
    live = set(read_after)
    for node in reversed(tree.body):
        bound: set[str] = set()
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {node.name}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
        read = {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        live = (live - bound) | read
    return live


def _parsed(source: str) -> ast.Module | None:
    """A code cell's source as Python, its IPython magics read as ``pass``."""
    lines = [
        "pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def cell_names(cell: nbformat.NotebookNode, context: type) -> set[str]:
    """The names a code cell reads (``ast.Load``, anywhere) or binds in the
    notebook's namespace (``ast.Store``: not inside a function, class or
    comprehension)."""
    tree = _parsed(cell.source)
    if tree is None:
        return set()
    if context is ast.Load:
        return {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
    found: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            continue
        if isinstance(
            node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        pending += ast.iter_child_nodes(node)
    return found


def _imports(source: str) -> list[tuple[str, list[str], range]]:
    """Each module a cell imports at its top level: its name, the names taken
    from it (``[]`` for ``import module``), and the statement's lines (from 0)."""
    tree = _parsed(source)
    found: list[tuple[str, list[str], range]] = []
    for node in tree.body if tree else []:
        lines = range(node.lineno - 1, node.end_lineno or node.lineno)
        if isinstance(node, ast.Import):
            found += [(alias.name, [], lines) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, [alias.name for alias in node.names], lines))
    return found


def _without_lines(source: str, dropped: list[range]) -> str:
    """``source`` without the given lines, and without the blank lines that then lead it."""
    gone = {number for lines in dropped for number in lines}
    kept = [line for number, line in enumerate(source.splitlines()) if number not in gone]
    while kept and not kept[0].strip():
        kept.pop(0)
    return "\n".join(kept)


def _hide_as_the_page_does(cell: nbformat.NotebookNode, tags: list[str]) -> None:
    """Collapse in Jupyter what the page hides behind a "Show" button."""
    hidden = {}
    if {"hide-input", "hide-cell", "remove-input"} & set(tags):
        hidden["source_hidden"] = True
    if {"hide-output", "hide-cell"} & set(tags):
        hidden["outputs_hidden"] = True
    if hidden:
        cell.metadata["jupyter"] = hidden


def _helper_cell(helpers: Helpers) -> nbformat.NotebookNode:
    """The one cell of helpers: collapsed in Jupyter, a form in Colab."""
    cell = nbformat.v4.new_code_cell(helpers.cell_source())
    cell.metadata.update(
        {"jupyter": {"source_hidden": True}, "cellView": "form", "tags": [HELPERS]}
    )
    return cell


def _fenced(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _outputs_as_markdown(
    cell: nbformat.NotebookNode, plain_text, needs: str | None = None
) -> nbformat.NotebookNode:
    """A code cell as Markdown: what it showed (a figure as an attached image, with
    the page's alt text and caption), after its code if it ``needs`` a module a
    reader does not have, said in a sentence."""
    mystnb = cell.metadata.get("mystnb", {})
    alt = re.sub(r"[\[\]\n]", " ", mystnb.get("image", {}).get("alt", "A figure"))
    parts: list[str] = []
    attachments: dict[str, dict[str, str]] = {}
    if needs is not None:
        parts += [
            f"This cell needs `{needs}`, which only the site's build has, so a "
            "reader's Python cannot run it. Its code, and what it printed when "
            "the site was built:",
            _fenced(cell.source, "python"),
        ]
    for output in cell.get("outputs", []):
        kind, data = output["output_type"], output.get("data", {})
        if kind == "stream":
            parts.append(_fenced(output["text"], "text"))
        elif kind == "error":
            parts.append(_fenced(f"{output['ename']}: {output['evalue']}", "text"))
        elif "image/png" in data:
            name = f"figure-{len(attachments)}.png"
            attachments[name] = {"image/png": data["image/png"]}
            parts.append(f"![{alt}](attachment:{name})")
        elif "text/markdown" in data:
            parts.append(plain_text(data["text/markdown"]))
        elif "text/plain" in data:
            parts.append(_fenced(data["text/plain"], "text"))
    if caption := mystnb.get("figure", {}).get("caption"):
        parts.append(f"*{plain_text(caption).strip()}*")
    markdown = nbformat.v4.new_markdown_cell("\n\n".join(parts))
    if attachments:
        markdown["attachments"] = attachments
    return markdown


ATTACHED_IMAGE = re.compile(r"!\[([^\]]*)\]\(attachment:[^)]*\)")  # a figure kept as its image
SHOW = '''def show_value(value):
    """Print what Jupyter shows below a cell: the value of its last line."""
    if value is not None:
        print(repr(value))'''


def script_code(cell: nbformat.NotebookNode) -> str:
    """A code cell's source as plain Python that prints what the cell shows.

    IPython's magics become comments, the last line's value (unless it is a
    ``print``) is passed to ``show_value``, and a cell tagged
    ``raises-exception`` prints its error instead of stopping the script.
    """
    source = cell.source
    lines = [
        f"# {line}  (IPython only)" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    ]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        tree = None
    last = tree.body[-1] if tree and tree.body else None
    if isinstance(last, ast.Expr) and last.col_offset == 0 and not _is_print(last.value):
        assert last.end_lineno is not None  # ast.parse gives every statement its end
        if not lines[last.end_lineno - 1].rstrip().endswith(";"):
            start, end = last.lineno - 1, last.end_lineno
            lines[start:end] = ["show_value((", *["    " + line for line in lines[start:end]], "))"]
    code = "\n".join(lines)
    if "raises-exception" in cell.metadata.get("tags", []):
        code = (
            "try:\n"
            + "\n".join(f"    {line}" if line else "" for line in lines)
            + "\nexcept Exception as error:  # the page shows this error\n"
            '    print(f"{type(error).__name__}: {error}")'
        )
    return code


def _is_print(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"


def reader_script(notebook: nbformat.NotebookNode) -> str:
    """The reader notebook as a Python script in percent format (jupytext's, VS Code's):
    ``# %%`` before each code cell, the Markdown as comments under ``# %% [markdown]``."""
    parts = []
    codes = [script_code(cell) for cell in notebook.cells if cell.cell_type == "code"]
    show = any("show_value(" in code for code in codes)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text = ATTACHED_IMAGE.sub(r"(figure: \1)", cell.source)
            parts.append(
                "# %% [markdown]\n" + "\n".join(f"# {line}".rstrip() for line in text.splitlines())
            )
        elif cell.cell_type == "code":
            if show:  # after the title and introduction, before the first code
                parts.append("# %%\n" + SHOW)
                show = False
            parts.append("# %%\n" + script_code(cell))
    return "\n\n".join(parts) + "\n"


def link_tables(app: Sphinx) -> dict[str, dict]:
    """What every page's roles can name: the site's terms, labels, page titles,
    intersphinx names and substitutions (``plain.Links``' dictionaries)."""
    env = app.env
    std = env.domains.standard_domain
    terms = {
        plain.normal(name): (doc, anchor)
        for (kind, name), (doc, anchor) in std.objects.items()
        if kind == "term"
    }
    labels = {name: (doc, anchor, title) for name, (doc, anchor, title) in std.labels.items()}
    for name, (doc, anchor) in std.anonlabels.items():
        labels.setdefault(name, (doc, anchor, ""))
    return {
        "terms": terms,
        "labels": labels,
        "titles": {doc: title.astext() for doc, title in env.titles.items()},
        "api": intersphinx_urls(env),
        "substitutions": {k: str(v) for k, v in app.config.myst_substitutions.items()},
    }


def site_links(app: Sphinx, docname: str, tables: dict[str, dict] | None = None) -> plain.Links:
    """Where the roles of ``docname``'s Markdown point: the pages of this site.

    Absolute addresses under ``html_baseurl`` (the site's address, conf.py) when
    it is set, else links relative to the page the notebook sits beside.
    """
    base = app.config.html_baseurl

    def url(target: str, anchor: str) -> str:
        page = f"{target}.html" + (f"#{anchor}" if anchor else "")
        if base:
            return base.rstrip("/") + "/" + page
        depth = docname.count("/")
        return "../" * depth + page

    return plain.Links(url=url, docname=docname, **(tables or link_tables(app)))


def _executed_notebook(app: Sphinx, docname: str) -> Path:
    return Path(app.outdir).parent / OUTPUT_FOLDER / f"{docname}.ipynb"


def _add_link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is not None and _executed_notebook(app, pagename).is_file():
        context["notebook_download"] = context["pathto"](f"{pagename}.ipynb", 1)
        context["script_download"] = context["pathto"](f"{pagename}.py", 1)
        if found := repository.of(app):
            context["colab_url"] = found.colab_url(f"{pagename}.ipynb")


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` holds it already (a no-change build writes nothing)."""
    if path.is_file() and path.read_text(encoding="utf8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf8")


def _stable(value) -> object:
    """JSON for what json cannot write: a set sorted (its order changes from one
    run to the next), anything else as its text."""
    return sorted(value, key=str) if isinstance(value, (set, frozenset)) else str(value)


def _made_from(app: Sphinx, tables: dict, md_config, provenance: Provenance, snippets: Path) -> str:
    """What every page's reader copy is made from besides the page's own executed
    notebook: this package's code, the snippets, the site's links, MyST's options
    and the provenance."""
    files = [*cache_key.engine_files(), *sorted(snippets.glob("*.py"))]
    options = {field.name: getattr(md_config, field.name) for field in fields(md_config)}
    return cache_key.digest(
        [
            json.dumps([tables, options], sort_keys=True, default=_stable),
            str(app.config.html_baseurl),
            repr(provenance),
            *(f"{path}:{path.read_text(encoding='utf8')}" for path in files),
        ]
    )


def _copy_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    snippets_dir = Path(app.config.autograd_docs_snippets_dir)
    md_config = myst_config(app)
    md = plain.parser(md_config)
    provenance = Provenance.of_this_build(Path(app.confdir))
    tables = link_tables(app)
    # A page's copy follows other pages' titles and labels, so each is made again
    # whenever anything it is made from changed, and only then (making all 32
    # was 0.23 s of a 2.8 s no-change rebuild).
    made_from = _made_from(app, tables, md_config, provenance, snippets_dir)
    record = KeptRecord(
        Path(app.doctreedir) / MADE_FROM,
        rules=_THIS_MODULE,
        name="copies",
        what="every page's downloads",
    )
    before, now = record.entries, {}
    for docname in sorted(app.env.found_docs):
        notebook = _executed_notebook(app, docname)
        if not notebook.is_file():
            continue
        text = notebook.read_text(encoding="utf8")
        now[docname] = cache_key.digest([made_from, docname, text])
        copies = [Path(app.outdir) / f"{docname}{suffix}" for suffix in (".ipynb", ".py")]
        if before.get(docname) == now[docname] and all(path.is_file() for path in copies):
            continue
        executed = nbformat.reads(text, as_version=4)
        links = site_links(app, docname, tables)
        reader = reader_notebook(executed, snippets_dir, links, md, provenance)
        _write_if_changed(copies[0], nbformat.writes(reader) + "\n")
        _write_if_changed(copies[1], reader_script(reader))
    record.save(now)


def setup(app: Sphinx) -> dict:
    app.setup_extension("autograd_docs.html.repository")
    app.connect("html-page-context", _add_link)
    app.connect("build-finished", _copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
