"""Sphinx configuration for "Autograd, explained".

Build from the repository root with ``sphinx-build -c . docs _build/html``; the
Makefile does (``make html``). Paths here are relative to this file.
"""

import importlib.metadata
import json
import logging
import os
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).parent.resolve()
SNIPPETS = ROOT / "snippets"

# The theme's pygments styles call logging.basicConfig(level=INFO) on import,
# which would print every library's INFO lines into the build log. Configuring
# the root logger first makes that call a no-op; warnings still show.
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")

# -- Project information -----------------------------------------------------------

project = "Autograd, explained"
author = "the Autograd, explained authors"
copyright = "2026, the Autograd, explained authors"

# -- General configuration ---------------------------------------------------------

extensions = [
    # Our own, first: on a clean build the kernel server's imports overlap the rest.
    "autograd_docs",  # the build engine: autograd_docs/__init__.py lists its parts and
    # the five files from here to where a page's cells run
    # Executing and checking pages
    "myst_nb",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",  # links to PyTorch's reference, with ONLINE=1 (below)
    # What readers get
    "sphinx_copybutton",
    "sphinx_togglebutton",
    "sphinxext.opengraph",  # og:title, og:description, og:url on every page
    "notfound.extension",  # 404.html whose links work from any missing URL
]
exclude_patterns = ["**/.ipynb_checkpoints"]
# The modules pages import (the oracle's checks, examples): on every page's path.
autograd_docs_snippets_dir = str(SNIPPETS)

# -- Options for MyST --------------------------------------------------------------

myst_enable_extensions = [
    "amsmath",  # aligned equations for the chain rule
    "colon_fence",  # ::: fences for admonitions and exercises
    "deflist",
    "dollarmath",  # $...$ and $$...$$ beside the code that computes them
    "substitution",  # {{ torch_version }}: read from the build, never typed
]
myst_substitutions = {"torch_version": importlib.metadata.version("torch")}
myst_heading_anchors = 3  # `[text](#slug)` links to headings

# -- Options for execution (myst-nb) -----------------------------------------------

# Every page executes at build time. "cache" re-executes a page only when its
# code, a snippet it imports or the installed packages change (autograd_docs).
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "_build" / ".jupyter_cache")
nb_execution_timeout = 60  # seconds per cell; pages whose checks compile say 180 in their front matter
nb_execution_raise_on_error = False  # report every failing page, not only the first
nb_execution_show_tb = False  # autograd_docs reports a failing cell in one line;
# its full traceback is in _build/html/reports/<page>.err.log
# One output block per cell, not one per print: the engine has nbclient join a
# cell's prints as it runs it (autograd_docs/execution/cache_key.py's
# NBCLIENT_OPTIONS); myst-nb's own merge garbled prints that arrived in two parts.
nb_merge_streams = False
# Each page's cells run in autograd_docs/kernels/page_runner.py, in a process
# forked from a server that imported torch once (kernels/__init__.py starts it).

# -- Options for doctest -----------------------------------------------------------

doctest_global_setup = "import torch"
doctest_path = [str(SNIPPETS)]  # {doctest} blocks run in this process: snippets import
doctest_test_doctest_blocks = ""  # only the explicit {doctest} directives

# -- Options for HTML output -------------------------------------------------------

html_theme = "furo"
html_title = "Autograd, explained"
html_static_path = ["docs/_static"]
html_css_files = ["site.css"]
html_copy_source = True  # "view source" of each page
html_last_updated_fmt = None

# Copy only what a reader would type: no prompts, no outputs.
copybutton_exclude = ".linenos, .gp, .go"

# -- Equations: SVG rendered at build time -----------------------------------------
# autograd_docs/html/svg_math.py hands every equation to MathJax in Node
# (node_modules, made by `npm ci` from package-lock.json) and writes the SVG into
# the page: readers' browsers load no script, font or CDN for math, online,
# offline or from file://.

html_math_renderer = "svgmath"

