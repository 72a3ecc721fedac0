"""Nothing re-read without cause: the saved environment keeps the configuration
as the next build will compare it.

Sphinx decides whether a rebuild's configuration changed by comparing the one
saved with the environment against the new one, right after ``config-inited``.
But it saves the live configuration, after the HTML builder and the extensions
have extended it at builder-inited (sphinx-copybutton and sphinx-togglebutton
add their folders to ``html_static_path``, the builder writes a priority into
each ``html_css_files`` and ``html_js_files`` entry, myst-parser fills
``mathjax4_config``, furo changes defaults). Every rebuild then reported "The
configuration has changed (5 options: ...)", and a change to an ``env`` value
made that way would re-read every page each time.

So the configuration is copied as it stands once every ``config-inited`` handler
has run, the state the next build compares, and that copy is what the
environment saves (``_compat.save_environment_with_config``). The live
configuration is untouched: this build still writes with the extended values.
"""

from __future__ import annotations

import pickle

from sphinx.application import Sphinx
from sphinx.config import Config

from autograd_docs import _compat

# The attribute of the live configuration holding its copy as compared. Config's
# own pickling leaves out names starting with "_", so the copy never nests.
AS_COMPARED = "_autograd_docs_as_compared"


def _copy_as_compared(app: Sphinx, config: Config) -> None:
    # Config's own pickling, so the copy holds what a saved one would (values
    # that cannot be pickled are left out, as Sphinx leaves them out).
    object.__setattr__(config, AS_COMPARED, pickle.loads(pickle.dumps(config)))


def _config_to_save(config: Config) -> Config | None:
    return getattr(config, AS_COMPARED, None)


def setup(app: Sphinx) -> dict:
    # Last of all config-inited handlers (Sphinx's own run at 800).
    app.connect("config-inited", _copy_as_compared, priority=10_000)
    _compat.save_environment_with_config(_config_to_save)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
