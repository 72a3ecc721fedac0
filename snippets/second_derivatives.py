"""When a derivative taken with ``create_graph=True`` can be differentiated again.

``create_graph=True`` records the backward pass, so the first derivative it returns
has a ``grad_fn`` whenever the backward pass computed it from something that
requires grad: from the input for ``t ** 3`` (``3 t**2``), from the weight for an
``nn.Linear``. When nothing it was computed from requires grad, as for a linear map
of the input with a fixed matrix (the derivative of ``3 * t`` is the constant 3),
it comes back with no ``grad_fn``, and a second ``grad`` raises "element 0 of
tensors does not require grad and does not have a grad_fn".

What a derivative is computed from is the backward formula's choice, not the
derivative's values: ``torch.clamp(t, -1, 1)`` and ``hardtanh(t)`` are one function,
but clamp's backward builds its 0-or-1 derivative from comparisons of ``t`` with the
bounds (booleans, which never require grad) and returns it without a ``grad_fn``,
while hardtanh's reads ``t`` itself and returns one (its second derivative is 0).

``first_derivative_cases()`` draws all four kinds: maps whose first derivative is a
constant (``3 * t``, ``A @ t``, ``cumsum``, ``t - mean(t)``, ``flip``, ``sort``),
maps whose backward builds the derivative from a comparison of the input
(``clamp``, ``where``, ``maximum``, ``masked_fill``, ``t * (t > 0)``), maps whose
first derivative is computed from the input (``t ** 3``, ``sin``, ``exp``,
``softmax``, ``relu``, ``hardtanh``, ``leaky_relu``, ``abs``, ``t * sum(t)``), and
``nn.Linear`` layers, whose derivative with respect to the input is computed from
the weight.

Run this file to check the qualified sentence over the family, and to see the
unqualified one ("with create_graph=True the result has a grad_fn") fail on a
constant derivative.
"""

from __future__ import annotations

import torch
from families import SEEDS, SIZES, Map, linear_maps, named, seeded
from hypothesis import strategies as st
from oracle import check_close, finite_difference_jacobian

CONSTANT = {  # the backward pass reads nothing that requires grad
    "3 * t": lambda t: 3 * t,
    "cumsum(t)": lambda t: torch.cumsum(t, 0),
    "t - mean(t)": lambda t: t - t.mean(),
    "flip(t)": lambda t: torch.flip(t, [0]),
    "sort(t)": lambda t: torch.sort(t).values,  # reads the integer indices only
}
FROM_A_COMPARISON = {  # piecewise 0 or 1: the backward reads t only through a comparison
    "clamp(t, -1, 1)": lambda t: torch.clamp(t, -1, 1),
    "where(t > 0, t, 0)": lambda t: torch.where(t > 0, t, 0.0),
    "maximum(t, 0)": lambda t: torch.maximum(t, torch.zeros_like(t)),
    "masked_fill(t < 0, 0)": lambda t: t.masked_fill(t < 0, 0.0),
    "t * (t > 0)": lambda t: t * (t > 0),
}
FROM_THE_INPUT = {  # the backward pass reads t, which requires grad
    "t ** 3": lambda t: t ** 3,
    "sin(t)": torch.sin,
    "exp(t)": torch.exp,
    "softmax(t)": lambda t: torch.softmax(t, 0),
    "relu(t)": torch.relu,  # computed from t, though the second derivative is 0
    "hardtanh(t)": torch.nn.functional.hardtanh,  # clamp(t, -1, 1), but read from t
    "leaky_relu(t)": torch.nn.functional.leaky_relu,
    "abs(t)": torch.abs,
    "t * sum(t)": lambda t: t * t.sum(),
}


class LinearLayer(torch.nn.Linear):
    """An nn.Linear (its parameters require grad) that prints on one line."""

    def __repr__(self) -> str:
        return f"nn.Linear({self.in_features}→{self.out_features})"


@named("constant first derivatives, derivatives built from a comparison, first "
       "derivatives computed from the input, and nn.Linear layers")
