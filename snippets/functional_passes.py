"""How many reverse passes ``torch.autograd.functional``'s jvp, hvp and vhp run.

``torch.autograd.functional`` runs every reverse pass through one helper,
``functional._autograd_grad``; counting its calls counts the passes. ``jvp`` runs
two (the double-backward trick: a first pass builds Jᵀv for a dummy v with
``create_graph=True``, a second differentiates it with respect to v), ``hvp``
three (the gradient, then the trick on it) and ``vhp`` two, whatever the function.

Run this file to check the counts over the maps of ``families.vector_maps``.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.autograd import functional


def reverse_passes(call: Callable[[], object]) -> int:
    """How many reverse passes ``call()`` runs through torch.autograd.functional."""
    original, passes = functional._autograd_grad, []

    def counting(*args, **kwargs):
        passes.append(1)
        return original(*args, **kwargs)

    functional._autograd_grad = counting
    try:
        call()
    finally:
        functional._autograd_grad = original
    return len(passes)


def passes_counted(fn) -> tuple[int, int, int]:
    """The reverse passes of functional.jvp of ``fn``, and of functional.hvp and vhp of
    the scalar ``(fn(x) ** 2).sum()``, at fn's point along a second point."""
    at, direction_u = fn.point(), fn.point(seed=1)
    scalar = lambda t: (fn(t) ** 2).sum()  # noqa: E731
    return (reverse_passes(lambda: functional.jvp(fn, at, direction_u)),
            reverse_passes(lambda: functional.hvp(scalar, at, direction_u)),
            reverse_passes(lambda: functional.vhp(scalar, at, direction_u)))


def passes_are_as_stated(fn) -> None:
    """functional.jvp runs two reverse passes, hvp three and vhp two."""
    counted = passes_counted(fn)
    assert counted == (2, 3, 2), f"{fn}: jvp, hvp, vhp ran {counted} reverse passes"


def main() -> None:
    from families import vector_maps
    from oracle import check_property

    check_property(passes_are_as_stated, vector_maps(),
                   claim="functional.jvp runs two reverse passes, hvp three and vhp two")
    print("✓ functional.jvp runs two reverse passes, hvp three and vhp two, whatever the map")


if __name__ == "__main__":
    main()
