"""The general sentences pages make about seeds, as properties over families.

A page's hidden cell checks a sentence such as "if each y_i depends on z_i alone,
the ones seed gives every dy_i/dz_i" with ``oracle.check_property(holds, family,
quote=...)``, taking ``holds`` and ``family`` from here, so that the landing page,
the tutorial and the explanations state one rule and check it the same way.

Each family holds the members that break the sentences people get wrong:
``flip(x) * c`` (each input feeds one output, yet the ones seed is not the
diagonal), ``(x0, x1 + x0, x2 - x0)`` (x0 feeds three outputs, yet the ones seed
is the diagonal), maps whose off-diagonal entries cancel column by column, the
non-diagonal J at whose point ``z.grad / z`` happens to be the diagonal,
``x + round(sum(x))`` (autograd's J is I wherever it looks, yet the map is not
elementwise), networks with several outputs per sample (each sample's rows do not
share a column, yet a column holds several entries), and leaves that require grad
but that the output was never computed from. Jacobians are compared with finite
differences (``oracle``), which only evaluate, except where the sentence is about
autograd's own J.

Run this file to check every property over its family.
"""

from __future__ import annotations

import math
import warnings

import torch
from families import (
    SEEDS,
    Map,
    batches,
    elementwise_maps,
    exactly,
    labelled,
    linear_maps,
    mixing_maps,
    named,
    permutation_maps,
    points,
    small_networks,
    vector_maps,
)
from hypothesis import strategies as st
from oracle import check_close, finite_difference_jacobian

TOL = dict(atol=1e-6, rtol=1e-6)

# -- The review's members, named as a failure prints them ----------------------------

FLIP_TIMES_C = Map("flip(x) * c, c = 1..5",
                   lambda x: torch.flip(x, [0]) * torch.arange(1.0, 6.0, dtype=x.dtype), 5,
                   "permutation")
X0_FEEDS_THREE = Map("(x0, x1 + x0, x2 - x0)",
                     lambda x: torch.stack([x[0], x[1] + x[0], x[2] - x[0]]), 3, "cancelling")
_J_COINCIDENCE = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 1.0]],
                              dtype=torch.float64)
NOT_DIAGONAL_YET_RATIO_RIGHT = Map("A @ x, A = [[1, 1, 0], [0, 1, 0], [0, -1, 1]]",
                                   lambda x: _J_COINCIDENCE.to(x.dtype) @ x, 3, "linear")


CANCELLING_SIZES = st.integers(3, 6)


@st.composite
def cancelling_maps(draw, n: st.SearchStrategy[int] = CANCELLING_SIZES) -> Map:
    """tanh(x) + M x with M's diagonal zero and each column of M summing to zero:
    inputs feed several outputs, yet 1ᵀJ is the diagonal of J."""
    size = draw(n)
    M = torch.randn(size, size, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(draw(SEEDS)))
    off = ~torch.eye(size, dtype=torch.bool)
    M = torch.where(off, M, 0.0)
    M = torch.where(off, M - M.sum(0, keepdim=True) / (size - 1), 0.0)
    return Map(f"tanh(x) + M @ x, M {size}x{size}: zero diagonal, columns sum to 0",
               lambda x: torch.tanh(x) + M.to(x.dtype) @ x, size, "cancelling")


def seed_maps() -> st.SearchStrategy[Map]:
    """Every map R^n -> R^n of ``families.vector_maps`` (elementwise, permutations,
    linear, mixing), maps whose off-diagonal entries cancel, and the review's
    three members."""
    strategy = st.one_of(
        st.sampled_from([FLIP_TIMES_C, X0_FEEDS_THREE, NOT_DIAGONAL_YET_RATIO_RIGHT]),
        vector_maps(), cancelling_maps(), linear_maps(n=st.just(3)))
    strategy.family_name = SEED_MAPS
    return strategy


SEED_MAPS = "maps R^n -> R^n with flip(x) * c, (x0, x1 + x0, x2 - x0) and kin"