@st.composite
def first_derivative_cases(draw):
    """(kind, f): kind "constant", "from a comparison", "from the input" or "from a
    weight"; f a Map of a vector of f.n entries, or an nn.Linear (f.in_features
    entries)."""
    kind = draw(st.sampled_from(["constant", "from a comparison", "from the input",
                                 "from a weight"]))
    if kind == "from a weight":
        with seeded(draw(SEEDS)):
            layer = LinearLayer(draw(SIZES), draw(st.integers(1, 3)), dtype=torch.float64)
        return (kind, layer)
    if kind == "constant" and draw(st.booleans()):
        return (kind, draw(linear_maps()))  # A @ t, A fixed
    table = {"constant": CONSTANT, "from a comparison": FROM_A_COMPARISON,
             "from the input": FROM_THE_INPUT}[kind]
    name = draw(st.sampled_from(sorted(table)))
    return (kind, Map(name, table[name], draw(SIZES), kind))


def _size(f) -> int:
    return f.in_features if isinstance(f, torch.nn.Linear) else f.n


def _first_derivative(f, t):
    """d/dt of f(t).sum(), by autograd, evaluated (inside a finite difference too)."""
    with torch.enable_grad():
        t = t.detach().clone().requires_grad_()
        return torch.autograd.grad(f(t).sum(), t)[0]


def grad_fn_unless_nothing_it_was_computed_from_requires_grad(case, seed) -> bool:
    """With create_graph=True the first derivative has a grad_fn and a second grad
    of it works, unless nothing it was computed from requires grad: then it has no
    grad_fn and the second grad raises 'element 0 of tensors does not require grad'."""
    kind, f = case
    x = torch.randn(_size(f), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed)).requires_grad_()
    (first,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    check_close(first, finite_difference_jacobian(lambda t: f(t).sum(), x), "the first derivative",
                atol=1e-5, rtol=1e-5)
    if kind in ("constant", "from a comparison"):
        assert first.grad_fn is None and not first.requires_grad, (f, first.grad_fn)
        try:
            torch.autograd.grad(first.sum(), x)
        except RuntimeError as error:
            assert "element 0 of tensors does not require grad and does not have a grad_fn" \
                in str(error), str(error)
        else:
            raise AssertionError(f"{f}: the second grad of a {kind} derivative ran")
        return True
    assert first.grad_fn is not None, f"{f}: no grad_fn, though computed from {kind}"
    if kind == "from the input":
        (second,) = torch.autograd.grad(first.sum(), x)
        check_close(second, finite_difference_jacobian(
            lambda t: _first_derivative(f, t).sum(), x), "the second derivative", atol=1e-4, rtol=1e-4)
    else:
        # d/dx of f(x).sum() is the weight's column sums: differentiate again with
        # respect to the weight (with respect to x, the second grad raises instead).
        (second,) = torch.autograd.grad(first.sum(), f.weight)
        check_close(second, torch.ones_like(f.weight), "d(column sums of W)/dW is all ones")
        try:
            torch.autograd.grad(first.sum(), x)
        except RuntimeError as error:
            assert "appears to not have been used in the graph" in str(error), str(error)
        else:
            raise AssertionError(f"{f}: the second grad with respect to the input ran")
    return True


def always_has_grad_fn(case, seed) -> bool:
    """The unqualified sentence: with create_graph=True the result has a grad_fn."""
    kind, f = case
    x = torch.randn(_size(f), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed)).requires_grad_()
    (first,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    return first.grad_fn is not None


def main() -> None:
    from oracle import ClaimFailed, check_property

    check_property(grad_fn_unless_nothing_it_was_computed_from_requires_grad,
                   first_derivative_cases(), SEEDS, examples=30,
                   claim="a create_graph=True derivative has a grad_fn unless nothing it was "
                         "computed from requires grad")
    print("✓ with create_graph=True the derivative has a grad_fn unless nothing it was computed "
          "from requires grad (a constant derivative, or one built from comparisons)")
    try:
        check_property(always_has_grad_fn, first_derivative_cases(), SEEDS, examples=30,
                       claim=always_has_grad_fn.__doc__)
    except ClaimFailed as failure:
        assert "'constant'" in str(failure) or "'from a comparison'" in str(failure), failure
        print(f"✓ the unqualified sentence fails:\n{failure}")
    else:
        raise AssertionError("'the result has a grad_fn' held over constant derivatives too")


if __name__ == "__main__":
    main()
