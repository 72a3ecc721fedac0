"""Sphinx configuration for "Autograd, explained".

Build from the repository root with ``sphinx-build -c . docs _build/html``; the
Makefile does (``make html``). Paths here are relative to this file.
"""

import importlib.metadata
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).parent.resolve()
SNIPPETS = ROOT / "snippets"

# Pages import the oracle helpers and examples from snippets/; their kernels
# inherit this environment from the build.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(SNIPPETS), os.environ.get("PYTHONPATH")])
)
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

# The theme's pygments styles call logging.basicConfig(level=INFO) on import,
# which would print every library's INFO lines into the build log. Configuring
# the root logger first makes that call a no-op; warnings still show.
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
sys.path.insert(0, str(SNIPPETS))  # for {doctest} blocks, which run in this process

# -- Project information -----------------------------------------------------------

project = "Autograd, explained"
author = "the Autograd, explained authors"
copyright = "2026, the Autograd, explained authors"

# -- General configuration ---------------------------------------------------------

extensions = [
    # First, so that on a clean build the kernel server's imports overlap the rest.
    "fork_kernels",  # docs/_ext: pages run in kernels forked from a warm server
    "myst_nb",
    "sphinx.ext.doctest",
    "sphinx_copybutton",
    "sphinx_togglebutton",
    "executed_pages",  # docs/_ext: cache keys that see snippets and torch
]
exclude_patterns = ["_ext", "**/.ipynb_checkpoints"]
executed_pages_snippets_dir = str(SNIPPETS)

# -- Options for MyST ----------------------------------------------------------------

myst_enable_extensions = [
    "amsmath",  # aligned equations for the chain rule
    "colon_fence",  # ::: fences for admonitions and exercises
    "deflist",
    "dollarmath",  # $...$ and $$...$$ beside the code that computes them
    "substitution",  # {{ torch_version }}: read from the build, never typed
]
myst_substitutions = {"torch_version": importlib.metadata.version("torch")}
myst_heading_anchors = 3  # `[text](#slug)` links to headings

# -- Options for execution (myst-nb) ------------------------------------------------

# Every page executes at build time. "cache" re-executes a page only when its
# code, a snippet it imports or the installed packages change (see _ext).
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "_build" / ".jupyter_cache")
nb_execution_timeout = 60  # seconds per cell; no page here needs more than a few
nb_execution_raise_on_error = False  # report every failing page, not only the first
nb_execution_show_tb = True  # put the failing cell's traceback in the build log
nb_merge_streams = True  # one output block per cell, not one per print

# -- Options for doctest -------------------------------------------------------------

doctest_global_setup = "import torch"
doctest_test_doctest_blocks = ""  # only the explicit {doctest} directives

# -- Options for HTML output ---------------------------------------------------------

html_theme = "furo"
html_title = "Autograd, explained"
html_static_path = ["docs/_static"]
html_css_files = ["site.css"]
html_copy_source = True  # "view source" of each page
html_last_updated_fmt = None

# Copy only what a reader would type: no prompts, no outputs.
copybutton_exclude = ".linenos, .gp, .go"