def maps_at_points() -> st.SearchStrategy[tuple[Map, torch.Tensor]]:
    """A map of ``seed_maps`` and a point: a drawn one, or for the review's linear
    map also the point (1, 1, 1) where its z.grad / z is the diagonal."""
    drawn = st.builds(lambda f, seed: (f, f.point(seed)), seed_maps(), SEEDS)
    coincidence = st.just((NOT_DIAGONAL_YET_RATIO_RIGHT, torch.ones(3, dtype=torch.float64)))
    strategy = st.one_of(coincidence, drawn)
    strategy.family_name = SEED_MAPS + ", at points"
    return strategy


# -- What backward gives, and J by finite differences --------------------------------

def backward_with(f: Map, x: torch.Tensor, seed: torch.Tensor | None = None,
                  *, by_sum: bool = False) -> torch.Tensor:
    """x.grad after f(x).backward(seed), or after f(x).sum().backward()."""
    t = x.detach().clone().requires_grad_()
    y = f(t)
    if by_sum:
        y.sum().backward()
    else:
        y.backward(torch.ones_like(y) if seed is None else seed)
    return t.grad


def jacobian(f: Map, x: torch.Tensor) -> torch.Tensor:
    return finite_difference_jacobian(f, x)


def off_diagonal(J: torch.Tensor) -> torch.Tensor:
    return J - torch.diag(torch.diagonal(J))


def is_diagonal(J: torch.Tensor) -> bool:
    return bool(off_diagonal(J).abs().max() < 1e-7)


# -- The ones seed and the diagonal of J ---------------------------------------------

def ones_seed_gives_the_diagonal_when_J_is_diagonal(f_x) -> bool:
    """If each y_i depends on z_i alone (J diagonal), the ones seed and y.sum()
    both give diag(J)."""
    f, x = f_x
    J = jacobian(f, x)
    if not is_diagonal(J):
        return True  # the sentence says nothing about this map
    diagonal = torch.diagonal(J)
    return (torch.allclose(backward_with(f, x), diagonal, **TOL)
            and torch.allclose(backward_with(f, x, by_sum=True), diagonal, **TOL))


def ones_seed_gives_the_diagonal_exactly_when_columns_cancel(f_x) -> bool:
    """1ᵀJ = diag(J) if and only if every column's off-diagonal entries sum to 0."""
    f, x = f_x
    J = jacobian(f, x)
    gives_diagonal = torch.allclose(backward_with(f, x), torch.diagonal(J), **TOL)
    cancels = torch.allclose(off_diagonal(J).sum(0), torch.zeros(f.n, dtype=J.dtype), **TOL)
    return gives_diagonal == cancels


def one_seed_recovers_every_nonzero_when_columns_hold_one(f_x) -> bool:
    """If each column of J holds at most one non-zero, 1ᵀJ holds that entry, and
    putting it back at the row where J has it rebuilds all of J."""
    f, x = f_x
    J = jacobian(f, x)
    nonzero = J.abs() > 1e-7
    if (nonzero.sum(0) > 1).any():
        return True  # the sentence says nothing about this map
    ones = backward_with(f, x)
    rebuilt = nonzero.to(J.dtype) * ones  # the pattern (where) times the values (what)
    return torch.allclose(rebuilt, J, **TOL)


def ratio_is_the_diagonal_exactly_when_the_rest_vanishes(f_x) -> bool:
    """(z.grad / z)_j = J_jj if and only if sum over i != j of z_i J_ij is 0 (z_j != 0)."""
    f, z = f_x
    if (z.abs() < 1e-3).any():
        return True  # the sentence is about z with no zero entry (else: nan or inf)
    J = jacobian(f, z)
    ratio = backward_with(f, z, seed=z) / z
    matches = torch.isclose(ratio, torch.diagonal(J), atol=1e-6, rtol=1e-6)
    rest_vanishes = torch.isclose(z @ off_diagonal(J), torch.zeros_like(z), atol=1e-6)
    return bool((matches == rest_vanishes).all())


