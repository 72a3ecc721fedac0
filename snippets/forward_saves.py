"""What forward mode saves for a later backward pass, over modules and plain maps.

Forward-mode AD computes each tangent on the spot and needs nothing saved for it.
But autograd's reverse mode still records whatever the same computation does with
tensors that require grad, dual or not, and each recorded operation saves what its
own backward formula reads. An ``nn.Module``'s parameters require grad by default,
so forward AD through a module records its operations: an ``nn.Linear`` saves two
tensors (its input and the input's tangent: the output's tangent, computed from the
weight, is recorded too), while a bias add ``x + b`` records a node and saves none,
since the backward of an addition reads nothing.

``forward_ad_cases()`` draws the computations the pages' sentences are about, and
the ones that would break a broader sentence: small networks and single
``nn.Linear`` layers (on a row, a batch, or a batch of batches) whose parameters
require grad, a bias-add module whose
parameter requires grad (it saves nothing), a frozen network (nothing requires
grad), and maps on a plain tensor.

- ``saves_nothing_when_nothing_requires_grad``: when nothing in the computation
  requires grad (a plain map, a frozen network, a module under ``torch.no_grad()``
  or given detached parameters through ``torch.func.functional_call``), forward AD
  saves no tensor and computes the same tangent.
- ``records_and_saves_what_backward_needs``: with a parameter that requires grad,
  the output has a ``grad_fn``; an ``nn.Linear`` saves exactly two tensors (its
  input and the input's tangent, flattened to rows), a bias add none, a network at
  least a Linear's two.
  Without one, the output has no ``grad_fn``.

Run this file to check both over the family, and to see two broader sentences
fail: "forward mode saves nothing" on a module whose parameters require grad, and
"forward mode saves tensors exactly when a parameter requires grad" on the bias add.
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD
from families import SEEDS, SIZES, batches, named, seeded, small_networks, vector_maps
from hypothesis import strategies as st


def saved_during(compute):
    """Run compute(); return the tensors autograd saved for a backward pass, and
    what compute returned."""
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        result = compute()
    return saved, result


def primal_and_tangent(f, x, u):
    """f(x) (with its grad_fn, if autograd recorded one) and J u, by forward_ad."""
    with fwAD.dual_level():
        out = fwAD.unpack_dual(f(fwAD.make_dual(x, u)))
        return out.primal, out.tangent


def tangent_of(f, x, u):
    """J u by forward_ad: push the tangent u through f at x."""
    return primal_and_tangent(f, x, u)[1]


class BiasAdd(torch.nn.Module):
    """x + b, b a parameter (requiring grad, as a module's do): autograd records an
    addition, whose backward reads no saved tensor."""

    def __init__(self, features: int, seed: int):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.bias = torch.nn.Parameter(torch.randn(features, dtype=torch.float64,
                                                   generator=generator))
        self.in_features = features

    def forward(self, x):
        return x + self.bias

    def __repr__(self) -> str:
        return f"BiasAdd({self.in_features})"


def _linear(features: int, out: int, bias: bool, seed: int) -> torch.nn.Linear:
    with seeded(seed):
        layer = torch.nn.Linear(features, out, bias=bias, dtype=torch.float64)
    layer.in_features = features
    return layer


KINDS = ("network", "linear", "bias add", "frozen network", "plain map")


@named("small networks, nn.Linear layers, bias adds, frozen networks and plain maps")
@st.composite
def forward_ad_cases(draw):
    """(kind, f, x): kind one of KINDS; f a module or a map; x a batch, or a point,
    that does not require grad. Every module's parameters require grad, as they do
    by default, except the frozen network's."""
    kind = draw(st.sampled_from(KINDS))
    if kind == "plain map":
        f = draw(vector_maps())
        return (kind, f, f.point(draw(SEEDS)))
    if kind in ("network", "frozen network"):
        f = draw(small_networks())
        if kind == "frozen network":
            f.requires_grad_(False)
    elif kind == "linear":
        f = _linear(draw(SIZES), draw(st.integers(1, 4)), draw(st.booleans()), draw(SEEDS))
        rows = draw(batches(features=f.in_features))
        shape = draw(st.sampled_from(["a row", "a batch", "a batch of batches"]))
        return (kind, f, {"a row": rows[0], "a batch": rows,
                          "a batch of batches": torch.stack([rows, -rows])}[shape])
    else:
        f = BiasAdd(draw(SIZES), draw(SEEDS))
    return (kind, f, draw(batches(features=f.in_features)))


def requires_grad_inside(kind, f) -> bool:
    return kind != "plain map" and any(p.requires_grad for p in f.parameters())


def _direction(x):
    return torch.linspace(-1, 1, x.numel(), dtype=x.dtype).reshape(x.shape)


def saves_nothing_when_nothing_requires_grad(kind, f, x) -> bool:
    """Nothing in the computation requires grad (a plain map on a plain tensor, a
    frozen network, or any module under torch.no_grad() or given detached parameters
    through torch.func.functional_call): forward AD saves no tensor, and the tangent
    is the one computed with the parameters as they are."""
    assert not x.requires_grad
    u = _direction(x)
    saved, tangent = saved_during(lambda: tangent_of(f, x, u))
    if not requires_grad_inside(kind, f):
        assert not saved, f"{kind} {f!r}: {len(saved)} saved with nothing requiring grad"
    if kind == "plain map":
        return True
    with torch.no_grad():
        saved_no_grad, tangent_no_grad = saved_during(lambda: tangent_of(f, x, u))
    assert not saved_no_grad, f"{f!r}: {len(saved_no_grad)} saved under no_grad"
    assert torch.allclose(tangent_no_grad, tangent, equal_nan=True), "no_grad changed J u"
    detached = {name: p.detach() for name, p in f.named_parameters()}
    saved_detached, tangent_detached = saved_during(lambda: tangent_of(
        lambda t: torch.func.functional_call(f, detached, (t,)), x, u))
    assert not saved_detached, f"{f!r}: {len(saved_detached)} saved with detached parameters"
    assert torch.allclose(tangent_detached, tangent, equal_nan=True), "detaching changed J u"
    return True


def records_and_saves_what_backward_needs(kind, f, x) -> bool:
    """With a parameter that requires grad, autograd records the module's operations
    (the output has a grad_fn) and saves what their backward reads: an nn.Linear
    exactly two tensors, its input and the input's tangent (flattened to rows when
    the input is not a batch: the tangent's own computation is recorded too, since it
    reads the weight); a bias add none; a network at
    least its first Linear's two. With nothing requiring grad, nothing is recorded."""
    u = _direction(x)
    saved, (out, _tangent) = saved_during(lambda: primal_and_tangent(f, x, u))
    recorded = out.grad_fn is not None
    assert recorded == requires_grad_inside(kind, f), (
        f"{kind} {f!r}: grad_fn {out.grad_fn}, a parameter requires grad: "
        f"{requires_grad_inside(kind, f)}")
    if kind == "linear":
        assert len(saved) == 2 and _tangent.grad_fn is not None, (
            f"{f!r} saved {len(saved)}; the output's tangent has grad_fn {_tangent.grad_fn}")
        assert all(t.numel() == x.numel() for t in saved) and \
            torch.equal(saved[0].reshape(x.shape), x) and torch.equal(saved[1].reshape(u.shape), u), (
            f"{f!r} saved {[tuple(t.shape) for t in saved]}, not its input and the input's tangent")
    elif kind == "bias add":
        assert not saved, f"{f!r} saved {len(saved)}"
    elif kind == "network":
        assert len(saved) >= 2, f"{f!r} saved {len(saved)}"
    return True


def forward_mode_saves_nothing(kind, f, x) -> bool:
    """The broad sentence the pages correct: forward AD saves nothing, whatever f."""
    return not saved_during(lambda: tangent_of(f, x, _direction(x)))[0]


def saves_exactly_when_a_parameter_requires_grad(kind, f, x) -> bool:
    """Another overbroad sentence: forward AD saves tensors exactly when a parameter
    requires grad. The bias add records a node and saves nothing."""
    saved = saved_during(lambda: tangent_of(f, x, _direction(x)))[0]
    return bool(saved) == requires_grad_inside(kind, f)


def main() -> None:
    from oracle import ClaimFailed, check_property

    def unpacked(holds):
        return lambda case: holds(*case)

    check_property(unpacked(saves_nothing_when_nothing_requires_grad), forward_ad_cases(),
                   claim="forward AD saves nothing when nothing requires grad", examples=30)
    check_property(unpacked(records_and_saves_what_backward_needs), forward_ad_cases(),
                   claim="forward AD records a module whose parameters require grad, and "
                         "saves what its operations' backward reads", examples=30)
    print("✓ forward AD saves nothing when nothing requires grad (no_grad and detached "
          "parameters included); a Linear saves its input and the input's tangent, a bias add nothing")
    for broad, breaks_on in [(forward_mode_saves_nothing, ("network", "linear")),
                             (saves_exactly_when_a_parameter_requires_grad, ("bias add",))]:
        try:
            check_property(unpacked(broad), forward_ad_cases(), claim=broad.__doc__, examples=30)
        except ClaimFailed as failure:
            assert any(f"'{kind}'" in str(failure) for kind in breaks_on), failure
            print(f"✓ the broader sentence fails:\n{failure}")
        else:
            raise AssertionError(f"{broad.__name__} held over the whole family")


if __name__ == "__main__":
    main()