# -- The site's address, metadata and 404 page -------------------------------------
# The site's address, set here only: OpenGraph tags, sitemap.xml, robots.txt,
# canonical links and the 404 page's links all read html_baseurl. Read the Docs
# and the Pages workflow pass the address they serve the site at; a local build
# uses the default.

html_baseurl = (
    os.environ.get("SITE_URL")
    or os.environ.get("READTHEDOCS_CANONICAL_URL")
    or "https://autograd-explained.readthedocs.io/en/latest/"
)
if not html_baseurl.endswith("/"):
    html_baseurl += "/"

ogp_site_url = html_baseurl
ogp_social_cards = {"enable": False}  # no generated images: one more thing to fetch
# 404.html is served for a missing page at any depth, from wherever the site is
# hosted (/, /en/latest/, a project's /name/ on GitHub Pages, a file). Its links
# are written relative to the site's root, as the root pages' are, and its first
# script finds that root in the address (docs/_templates/page.html) and makes it
# the page's <base>: notfound's absolute links (html_baseurl's path) fail
# wherever the site is served from another path.
notfound_context = {
    "title": "Page not found",
    "body": (
        "<h1>Page not found</h1>\n<p>No page lives at this address. Try the "
        '<a href="index.html">front page</a> or the search box.</p>'
    ),
    # What the site's root holds: the root is the address up to the first of these.
    "site_root_entries": sorted(
        [p.name for p in (ROOT / "docs").iterdir() if p.is_dir() and p.name[0] != "_"]
        + ["_static", "_images", "_sources", "index.html", "search.html", "genindex.html"]
    ),
    "build_prefix": urlparse(html_baseurl).path,
}
NOT_FOUND_HELPERS = ("pathto", "css_tag", "js_tag", "toctree")


def _keep_relative_links(app, pagename, templatename, context, doctree):
    """Before notfound makes the 404 page's links absolute: keep Sphinx's own."""
    if pagename == app.config.notfound_pagename:
        context["_relative"] = {n: context[n] for n in NOT_FOUND_HELPERS if n in context}


def _written_after_the_base(tag):
    """A stylesheet or script tag the 404 page writes once its <base> is set: in
    the HTML, the browser's preload scanner would fetch it, ahead of the base,
    from the missing page's folder."""
    def written(asset) -> str:
        quoted = json.dumps(str(tag(asset))).replace("</", "<\\/")
        return f"<script>document.write({quoted})</script>"
    return written


def _restore_relative_links(app, pagename, templatename, context, doctree):
    if pagename == app.config.notfound_pagename:
        context.update(context.pop("_relative"))
        for name in ("css_tag", "js_tag"):
            context[name] = _written_after_the_base(context[name])


def setup(app):
    app.connect("html-page-context", _keep_relative_links, priority=300)
    app.connect("html-page-context", _restore_relative_links, priority=450)  # after notfound, before favicon_url


html_favicon = "docs/_static/favicon.svg"  # else browsers ask the server for /favicon.ico

# -- Reader features and accessibility ---------------------------------------------

# autograd_docs.html: .ipynb downloads, sitemap.xml, robots.txt, and mends of
# what axe-core finds in extensions' HTML.
templates_path = ["docs/_templates"]  # a notebook download beside "view source"
html_js_files = ["site.js"]  # keyboard access to code and outputs that scroll
# A visible code line wider than a 375 px phone shows (44 characters, 40 in an
# admonition or a list item) fails the build (AuthorError.CODE_TOO_WIDE).

# -- Links to PyTorch's reference ---------------------------------------------------
# API names written as roles, e.g. {py:func}`torch.autograd.grad`, link to
# PyTorch's reference in every build, offline too: intersphinx reads the
# inventory kept in inventories/torch.inv (the names the pages use, checked
# against the installed torch; `make api-inventory` refreshes it) instead of
# fetching PyTorch's. Every name is also looked up in the installed torch
# (autograd_docs/api_roles.py): one that does not import, or is not what its
# role says, fails the build; one the inventory lacks shows as code.
intersphinx_mapping = {
    "torch": ("https://docs.pytorch.org/docs/stable/", str(ROOT / "inventories" / "torch.inv")),
}
