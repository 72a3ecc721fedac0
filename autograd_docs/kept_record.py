"""What a build keeps in its doctree folder for the next build to take again.

A record is a JSON file of entries under rules: a digest of everything the
entries depend on beyond their own keys (the code that made them, the packages).
A build takes the entries only under the same rules. A file it cannot read is
said (one info line) and made afresh; entries kept under other rules are dropped
without a word. It is written whole or not at all: into a file of this process's
own, then renamed over the last, so overlapping or interrupted builds leave one
whole record; and only when its text would change (keys sorted, so an order is
no change).
``make clean`` removes it with the rest of ``_build``.

Four parts keep one: ``html/search.py`` (each page's search facts),
``html/svg_math.py`` (each equation's SVG), ``html/notebooks.py`` (what each
page's downloads were made from) and ``api_roles.py`` (each API name's check
against the installed torch).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def source_digest(module_file: str) -> str:
    """A module's code, for the rules of the entries it makes. Called as the
    module is imported: an edit made during a build must not label entries the
    code that ran made."""
    return hashlib.sha256(Path(module_file).read_bytes()).hexdigest()


class KeptRecord:
    """The record in ``path``: its ``entries`` (empty unless kept under ``rules``),
    a mapping stored under the key ``name``; ``what`` says what is made afresh
    when the file cannot be read."""

    def __init__(self, path: Path, rules: str, name: str, what: str) -> None:
        self.path, self.rules, self.name = path, rules, name
        self.entries: dict = {}
        self._as_read: str | None = None  # the file's text, when its entries were taken
        try:
            text = path.read_text(encoding="utf8")
            kept = json.loads(text)
            if not isinstance(kept, dict) or not isinstance(kept.get(name), dict):
                raise ValueError(f"not a record of {name}")
            if kept.get("rules") == rules:
                self.entries, self._as_read = kept[name], text
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as error:
            logger.info(f"{path} unreadable ({error}): {what} made afresh")

    def save(self, entries: dict) -> None:
        """Keep ``entries`` (under this record's rules) for the next build, unless
        the file already says exactly that. Compared as the text written: entries
        changed in place count as changed."""
        text = json.dumps({"rules": self.rules, self.name: entries}, sort_keys=True)
        if text == self._as_read:
            return
        partial = self.path.with_suffix(f".{os.getpid()}.partial")  # builds may overlap
        partial.write_text(text, encoding="utf8")
        os.replace(partial, self.path)