def seed_times_z_is_elementwise_exactly_when_J_is_diagonal(f_x) -> bool:
    """zᵀJ = z * diag(J) for every seed z (checked on the unit seeds, which span
    them all) if and only if J is diagonal."""
    f, x = f_x
    J = jacobian(f, x)
    units = torch.eye(f.n, dtype=x.dtype)
    elementwise = all(torch.allclose(backward_with(f, x, seed=e), e * torch.diagonal(J), **TOL)
                      for e in units)
    return elementwise == is_diagonal(J)


@named("elementwise maps at points with kinks and zeros")
@st.composite
def elementwise_maps_at_points(draw):
    """An elementwise map and a point whose entries may sit at 0 or at a kink."""
    f = draw(elementwise_maps())
    return f, draw(points(n=f.n))


def elementwise_columns_hold_only_the_diagonal(f_x) -> bool:
    """For an elementwise map, column j of J can be non-zero only at row j, so the
    ones seed gives dy_j/dx_j, even where it is 0 (J from unit seeds, at kinks too)."""
    f, x = f_x
    J = torch.autograd.functional.jacobian(f, x)
    return (bool((off_diagonal(J) == 0).all())
            and torch.allclose(backward_with(f, x), torch.diagonal(J), **TOL))


# -- One non-zero entry per column ----------------------------------------------------

@st.composite
def maps_and_inputs(draw):
    """A map with a point, or a small network with a batch: elementwise, permuting
    and mixing maps, networks with one to three outputs per sample, with and without
    BatchNorm (which mixes the samples)."""
    kind = draw(st.sampled_from(["elementwise", "permutation", "mixing", "network"]))
    if kind == "network":
        net = draw(small_networks(batchnorm=None))
        return net, draw(batches(features=net.in_features))
    family = {"elementwise": elementwise_maps, "permutation": permutation_maps,
              "mixing": mixing_maps}[kind]
    fn = draw(family())
    return fn, fn.point(seed=draw(st.integers(0, 99)))


def jacobian_rows(fn, point: torch.Tensor) -> torch.Tensor:
    """fn's J at point as a matrix: one row per output entry, one column per input entry."""
    return torch.autograd.functional.jacobian(fn, point).reshape(-1, point.numel())


def one_entry_per_column(J: torch.Tensor) -> bool:
    """Whether each column of J holds at most one non-zero entry: no input feeds two outputs."""
    return bool(((J.abs() > 1e-9).sum(0) <= 1).all())


def one_entry_per_column_exactly_as_stated(member):
    """Each column of J holds at most one non-zero entry exactly for elementwise maps,
    permutations (sort among them) and networks with one scalar output per sample and
    no BatchNorm; then the ones seed gives the column sums."""
    fn, point = member
    out = fn(point)
    J_member = jacobian_rows(fn, point)
    one_per_column = one_entry_per_column(J_member)
    if isinstance(fn, torch.nn.Module):
        has_norm = any(isinstance(m, torch.nn.BatchNorm1d) for m in fn.modules())
        stated = out.shape[1] == 1 and not has_norm
    else:  # sort is a permutation of the entries near any point without ties
        stated = fn.kind in ("elementwise", "permutation") or fn.name == "sort(x)"
    assert one_per_column == stated, f"{fn}: one entry per column is {one_per_column}"
    if stated:
        leaf = point.detach().requires_grad_()
        out = fn(leaf)
        check_close(torch.autograd.grad(out, leaf, torch.ones_like(out))[0].reshape(-1),
                    J_member.sum(0), "the ones seed gives the column sums")


