"""Custom autograd Functions and a second ``backward`` (misconceptions.md).

A first ``backward`` frees the saved tensors of every node it ran, a custom
Function's node included, so a second pass without ``retain_graph=True`` raises when
a node reads its list of saved tensors. For a custom Function that is when its
``backward`` reads ``ctx.saved_tensors``, even an empty list, whatever it saved.

``custom_function(behaviour, form)`` builds one Function per pair of:

- a behaviour (``BEHAVIOURS``): saves its input and reads it (x**2), saves it and
  never reads it (2x), keeps it as a ``ctx`` attribute (x**2), saves nothing and
  reads the empty list (x + 1);
- a form (``FORMS``): ``forward(ctx, x)`` saving in ``forward``; ``forward(x)`` with
  ``setup_context(ctx, inputs, output)`` saving there; the same with its ``backward``
  wrapped in ``once_differentiable``.

Run this file to see the second pass of each of the twelve.
"""

from __future__ import annotations

import torch
from families import labelled
from hypothesis import strategies as st
from torch.autograd.function import once_differentiable


def _saves(ctx, x):
    ctx.save_for_backward(x)


def _keeps(ctx, x):
    ctx.x = x.detach()  # kept for backward, not through save_for_backward


def _reads_saved_x(ctx, grad):
    (x,) = ctx.saved_tensors
    return 2 * x * grad


def _reads_kept_x(ctx, grad):
    return 2 * ctx.x * grad


def _reads_the_empty_list(ctx, grad):
    assert ctx.saved_tensors == ()
    return grad


# behaviour: (what forward computes, what it keeps for backward, its backward)
BEHAVIOURS = {
    "saves and reads": (lambda x: x**2, _saves, _reads_saved_x),
    "saves, never reads": (lambda x: 2 * x, _saves, lambda ctx, grad: 2 * grad),  # needs no value
    "keeps an attribute": (lambda x: x**2, _keeps, _reads_kept_x),
    "saves nothing, reads": (lambda x: x + 1, lambda ctx, x: None, _reads_the_empty_list),
}
READS_SAVED_TENSORS = ("saves and reads", "saves nothing, reads")
FORMS = ("forward(ctx, x)", "setup_context", "setup_context, once_differentiable backward")

custom_behaviours = labelled(st.sampled_from(sorted(BEHAVIOURS)),
                             "Functions that save and read, save only, keep an attribute, read without saving")
custom_forms = labelled(st.sampled_from(FORMS),
                        "written with forward(ctx, x), with setup_context, with setup_context and once_differentiable")


def custom_function(behaviour: str, form: str) -> type[torch.autograd.Function]:
    """The Function of ``behaviour`` (a key of ``BEHAVIOURS``) written in ``form``."""
    compute, keep, backward_of = BEHAVIOURS[behaviour]

    if form == "forward(ctx, x)":
        class SavesInForward(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                keep(ctx, x)
                return compute(x)

            backward = staticmethod(backward_of)
        return SavesInForward

    class SavesInSetupContext(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return compute(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            keep(ctx, inputs[0])

        backward = staticmethod(once_differentiable(backward_of) if "once_differentiable" in form
                                else backward_of)
    return SavesInSetupContext


def second_pass_of(function: type[torch.autograd.Function]) -> tuple[str, torch.Tensor]:
    """'raises' or 'runs', and x.grad after the passes that ran, for x = (1, 2)."""
    x = torch.tensor([1., 2.], requires_grad=True)
    out = function.apply(x).sum()
    out.backward()
    try:
        out.backward()
    except RuntimeError as error:
        assert "a second time" in str(error), error
        return "raises", x.grad
    return "runs", x.grad


def main() -> None:
    for behaviour in BEHAVIOURS:
        for form in FORMS:
            outcome, _ = second_pass_of(custom_function(behaviour, form))
            assert (outcome == "raises") == (behaviour in READS_SAVED_TENSORS), (behaviour, form)
            print(f"{behaviour:22} {form:45} second pass {outcome}")


if __name__ == "__main__":
    main()
