"""What a build keeps in its doctree folder for the next build to take again.

A record is a JSON file of entries under rules: a digest of everything the
entries depend on beyond their own keys (the code that made them, the packages).
A build takes the entries only under the same rules. A file it cannot read is
said (one info line) and made afresh; entries kept under other rules are dropped
without a word. It is written whole or not at all: into a file of this process's
own, then renamed over the last, so overlapping or interrupted builds leave one
whole record; and only when it holds other entries than the build took. ``make clean`` removes it with the rest of ``_build``.

Two parts keep one: ``html/search.py`` (each page's search facts) and
``html/svg_math.py`` (each equation's SVG).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


class KeptRecord:
    """The record in ``path``: its ``entries`` (empty unless kept under ``rules``),
    a mapping stored under the key ``name``; ``what`` says what is made afresh
    when the file cannot be read."""

    def __init__(self, path: Path, rules: str, name: str, what: str) -> None:
        self.path, self.rules, self.name = path, rules, name
        self.entries: dict = {}
        self.taken = False  # whether the file held entries under these rules
        self._as_taken: dict | None = None  # what the entries were when taken
        try:
            kept = json.loads(path.read_text(encoding="utf8"))
            if not isinstance(kept, dict) or not isinstance(kept.get(name), dict):
                raise ValueError(f"not a record of {name}")
            if kept.get("rules") == rules:
                self.entries, self.taken = kept[name], True
                self._as_taken = dict(self.entries)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as error:
            logger.info(f"{path} unreadable ({error}): {what} made afresh")

    def save(self, entries: dict) -> None:
        """Keep ``entries`` (under this record's rules) for the next build, unless
        they are what was taken."""
        if entries == self._as_taken:
            return
        partial = self.path.with_suffix(f".{os.getpid()}.partial")  # builds may overlap
        partial.write_text(json.dumps({"rules": self.rules, self.name: entries}), encoding="utf8")
        os.replace(partial, self.path)