def one_entry_per_column_when_one_output_per_sample(member):
    """Elementwise maps, permutations, and networks with one scalar output per sample and
    no BatchNorm hold at most one non-zero per column, and the ones seed gives every one."""
    fn, point = member
    if isinstance(fn, torch.nn.Module):
        has_norm = any(isinstance(m, torch.nn.BatchNorm1d) for m in fn.modules())
        if fn(point).shape[1] != 1 or has_norm:
            return True  # outside the condition: other checks show what then goes wrong
    elif fn.kind not in ("elementwise", "permutation"):
        return True
    J_member = jacobian_rows(fn, point)
    assert one_entry_per_column(J_member), f"{fn}: a column holds two non-zeros"
    leaf = point.detach().requires_grad_()
    out = fn(leaf)
    check_close(torch.autograd.grad(out, leaf, torch.ones_like(out))[0].reshape(-1),
                J_member.sum(0), "the ones seed gives the column sums")
    return True


# -- A diagonal J at every point ------------------------------------------------------

def rounded_sum(t: torch.Tensor) -> torch.Tensor:
    """x + round(sum(x)): autograd's J is I wherever it is evaluated (round's derivative
    is taken as 0), yet moving one input far enough moves every output."""
    return t + torch.round(t.sum())


ROUNDED = "x + round(sum(x))"
ROUNDED_SUM = Map(ROUNDED, rounded_sum, 3, "rounded")
# The maps of seed_maps that are not differentiable everywhere.
NOT_DIFFERENTIABLE = {"relu(x)", "abs(x)", "c * relu(x)", "c * abs(x)", "sort(x)", ROUNDED}
THREE_SEEDS = st.lists(SEEDS, min_size=3, max_size=3)  # three points to evaluate J at


def maps_with_the_rounded_sum() -> st.SearchStrategy[Map]:
    """``x + round(sum(x))`` and every map of ``seed_maps``."""
    return st.just(ROUNDED_SUM) | seed_maps()


def diagonal_everywhere_makes_elementwise(f: Map, seeds) -> bool:
    """If autograd's J is diagonal at every point tried, moving x_j alone moves y_j
    alone (false as it stands: ``x + round(sum(x))``)."""
    points_tried = [f.point(seed) for seed in seeds]
    jacobians = [torch.autograd.functional.jacobian(f, p) for p in points_tried]
    if any(off_diagonal(J).abs().max() > 1e-9 for J in jacobians):
        return True  # the sentence says nothing about this map
    x = points_tried[0]
    for j in range(x.numel()):
        moved = x.clone()
        moved[j] += 2.5
        others = torch.arange(x.numel()) != j
        if not torch.allclose(f(moved)[others], f(x)[others]):
            return False
    return True


def diagonal_everywhere_exactly_when_elementwise(f: Map, seeds) -> bool:
    """For f differentiable everywhere: autograd's J is diagonal at every point tried
    exactly when moving x_j alone moves y_j alone. A map with an off-diagonal entry
    J_ij is examined too: nudging x_j must then move y_i."""
    if f.name in NOT_DIFFERENTIABLE:
        return True  # the sentence says nothing about this map
    for p in (f.point(seed) for seed in seeds):
        J = torch.autograd.functional.jacobian(f, p)
        off = off_diagonal(J).abs()
        if off.max() > 1e-6:
            i, j = divmod(int(off.argmax()), p.numel())
            nudged = p.clone()
            nudged[j] += 1e-4
            return bool((f(nudged)[i] - f(p)[i]).abs() > 1e-7)
    return diagonal_everywhere_makes_elementwise(f, seeds)


