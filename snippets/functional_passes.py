"""How many reverse passes ``torch.autograd.functional``'s jvp, hvp and vhp run.

Each reverse pass the engine runs is one call of ``torch.autograd.grad`` (which
``functional._autograd_grad`` calls, and skips when what it would differentiate
has no graph); counting those calls counts the passes. ``jvp`` runs two (the
double-backward trick: a first pass builds Jᵀv for a dummy v with
``create_graph=True``, a second differentiates it with respect to v), ``hvp``
three (the gradient, then the trick on it) and ``vhp`` two; where the scalar is
linear with coefficients that do not require grad its gradient has no graph, and
``hvp`` and ``vhp`` run one each; with coefficients that do (a trainable
``nn.Linear``'s weight) the gradient carries a graph through them and they run two
each; ``jvp`` of a linear map still runs two (Jᵀv depends on the dummy v).

Run this file to check the counts over the maps of ``families.vector_maps``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import functional


def reverse_passes(call: Callable[[], object]) -> int:
    """How many reverse passes ``call()`` runs: calls of ``torch.autograd.grad``."""
    original, passes = torch.autograd.grad, []

    def counting(*args, **kwargs):
        passes.append(1)
        return original(*args, **kwargs)

    torch.autograd.grad = counting
    try:
        call()
    finally:
        torch.autograd.grad = original
    return len(passes)


SCALARS = ("(fn(x) ** 2).sum()", "(w * x).sum(), linear",
           "(w * x).sum(), linear, w requiring grad", "linear(x).sum(), a trainable nn.Linear")
"""What hvp and vhp differentiate; with a linear scalar, jvp differentiates the
linear map itself, so every count of those kinds is of a linear f."""


def passes_counted(fn, scalar_kind: str = SCALARS[0]) -> tuple[int, int, int]:
    """The reverse passes of functional.jvp of ``fn``, and of functional.hvp and vhp of
    the scalar ``(fn(x) ** 2).sum()``; or, for a linear kind, of functional.jvp of
    the linear ``w * x`` (``w`` requiring grad or not) or trainable ``nn.Linear`` and
    of hvp and vhp of its sum; at fn's point along a second point."""
    at, direction_u, w = fn.point(), fn.point(seed=1), fn.point(seed=2)
    if scalar_kind == SCALARS[0]:
        vector, scalar = fn, lambda t: (fn(t) ** 2).sum()  # noqa: E731
    elif scalar_kind == SCALARS[3]:
        vector = torch.nn.Linear(at.shape[-1], 2, dtype=at.dtype)
        scalar = lambda t: vector(t).sum()  # noqa: E731
    else:
        w.requires_grad_(scalar_kind == SCALARS[2])
        vector, scalar = (lambda t: w * t), (lambda t: (w * t).sum())  # noqa: E731
    return (reverse_passes(lambda: functional.jvp(vector, at, direction_u)),
            reverse_passes(lambda: functional.hvp(scalar, at, direction_u)),
            reverse_passes(lambda: functional.vhp(scalar, at, direction_u)))


def scalar_kinds():
    """Strategy of the scalar hvp and vhp differentiate, named for readers."""
    from families import labelled
    from hypothesis import strategies as st

    return labelled(st.sampled_from(SCALARS),
                    "fn and the scalar (fn(x) ** 2).sum(), or a linear w * x (w requiring grad "
                    "or not) or trainable nn.Linear, and its sum")


def passes_are_as_stated(fn, scalar_kind: str = SCALARS[0]) -> None:
    """functional.jvp runs two reverse passes, for a linear f too; hvp three and vhp
    two, or one each for a linear scalar whose coefficients do not require grad, two
    each if they do."""
    counted = passes_counted(fn, scalar_kind)
    stated = {SCALARS[0]: (2, 3, 2), SCALARS[1]: (2, 1, 1)}.get(scalar_kind, (2, 2, 2))
    assert counted == stated, f"{fn}, {scalar_kind}: jvp, hvp, vhp ran {counted} reverse passes"


def main() -> None:
    from families import vector_maps
    from oracle import check_property

    check_property(passes_are_as_stated, vector_maps(), scalar_kinds(),
                   claim="functional.jvp runs two reverse passes, hvp three and vhp two")
    print("✓ functional.jvp runs two reverse passes, linear or not; hvp three and vhp two "
          "(one each if linear with coefficients not requiring grad, else two)")


if __name__ == "__main__":
    main()
