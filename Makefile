# Autograd, explained: build, check and preview the site.
# Every target installs what it needs into .venv first; `make` alone lists them.

PYTHON_FOR_VENV ?= python3
VENV            ?= .venv
PYTHON          := $(VENV)/bin/python
BUILDDIR        ?= _build
# The build's flags, spelled here only (tests and bench run `make html JOBS=2 ...`):
# -n: warn on every broken reference; -W: a warning fails the build;
# --keep-going: report every problem before failing; -j: readers in parallel.
STRICT          := -n -W --keep-going
JOBS            ?= auto
SPHINXOPTS      ?= $(STRICT) -j $(JOBS)
# O: options for one run on top of those, e.g. `make html O=-E` (read every page).
O               ?=
SPHINXBUILD     := $(PYTHON) -m sphinx -c . $(SPHINXOPTS) $(O)
INSTALLED       := $(VENV)/.installed
# Node packages (package-lock.json): MathJax draws the equations at build time,
# axe-core and Lighthouse check the built pages. `npm ci` installs exactly the lock.
NODE_MODULES    := node_modules/.installed

.DEFAULT_GOAL := help
.PHONY: help html test check lint doctest pytest livehtml linkcheck audit bench clean mutants upgrade-check api-inventory claims

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

html: $(INSTALLED) $(NODE_MODULES) ## Build the site into _build/html, executing every changed page
	$(SPHINXBUILD) -b html -d $(BUILDDIR)/doctrees docs $(BUILDDIR)/html
	@echo "Open $(BUILDDIR)/html/index.html"

test: lint html doctest pytest ## Everything CI checks: lint, strict build, doctests, pytest (browser too)
# A one-off run leaves no warm fork server behind (autograd_docs/kernels/warm_server.py).
test: export AUTOGRAD_DOCS_SERVER_IDLE = 0

# The fast tier, before a commit: no build, no browser, no built site needed
# (tests/conftest.py marks every test that builds; pytest-playwright stays off).
check: lint ## Lint, and every test that needs no build and no browser (under a minute)
	$(PYTHON) -m pytest -p no:playwright --ignore tests/browser -m "not build" -q -n 2

lint: $(INSTALLED) ## Check the Python with ruff, the engine with ruff format and mypy, the workflows with zizmor (offline)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check autograd_docs
	$(PYTHON) -m mypy
	$(VENV)/bin/zizmor --offline --quiet .github/workflows/

doctest: $(INSTALLED) ## Run the {doctest} blocks on every page
	$(SPHINXBUILD) -b doctest -d $(BUILDDIR)/doctrees-doctest docs $(BUILDDIR)/doctest

# -n 3 on 2 cores: with Chromium's CPU counted the two cores are busy 98 % of
# the run, and a fourth worker gained nothing (bench/README.md, stop 62);
# --dist loadgroup keeps each xdist_group in one worker.
pytest: $(INSTALLED) $(NODE_MODULES) ## Run the snippets and tests/ (tests/browser: the built site in Chromium)
	$(PYTHON) -m pytest -n 3 --dist loadgroup

# livehtml drops -W: a mistake is reported and the server keeps serving. The fork
# server stays warm for the whole preview (an hour between saves at most) and is
# stopped with it (autograd_docs/kernels/warm_server.py). Each rebuild runs in a
# fork of a process that imported Sphinx once (autograd_docs/devkit/warm_autobuild.py).
livehtml: $(INSTALLED) $(NODE_MODULES) ## Serve the site and rebuild on every edit in docs/ or snippets/
	AUTOGRAD_DOCS_SERVER_IDLE=$${AUTOGRAD_DOCS_SERVER_IDLE:-3600} bash -c 'trap exit INT TERM HUP; \
	  trap "$(PYTHON) -m autograd_docs.kernels stop ." EXIT; \
	  $(PYTHON) -m autograd_docs.devkit.warm_autobuild -c . $(filter-out -W,$(STRICT)) -d $(BUILDDIR)/doctrees \
	  --watch snippets --watch conf.py --ignore "*/.jupyter_cache/*" \
	  --port $${PORT:-8000} docs $(BUILDDIR)/html'

linkcheck: $(INSTALLED) ## Check internal links (external ones too with ONLINE=1)
	$(SPHINXBUILD) -b linkcheck -d $(BUILDDIR)/doctrees-linkcheck \
	  $(if $(ONLINE),,-D linkcheck_ignore='.*://.*') docs $(BUILDDIR)/linkcheck

audit: html ## Lighthouse scores for the landing page and the heaviest page (not part of test)
	$(PYTHON) tools/lighthouse_audit.py $(BUILDDIR)/html

bench: $(INSTALLED) $(NODE_MODULES) ## Time the build against its floor, on a scratch copy (see README)
	$(PYTHON) bench/bench.py $(BENCHOPTS)

claims: html ## List each page's checked sentences and the claims no check quotes; coverage last (see README)
	$(PYTHON) tools/claims.py --doctrees $(BUILDDIR)/doctrees $(if $(PAGE),--page $(PAGE)) $(if $(UNCHECKED),--unchecked)

mutants: $(INSTALLED) $(NODE_MODULES) ## Mutation-test the checks on a scratch copy: SEED=, MUTANTS= per page, PAGE= (see README)
	$(PYTHON) tools/mutants.py --seed $(or $(SEED),0) --per-page $(or $(MUTANTS),3) \
	  $(if $(PAGE),--page $(PAGE)) $(if $(VERBOSE),--verbose)

upgrade-check: $(INSTALLED) $(NODE_MODULES) ## Build a scratch copy against TORCH=<version> in a side venv; report what changed
	$(PYTHON) tools/upgrade_check.py --torch $(or $(TORCH),$(error give the version: make upgrade-check TORCH=2.14.1))

api-inventory: $(INSTALLED) ## Rewrite inventories/torch.inv: where the API names the pages use live in PyTorch's reference
	$(PYTHON) -m autograd_docs.api_inventory

clean: ## Remove the built site and the execution cache, stop the warm fork server (keeps .venv, node_modules)
	-@test ! -x $(PYTHON) || $(PYTHON) -m autograd_docs.kernels stop .
	rm -rf $(BUILDDIR)

# The venv is (re)made whenever requirements.txt changes.
$(INSTALLED): requirements.txt
	@$(PYTHON_FOR_VENV) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed")'
	test -x $(PYTHON) || $(PYTHON_FOR_VENV) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --requirement requirements.txt
	touch $@

# Node packages are (re)installed whenever the lock changes.
$(NODE_MODULES): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 20 or newer (it brings npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@