def accumulates_until_reset(fn, seed, reset):
    """Two backward calls with drawn seeds v1, v2 leave (v1 + v2)ᵀJ; after the reset a
    third call with v3 leaves v3ᵀJ alone. ``reset`` is "zero_grad" (an optimizer's),
    "x.grad.zero_()" or "x.grad = None"."""
    at = fn.point()
    generator = torch.Generator().manual_seed(seed)
    seeds = [torch.randn(fn(at).shape, dtype=at.dtype, generator=generator) for _ in range(3)]
    J_f = torch.autograd.functional.jacobian(fn, at)
    leaf = at.clone().requires_grad_()
    for seed_v in seeds[:2]:
        fn(leaf).backward(seed_v)
    check_close(leaf.grad, (seeds[0] + seeds[1]) @ J_f, "two calls give the sum of both products")
    if reset == "zero_grad":
        torch.optim.SGD([leaf], lr=0.1).zero_grad()
    elif reset == "x.grad.zero_()":
        leaf.grad.zero_()
    else:
        leaf.grad = None
    fn(leaf).backward(seeds[2])
    check_close(leaf.grad, seeds[2] @ J_f, "after the reset, one product")


# -- Which leaves backward fills ------------------------------------------------------

@named("graphs with used and unused leaves, with and without inputs=")
@st.composite
def leaf_graphs(draw):
    """Two to four leaves that require grad, some of which y is computed from
    (y = f(sum of w_k a_k) over the used ones) and some not, a seed shaped like y,
    and possibly ``inputs=`` naming some of the leaves."""
    return _graph(draw, st.booleans(), any)


_GRAPH_MAPS, _LEAF_COUNTS = vector_maps(n=st.integers(2, 4)), st.integers(2, 4)
_WEIGHTS = st.sampled_from([-2.0, -1.0, 0.5, 1.0, 3.0])


def _graph(draw, use, feeds_y):
    """What both leaf-graph families draw: f, how each of two to four leaves is used
    (drawn from ``use``, kept when ``feeds_y`` of them), weights, the leaves' values,
    a seed and maybe ``inputs=``."""
    f = draw(_GRAPH_MAPS)
    count = draw(_LEAF_COUNTS)
    uses = draw(exactly(use, count).filter(feeds_y))
    weights = draw(exactly(_WEIGHTS, count))
    generator = torch.Generator().manual_seed(draw(SEEDS))
    leaves = [torch.randn(f.n, dtype=torch.float64, generator=generator) for _ in range(count)]
    seed = torch.randn(f.n, dtype=torch.float64, generator=generator)
    named = draw(st.none() | exactly(st.booleans(), count).filter(any))
    return f, leaves, uses, weights, seed, named


def backward_fills_the_leaves_y_was_computed_from(graph) -> bool:
    """y.backward(v) accumulates vᵀ ∂y/∂a into a.grad for every leaf a that requires
    grad and that y was computed from (only the named ones with inputs=); the
    others keep .grad None."""
    f, values, used, weights, seed, named = graph
    leaves = [v.clone().requires_grad_() for v in values]
    y = f(sum(w * a for w, a, u in zip(weights, leaves, used, strict=True) if u))
    targets = None if named is None else [a for a, n in zip(leaves, named, strict=True) if n]
    y.backward(seed, inputs=targets)
    for k, a in enumerate(leaves):
        filled = used[k] and (named is None or named[k])
        if not filled:
            if a.grad is not None:
                return False
            continue

        def y_of_leaf(t, k=k):
            return f(sum(w * (t if j == k else v) for j, (w, v, u)
                         in enumerate(zip(weights, values, used, strict=True)) if u))
        expected = seed @ finite_difference_jacobian(y_of_leaf, values[k])
        if a.grad is None or not torch.allclose(a.grad, expected, atol=1e-5, rtol=1e-5):
            return False
    return True


LEAF_USES = ("differentiable", "unused", "detach", "argmax", "compare")


@named("graphs whose leaves feed y through differentiable operations, not at all, or only "
       "through .detach(), an argmax index or a comparison; .grad empty or already filled; "
       "with and without inputs=")
@st.composite
def leaf_graphs_with_cut_paths(draw):
    """Two to four leaves that require grad, each feeding y one way (``LEAF_USES``),
    at least one through differentiable operations; a seed shaped like y; leaves
    whose .grad may already hold ones; and possibly ``inputs=`` naming some leaves."""
    graph = _graph(draw, st.sampled_from(LEAF_USES), lambda uses: "differentiable" in uses)
    return (*graph, draw(st.booleans()))  # and whether the leaves' .grad already holds ones


