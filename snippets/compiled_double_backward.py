"""What differentiating a gradient again through ``torch.compile`` gives.

A first derivative taken through a compiled region (``backend="aot_eager"``) with
``create_graph=True`` cannot be differentiated again. Which error says so depends
on the input and on what the compiled backward reads: a contiguous leaf through a
backward that reuses it (``(t * t).sum()``, ``(t.sin() * t).sum()``) gives
"torch.compile with aot_autograd does not currently support double backward",
while a view as input (such as ``torch.linspace(...).unsqueeze(1)``) or a backward
that reads only the outputs (``tanh(t).sum()``, ``exp(t).sum()``) gives "appears
to not have been used in the graph". In that
second case ``allow_unused=True`` returns ``None`` and ``materialize_grads=True``
returns zeros, although the true second derivative is not zero.

Run this file to see both messages and the silent zeros.
"""
import torch
import torch._dynamo

DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
NOT_USED = "The differentiated Tensor at index 0 appears to not have been used in the graph"


def second_grad_through_compile(function, inputs, compiled=True, **grad_options):
    """The second ``grad`` of ``function`` (compiled unless ``compiled=False``) at
    ``inputs``, seeded with ones: the error message it raised, or what it returned."""
    if compiled:
        torch._dynamo.reset()  # compile afresh: one input's graph must not serve another
        function = torch.compile(function, backend="aot_eager")
    out = function(inputs)
    (first,) = torch.autograd.grad(out, inputs, torch.ones_like(out), create_graph=True)
    try:
        (second,) = torch.autograd.grad(first, inputs, torch.ones_like(first), **grad_options)
    except RuntimeError as error:
        return str(error)
    return second


def main() -> None:
    def energy(t):
        return (t.sin() * t).sum()

    leaf = torch.tensor([0.5, 1.0], requires_grad=True)
    view = torch.linspace(0.5, 1.0, 2).unsqueeze(1).requires_grad_(True)
    assert second_grad_through_compile(energy, leaf).startswith(DOUBLE_BACKWARD)
    assert second_grad_through_compile(energy, view).startswith(NOT_USED)
    assert second_grad_through_compile(energy, view, allow_unused=True) is None
    zeros = second_grad_through_compile(energy, view, materialize_grads=True)
    true = second_grad_through_compile(energy, view, compiled=False)
    assert bool((zeros == 0).all()) and bool((true != 0).all()), (zeros, true)
    print("leaf:", DOUBLE_BACKWARD)
    print("view:", NOT_USED, "; materialize_grads:", zeros.flatten().tolist(),
          "true:", true.flatten().tolist())


if __name__ == "__main__":
    main()
