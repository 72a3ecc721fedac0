"""The engine's configuration: what ``conf.py`` (or ``-D``) may set, registered
here only, read once at ``config-inited`` into one checked ``build_state.Settings``
(``settings.of(app)``).

* ``autograd_docs_snippets_dir``: the folder of the modules pages import (the
  oracle's checks, examples). A page's process finds them on its path (the page
  runner's environment puts the folder on ``PYTHONPATH``); cache keys follow a
  page's imports into it. Relative to the folder of ``conf.py``.
* ``autograd_docs_server_idle``: the seconds the fork server waits for the next
  build (600; 0: it ends with the build). ``AUTOGRAD_DOCS_SERVER_IDLE`` wins over
  it for one build (``make test`` sets 0).

A value that cannot be used stops the build with a ``ConfigError`` that says
which value, what is wrong and what to write.
"""

from __future__ import annotations

import os
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

from autograd_docs import build_state
from autograd_docs.build_state import Settings

SNIPPETS = "autograd_docs_snippets_dir"
IDLE = "autograd_docs_server_idle"
IDLE_DEFAULT = 600.0
IDLE_SWITCH = "AUTOGRAD_DOCS_SERVER_IDLE"  # overrides it for one build; 0: no warm server
IDLE_MAX = 86400


def server_idle(configured: object) -> float:
    """The environment's override, else ``configured``; checked."""
    raw = os.environ.get(IDLE_SWITCH) or configured
    try:
        idle = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        idle = -1.0
    if not 0 <= idle <= IDLE_MAX:
        where = IDLE_SWITCH if os.environ.get(IDLE_SWITCH) else f"conf.py: {IDLE}"
        raise ConfigError(
            f"{where} = {raw!r}: give the seconds the fork server waits "
            f"for the next build, from 0 (it ends with the build) to {IDLE_MAX}"
        )
    return idle


def _read(app: Sphinx, config: Config) -> None:
    snippets = Path(app.confdir, config[SNIPPETS]).resolve()
    if not snippets.is_dir():
        raise ConfigError(
            f"conf.py: {SNIPPETS} = {config[SNIPPETS]!r} is no folder "
            f"({snippets}): name the folder of the modules pages import"
        )
    build_state.of(app).settings = Settings(snippets, server_idle(config[IDLE]))


def of(app: Sphinx) -> Settings:
    settings = build_state.of(app).settings
    assert settings is not None, "read at config-inited, before any other part asks"
    return settings


def setup(app: Sphinx) -> dict:
    app.add_config_value(SNIPPETS, "snippets", "env", str)
    # Not an "env" value: how long a server waits changes no page.
    app.add_config_value(IDLE, IDLE_DEFAULT, "", (int, float))
    # First of the config-inited handlers: the other parts read what it checked.
    app.connect("config-inited", _read, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