def y_from_leaves(f: Map, leaves, uses, weights) -> torch.Tensor:
    """y = f(sum of w_k a_k over the differentiable leaves, plus w_k a_k.detach()),
    times (1 + argmax a_k) and the mask (a_k > 0) of the argmax and comparison leaves."""
    total = sum(w * (a if u == "differentiable" else a.detach())
                for w, a, u in zip(weights, leaves, uses, strict=True)
                if u in ("differentiable", "detach"))
    y = f(total)
    for a, u in zip(leaves, uses, strict=True):
        if u == "argmax":
            y = y * (1 + a.argmax())
        elif u == "compare":
            y = y * (a > 0)
    return y


def grads_after_backward(graph) -> list[torch.Tensor | None]:
    """Each leaf's .grad after y.backward(v, inputs=...) on a graph of
    ``leaf_graphs_with_cut_paths`` (its leaves' .grad holding ones first if drawn so)."""
    f, values, uses, weights, seed, named, prefilled = graph
    leaves = [v.clone().requires_grad_() for v in values]
    if prefilled:
        for a in leaves:
            a.grad = torch.ones_like(a)
    targets = None if named is None else [a for a, n in zip(leaves, named, strict=True) if n]
    y_from_leaves(f, leaves, uses, weights).backward(seed, inputs=targets)
    return [a.grad for a in leaves]


def accumulated_by_the_chain_rule(graph, k: int) -> torch.Tensor:
    """What leaf k's .grad holds if backward adds vᵀ ∂y/∂a_k to it: what it held (ones
    or nothing) plus vᵀ J, J of y with respect to a_k by finite differences."""
    f, values, uses, weights, seed, named, prefilled = graph

    def y_of_leaf(t):
        return y_from_leaves(f, [t if j == k else v for j, v in enumerate(values)], uses, weights)
    return (1.0 if prefilled else 0.0) + seed @ finite_difference_jacobian(y_of_leaf, values[k])


def backward_accumulates_into_the_leaves_y_depends_on_differentiably(graph) -> bool:
    """y.backward(v) adds vᵀ ∂y/∂a to a.grad for every leaf a that requires grad and
    that y was computed from through differentiable operations (only the named ones
    with inputs=); a leaf reached only through .detach(), argmax or a comparison, or
    not at all, keeps its .grad (None, or what it held)."""
    f, values, uses, weights, seed, named, prefilled = graph
    for k, grad in enumerate(grads_after_backward(graph)):
        filled = uses[k] == "differentiable" and (named is None or named[k])
        if not filled:
            if (grad is not None) if not prefilled else not torch.equal(grad, torch.ones_like(grad)):
                return False
            continue
        if grad is None or not torch.allclose(grad, accumulated_by_the_chain_rule(graph, k),
                                              atol=1e-5, rtol=1e-5):
            return False
    return True


NAMED_REQUIRES_GRAD = labelled(st.booleans(), "the named tensor requires grad (True) or not (False)")


def leaves_naming_one(graph, requires_grad):
    """For each leaf of a ``leaf_graphs_with_cut_paths`` graph that y is not computed
    from differentiably (every leaf, when ``requires_grad`` is False): ``(k, leaves)``,
    fresh leaves requiring grad except the k-th when ``requires_grad`` is False; the
    k-th holds ones in .grad when the graph says prefilled, else None."""
    _, values, uses, _, _, _, prefilled = graph
    for k, use in enumerate(uses):
        if use == "differentiable" and requires_grad:
            continue
        leaves = [value.clone().requires_grad_() for value in values]
        if not requires_grad:
            leaves[k] = values[k].clone()
        leaves[k].grad = torch.ones_like(leaves[k]) if prefilled else None
        yield k, leaves


