"""How every hook in this package replaces an upstream function, class or module."""

from __future__ import annotations

from collections.abc import Callable

ORIGINAL = "_autograd_docs_original"  # on a replacement: the function it replaced


def wrap(owner: object, name: str, wrapper: Callable) -> None:
    """Set ``owner.<name>`` to ``wrapper(original)``, ``original`` being upstream's
    own function: each build in a process wraps it afresh, never an earlier
    build's replacement (a second build would otherwise run both)."""
    original = getattr(owner, name)
    original = getattr(original, ORIGINAL, original)
    replacement = wrapper(original)
    setattr(replacement, ORIGINAL, original)
    setattr(owner, name, replacement)
