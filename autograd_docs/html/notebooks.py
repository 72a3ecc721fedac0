"""Every executed page can be downloaded as a notebook that runs where readers run it.

myst-nb writes each page's notebook to ``<builddir>/jupyter_execute`` (with its
outputs, also on a cache hit: ``autograd_docs.execution`` sees to that). This
extension copies those notebooks into the site beside their pages
(``tutorial/page.html`` gets ``tutorial/page.ipynb``) and gives the page template a
``notebook_download`` link, shown next to furo's "view source" button
(docs/_templates/components/view-this-page.html).

A reader's Jupyter runs in an empty folder with no ``snippets/`` on its path, so
the copy leaves out the cells a page hides with ``remove-cell`` (the build's
oracle checks), and writes every snippet the remaining cells import beside the
notebook, in a ``%%writefile`` cell at the top the reader can read first.

Jupyter and Colab render plain Markdown, not MyST: every Markdown cell is
rewritten by ``plain_markdown`` (roles become links to the site, labels and
comments go, admonitions become blockquotes). The first cell says which torch
and Python made the outputs and when (``Provenance``: the commit's time, not
the clock, so builds stay byte-identical), and the next one prints a line when
the reader's torch is another.
"""

from __future__ import annotations

import ast
import copy
import datetime
import importlib.metadata
import json
import platform
from dataclasses import dataclass, fields
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from autograd_docs._compat import OUTPUT_FOLDER, intersphinx_urls, myst_config
from autograd_docs.execution import cache_key
from autograd_docs.execution.checks import HIDDEN_CHECK  # the tag of the build's own checks
from autograd_docs.html import plain_markdown as plain
from autograd_docs.html import repository
from autograd_docs.kept_record import KeptRecord, source_digest
from autograd_docs.kernels.environment import source_date_epoch

PROVENANCE = "provenance"  # the tag of the first two cells, and the metadata key
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

    With ``links`` and ``md`` its Markdown is plain Markdown; with
    ``provenance`` it starts by saying what made its outputs.
    """
    notebook = copy.deepcopy(executed)
    if links is not None:
        links.glue = glued(notebook)
    notebook.cells = [
        cell for cell in notebook.cells if HIDDEN_CHECK not in cell.metadata.get("tags", [])
    ]
    notebook.metadata.pop("source_map", None)  # line numbers of the build's source
    if links is not None and md is not None:
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                cell.source = plain.plain_markdown(cell.source, md, links)
        notebook.cells = [
            cell for cell in notebook.cells if cell.cell_type != "markdown" or cell.source.strip()
        ]
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    snippets = cache_key.snippets_imported(code, snippets_dir)
    preface = []
    if provenance is not None:
        preface += provenance.cells()
        notebook.metadata[PROVENANCE] = {
            "torch": provenance.torch,
            "python": provenance.python,
            "built": provenance.built,
        }
    if snippets:
        names = ", ".join(f"`{path.name}`" for path in snippets)
        preface += [
            nbformat.v4.new_markdown_cell(
                f"This page imports the site's own helpers ({names}). The next "
                f"{'cell writes it' if len(snippets) == 1 else 'cells write them'} "
                "beside this notebook, so it runs in any folder."
            )
        ]
        preface += [
            nbformat.v4.new_code_cell(f"%%writefile {path.name}\n{path.read_text(encoding='utf8')}")
            for path in snippets
        ]
    notebook.cells = preface + notebook.cells
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: the same bytes on every build
    return notebook


SHOW = '''def show_value(value):
    """Print what Jupyter shows below a cell: the value of its last line."""
    if value is not None:
        print(repr(value))'''


def script_code(cell: nbformat.NotebookNode) -> str:
    """A code cell's source as plain Python that prints what the cell shows.

    IPython's magics become comments, a ``%%writefile`` writes its file beside the
    script, the last line's value is passed to ``show``, and a cell tagged
    ``raises-exception`` prints its error instead of stopping the script.
    """
    source = cell.source
    if source.startswith("%%writefile "):
        first, _, text = source.partition("\n")
        name = first.split()[1]
        return (
            "from pathlib import Path\n\n"
            f'Path(__file__).with_name({name!r}).write_text({text!r}, encoding="utf8")'
        )
    lines = [
        f"# {line}  (IPython only)" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    ]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        tree = None
    last = tree.body[-1] if tree and tree.body else None
    if isinstance(last, ast.Expr) and last.col_offset == 0:
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


def reader_script(notebook: nbformat.NotebookNode) -> str:
    """The reader notebook as a Python script in percent format (jupytext's, VS Code's):
    ``# %%`` before each code cell, the Markdown as comments under ``# %% [markdown]``."""
    parts = []
    codes = [script_code(cell) for cell in notebook.cells if cell.cell_type == "code"]
    if any("show_value(" in code for code in codes):
        parts.append("# %%\n" + SHOW)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            parts.append(
                "# %% [markdown]\n"
                + "\n".join(f"# {line}".rstrip() for line in cell.source.splitlines())
            )
        elif cell.cell_type == "code":
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