def named_not_depended_on_keeps_its_grad_unless_it_does_not_require_grad(graph, requires_grad) -> bool:
    """Each leaf ``leaves_naming_one`` gives, named alone in ``y.backward(v, inputs=[a])``:
    if it requires grad it keeps its .grad (None, or the ones it held), with no error; a
    named tensor that does not require grad (any leaf, made without requires_grad)
    makes backward raise."""
    map_f, _, uses, weights, seed, _, prefilled = graph
    for k, leaves in leaves_naming_one(graph, requires_grad):
        try:
            y_from_leaves(map_f, leaves, uses, weights).backward(seed, inputs=[leaves[k]])
        except RuntimeError:
            if requires_grad:
                raise
            continue
        if not requires_grad:
            return False
        kept = leaves[k].grad
        if (kept is None) == prefilled or (prefilled and not torch.equal(kept, torch.ones_like(kept))):
            return False
    return True


Y_SHAPES = [(3,), (2, 3), (4,), (2, 2, 2)]


def _same_entries_other_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Seed shapes with as many entries as y's ``shape``, none of them ``shape``."""
    n = math.prod(shape)
    return sorted({(n,), (n, 1), (1, n), tuple(reversed(shape)), (*shape, 1)} - {shape})


@named("y's shape (3,), (2, 3), (4,) or (2, 2, 2), and a seed's with as many entries: "
       "(3, 1), (1, 3), y flattened, reversed or with a trailing 1")
def seed_shapes() -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """y's shape, and another shape with as many entries: a seed "with the shape of y"
    is told apart from one with y's number of entries."""
    return st.sampled_from(Y_SHAPES).flatmap(
        lambda shape: st.tuples(st.just(shape), st.sampled_from(_same_entries_other_shapes(shape))))


def _entries_of_y(n: int):
    """y's n entries from a leaf of two: each mixes both (x0 x1 k + x0 + x1)."""
    return lambda t: t.prod() * torch.arange(1.0, n + 1, dtype=t.dtype) + t.sum()


def y_and_seeds(shapes: tuple[tuple[int, ...], tuple[int, ...]]):
    """An output y of ``shapes[0]`` from a leaf of two entries, a seed of y's shape and
    the same entries in ``shapes[1]``; y's graph is kept for a second backward."""
    y_shape, other = shapes
    x = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
    y = _entries_of_y(math.prod(y_shape))(x).reshape(y_shape)
    seed = torch.linspace(-1.0, 2.0, math.prod(y_shape), dtype=torch.float64)
    return x, y, seed.reshape(y_shape), seed.reshape(other)


def multiples_of_one_scalar(fn: Map, seed_kind: str, shape: tuple[int, ...], other_elements: str):
    """An output y of ``shape`` whose elements are multiples of one scalar s of the
    map ``fn`` at its point x: (k + 1) s, or with ``other_elements="constant"`` s
    then 0 s; and a seed, v · ones for ``seed_kind`` "v" or one-hot at the last
    element. Returns x (a leaf that requires grad), the function x -> y and the seed."""
    at = fn.point().requires_grad_()
    count = math.prod(shape)
    scale = torch.arange(1, count + 1, dtype=at.dtype)
    if other_elements == "constant":
        scale = torch.cat([scale[:1], torch.zeros(count - 1, dtype=at.dtype)])
    scale = scale.reshape(shape)

    def y_of(t: torch.Tensor) -> torch.Tensor:
        return ((fn(t) ** 2).sum() + t.sum()) * scale

    if seed_kind == "one-hot":
        seed = torch.zeros(count, dtype=at.dtype)
        seed[count - 1] = 1.0
        return at, y_of, seed.reshape(shape)
    return at, y_of, torch.full(shape, float(seed_kind), dtype=at.dtype)


