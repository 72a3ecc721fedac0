"""Chains of simple operations, for the sentences about a second ``backward``.

A first ``backward`` frees the tensors the graph's operations saved, so a second one
without ``retain_graph=True`` raises exactly when some operation saved a tensor.
Which operations save one is up to each backward formula: ``x + 1`` saves none,
``10 * x`` saves the 10, as a tensor, although its derivative is the constant 10.
``operation_chains`` draws one to three operations of ``OPERATIONS`` applied in turn;
the pages sum the result and call ``backward`` twice.

Run this file to see which single operations survive a second pass, and which
have a constant derivative.
"""

from __future__ import annotations

import warnings

import torch
from hypothesis import strategies as st

OPERATIONS = {
    "x + 1": lambda t: t + 1, "x - 1": lambda t: t - 1, "-x": lambda t: -t,
    "10 * x": lambda t: 10 * t, "x / 2": lambda t: t / 2, "exp(x)": torch.exp,
    "x ** 2": lambda t: t ** 2, "sin(x)": torch.sin, "relu(x)": torch.relu,
    "flip(x)": lambda t: t.flip(0), "cumsum(x)": lambda t: t.cumsum(0), "clone(x)": torch.clone,
    "x.reshape(-1)": lambda t: t.reshape(-1), "tanh(x)": torch.tanh, "abs(x)": torch.abs,
    "x * x": lambda t: t * t, "softmax(x)": lambda t: torch.softmax(t, 0), "x[::2]": lambda t: t[::2],
    "x.unsqueeze(0)": lambda t: t.unsqueeze(0), "x.mean()": lambda t: t.mean(),
    "x + x": lambda t: t + t,
}

# Those that leave at least one dimension, so that any chain of them applies
# (x[::2] and flip(x) refuse the 0-dim result of x.mean()).
NON_SCALAR_OPERATIONS = tuple(name for name in OPERATIONS if name != "x.mean()")

# A shorter list to draw from: arithmetic with a constant, a square, exp, relu, flip
# and clone.
SIMPLE_OPERATIONS = ("x + 1", "10 * x", "exp(x)", "x ** 2", "flip(x)", "x / 2", "relu(x)",
                     "clone(x)", "x - 1")

# Those whose derivative is a constant, so that their backward needs no value of x.
# Most save nothing; 10 * x and x / 2 save their constant, as a tensor.
CONSTANT_DERIVATIVE = {"x + 1", "x - 1", "-x", "10 * x", "x / 2", "flip(x)", "cumsum(x)",
                       "clone(x)", "x.reshape(-1)", "x[::2]", "x.unsqueeze(0)", "x.mean()",
                       "x + x"}


def operation_chains(names=OPERATIONS) -> st.SearchStrategy[list[str]]:
    """One to three of ``names`` (operations of ``OPERATIONS``), applied in turn.
    Unnamed: the record lists the operations drawn from."""
    return st.lists(st.sampled_from(sorted(names)), min_size=1, max_size=3)


def summed_chain(chain: list[str], leaf: torch.Tensor) -> torch.Tensor:
    """The operations of ``chain`` applied to ``leaf`` in turn, summed to a scalar."""
    out = leaf
    for name in chain:
        out = OPERATIONS[name](out)
    return out.sum()


def _under_no_grad(make, leaf: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return make(leaf)


# Ways to make a tensor from a leaf that requires grad without recording an operation.
# All give a leaf; all but the view under no_grad give one that does not require grad.
NO_GRAD_VIEW = "a view of the leaf under no_grad"
MADE_WITHOUT_GRAD = {
    "a constant": lambda chain, leaf: torch.tensor(2.0),
    "from plain tensors": lambda chain, leaf: summed_chain(chain, leaf.detach().clone()),
    "under no_grad": lambda chain, leaf: _under_no_grad(lambda t: summed_chain(chain, t), leaf),
    "detached": lambda chain, leaf: summed_chain(chain, leaf).detach(),
    NO_GRAD_VIEW: lambda chain, leaf: _under_no_grad(lambda t: t[1:], leaf),
}


def made_without_grad() -> st.SearchStrategy[str]:
    """A name of ``MADE_WITHOUT_GRAD``."""
    return st.sampled_from(sorted(MADE_WITHOUT_GRAD))


def survives_a_second_pass(chain: list[str], leaf: torch.Tensor) -> bool:
    """Whether backward can run twice, without retain_graph, on the summed chain."""
    out = summed_chain(chain, leaf)
    out.backward()
    try:
        out.backward()
    except RuntimeError:
        return False
    return True


# How a first pass is asked for: through backward or autograd.grad, with either flag.
FIRST_PASS_FLAGS = ({}, {"retain_graph": True}, {"create_graph": True},
                    {"create_graph": True, "retain_graph": False})


def second_pass_runs_exactly_when_kept(chain: list[str], through_grad: bool, flags: dict) -> bool:
    """A second pass after a first one with ``flags`` runs exactly when the first kept
    the saved tensors: ``retain_graph``, which defaults to ``create_graph``'s value,
    or a chain that saved none (read from its nodes' ``_saved_*`` attributes, r37b-5)."""
    leaf = torch.linspace(0.5, 2.0, 4, dtype=torch.float64, requires_grad=True)
    out = summed_chain(chain, leaf)
    if through_grad:
        torch.autograd.grad(out, leaf, **flags)
    else:
        with warnings.catch_warnings():  # backward(create_graph=True) warns of a cycle
            warnings.simplefilter("ignore", UserWarning)
            out.backward(**flags)
    kept = flags.get("retain_graph", flags.get("create_graph", False))
    try:
        torch.autograd.grad(out, leaf)
    except RuntimeError as error:
        return not kept and "backward through the graph a second time" in str(error)
    return kept or not saves_a_tensor(chain)


def saves_a_tensor(chain: list[str]) -> bool:
    """Whether a node of the summed chain's graph holds a saved tensor (an attribute
    ``_saved_*``), read on a fresh graph, before a pass could free it."""
    out = summed_chain(chain, torch.linspace(0.5, 2.0, 4, dtype=torch.float64, requires_grad=True))
    nodes, seen = [out.grad_fn], set()
    while nodes:
        node = nodes.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        held = [getattr(node, name) for name in dir(node) if name.startswith("_saved_")]
        if any(isinstance(value, torch.Tensor) for value in held):
            return True
        nodes += [next_node for next_node, _ in node.next_functions]
    return False


def main() -> None:
    for name in OPERATIONS:
        survives = survives_a_second_pass([name], torch.ones(4, requires_grad=True))
        derivative = "constant derivative" if name in CONSTANT_DERIVATIVE else ""
        print(f"{name:15} {'survives' if survives else 'raises on'} a second pass  {derivative}")


if __name__ == "__main__":
    main()
