"""What forward mode saves for a later backward pass, over networks and plain maps.

Forward-mode AD computes each tangent on the spot and needs nothing saved for it.
But autograd's reverse mode still records whatever the same computation does with
tensors that require grad, dual or not: an ``nn.Module``'s parameters require grad
by default, so forward AD through a module saves tensors for a backward pass nobody
asked for. ``forward_ad_cases()`` draws both kinds of computation (a small network
on a batch, whose parameters require grad; a map on a plain tensor), and
``forward_mode_saves_only_for_grad`` checks what the pages say about them.

Run this file to check the sentence over the family, and to see the broad one
("forward mode saves nothing") fail on a network.
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD
from families import SEEDS, batches, small_networks, vector_maps
from hypothesis import strategies as st


def saved_during(compute):
    """Run compute(); return how many tensors autograd saved for a backward pass, and
    what compute returned."""
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        result = compute()
    return len(saved), result


def tangent_of(f, x, u):
    """J u by forward_ad: push the tangent u through f at x."""
    with fwAD.dual_level():
        return fwAD.unpack_dual(f(fwAD.make_dual(x, u))).tangent


@st.composite
def forward_ad_cases(draw):
    """("network", a small MLP whose parameters require grad, a batch) or
    ("plain map", a map R^n -> R^n, a point that does not require grad)."""
    if draw(st.booleans()):
        net = draw(small_networks())
        return ("network", net, draw(batches(features=net.in_features)))
    f = draw(vector_maps())
    return ("plain map", f, f.point(draw(SEEDS)))


forward_ad_cases.family_name = "small networks and plain maps"


def requires_grad_inside(kind, f) -> bool:
    return kind == "network" and any(p.requires_grad for p in f.parameters())


def forward_mode_saves_only_for_grad(kind, f, x) -> bool:
    """Forward AD saves tensors exactly when a parameter requires grad; under
    torch.no_grad(), or with detached parameters through functional_call, it saves
    none and computes the same tangent."""
    u = torch.linspace(-1, 1, x.numel(), dtype=x.dtype).reshape(x.shape)
    saved, tangent = saved_during(lambda: tangent_of(f, x, u))
    assert (saved > 0) == requires_grad_inside(kind, f), (
        f"{kind}: {saved} tensors saved, parameters requiring grad: "
        f"{requires_grad_inside(kind, f)}")
    with torch.no_grad():
        saved_no_grad, tangent_no_grad = saved_during(lambda: tangent_of(f, x, u))
    assert saved_no_grad == 0, f"{saved_no_grad} saved under no_grad"
    assert torch.allclose(tangent_no_grad, tangent, equal_nan=True), "no_grad changed J u"
    if kind == "network":
        detached = {name: p.detach() for name, p in f.named_parameters()}
        saved_detached, tangent_detached = saved_during(lambda: tangent_of(
            lambda t: torch.func.functional_call(f, detached, (t,)), x, u))
        assert saved_detached == 0, f"{saved_detached} saved with detached parameters"
        assert torch.allclose(tangent_detached, tangent), "detaching changed J u"
    return True


def forward_mode_saves_nothing(kind, f, x) -> bool:
    """The broad sentence this file corrects: forward AD saves nothing, whatever f."""
    u = torch.ones_like(x)
    return saved_during(lambda: tangent_of(f, x, u))[0] == 0


def main() -> None:
    from oracle import ClaimFailed, check_property

    def unpacked(holds):
        return lambda case: holds(*case)

    check_property(unpacked(forward_mode_saves_only_for_grad), forward_ad_cases(),
                   claim="forward AD saves tensors only when a parameter requires grad",
                   examples=25)
    print("✓ forward AD saves tensors exactly when a parameter requires grad; "
          "no_grad and detached parameters save none")
    try:
        check_property(unpacked(forward_mode_saves_nothing), forward_ad_cases(),
                       claim="forward mode saves nothing", examples=25)
    except ClaimFailed as failure:
        assert "network" in str(failure), failure
        print(f"✓ the broad sentence fails on a network:\n{failure}")
    else:
        raise AssertionError("'forward mode saves nothing' held over networks too")


if __name__ == "__main__":
    main()