def backward_takes_a_seed_of_the_shape_of_y_only(shapes) -> None:
    """A seed of y's shape gives vᵀJ; as many entries in another shape are refused."""
    x, y, seed, reshaped = y_and_seeds(shapes)
    y.backward(seed, retain_graph=True)
    J = finite_difference_jacobian(_entries_of_y(seed.numel()), x.detach())
    check_close(x.grad, seed.reshape(-1) @ J, f"{shapes}: a seed of y's shape gives vᵀJ", **TOL)
    try:
        y.backward(reshaped)
    except RuntimeError as error:
        assert "Mismatch in shape" in str(error), (shapes, str(error))
    else:
        raise AssertionError(f"{shapes}: a seed of shape {shapes[1]} was accepted")


# Each property, its family and what it claims: the pages quote their own
# sentences; running this file checks them all at once.
PROPERTIES = [
    (ones_seed_gives_the_diagonal_when_J_is_diagonal, maps_at_points,
     "J diagonal: the ones seed gives diag(J)"),
    (ones_seed_gives_the_diagonal_exactly_when_columns_cancel, maps_at_points,
     "1ᵀJ = diag(J) iff off-diagonal column sums vanish"),
    (one_seed_recovers_every_nonzero_when_columns_hold_one, maps_at_points,
     "one non-zero per column: the ones seed and the pattern rebuild J"),
    (ratio_is_the_diagonal_exactly_when_the_rest_vanishes, maps_at_points,
     "z.grad / z = diag(J) iff the off-diagonal part of zᵀJ vanishes"),
    (seed_times_z_is_elementwise_exactly_when_J_is_diagonal, maps_at_points,
     "zᵀJ = z * diag(J) for every z iff J is diagonal"),
    (elementwise_columns_hold_only_the_diagonal, elementwise_maps_at_points,
     "elementwise: each column's only possible non-zero is the diagonal"),
    (one_entry_per_column_exactly_as_stated, maps_and_inputs,
     "one non-zero per column: elementwise maps, permutations, one output per sample"),
    (one_entry_per_column_when_one_output_per_sample, maps_and_inputs,
     "one output per sample, no BatchNorm: one non-zero per column"),
    (lambda case: diagonal_everywhere_exactly_when_elementwise(*case),
     lambda: st.tuples(maps_with_the_rounded_sum(), THREE_SEEDS),
     "differentiable everywhere: J diagonal everywhere exactly when elementwise"),
    (backward_fills_the_leaves_y_was_computed_from, leaf_graphs,
     "backward fills the leaves y was computed from"),
    (backward_accumulates_into_the_leaves_y_depends_on_differentiably,
     leaf_graphs_with_cut_paths,
     "backward accumulates into the leaves y depends on differentiably"),
    (backward_takes_a_seed_of_the_shape_of_y_only, seed_shapes,
     "backward takes a seed of the shape of y, not only as many entries"),
]


def ones_seed_on_an_intermediate():
    """y = sin(z) for an intermediate z = 2x (a layer's output): what ``z.grad`` holds
    after ``y.backward(ones)`` (None: only leaves get ``.grad``), what
    ``torch.autograd.grad`` returns for the same seed, and cos z, the derivatives."""
    x = torch.linspace(-1, 1, 5, requires_grad=True)
    z = 2 * x
    y = torch.sin(z)
    y.backward(torch.ones_like(y), retain_graph=True)
    with warnings.catch_warnings():  # reading a non-leaf's .grad warns; None is the point
        warnings.simplefilter("ignore", UserWarning)
        left_in_grad = z.grad
    (returned,) = torch.autograd.grad(y, z, torch.ones_like(y))
    return left_in_grad, returned, torch.cos(z.detach())


def main() -> None:
    from oracle import check_property

    for holds, family, claim in PROPERTIES:
        check_property(holds, family(), claim=claim)
    left_in_grad, returned, derivatives = ones_seed_on_an_intermediate()
    assert left_in_grad is None and torch.equal(returned, derivatives)
    print("✓ every seed property holds over its family")


if __name__ == "__main__":
    main()
