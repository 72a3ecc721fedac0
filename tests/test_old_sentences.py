"""The review's false general sentences still fail the page checks that replaced them.

The content review of d247444 (A1, A2, A10, A13, A14, A16, A17; B9, B11, B12, B13)
found general sentences that were false yet passed, because their checks ran the
page's own favourable example. Each page now checks its corrected sentence with
``oracle.check_property`` over a family that holds the review's counterexample. That
keeps the old sentence out only if the members the check draws include one that
breaks it, and a check draws a fixed number of members (its ``examples=``, a cost
budget) from a seed its claim gives.

So each old sentence is written here as a ``holds`` function and replayed as the
page's check draws: with the check's claim (hence its seed), its count and its
families, all read from the record the last ``make html`` kept of it
(``conftest.real_claims``). The members are the page's own, since a check draws from
its seed alone, whatever else the process imported (``oracle.check_property``). The
old sentence must fail on the first member the check draws that is shown as the
member named, not shrunk (a smaller member Hypothesis would make need not be one the
check draws, and finding it costs a run per try); the members drawn before it are
drawn as the check draws them but not run, as a pass would leave the draws the same
(each costs a compilation on some pages). A page whose count is cut, whose family
changes or whose check is rewritten so that the old sentence would pass again fails
here: raise the count to the smallest at which the old sentence fails, or revisit the
replay. More draws are not always stricter: a count draws other members, not only
more of them.
"""

from __future__ import annotations

import contextlib
import copy
import re
import sys
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "snippets"))
from custom_backwards import (  # noqa: E402
    CUSTOM_BACKWARDS,
    BesselJ0,
    SinFromInput,
    custom_backwards,
    jvp_factors,
    with_vmap_support,
)
from custom_second_pass import custom_behaviours, custom_forms, custom_function, second_pass_of  # noqa: E402
from families import (  # noqa: E402
    CLASS_INDEX_LOSSES,
    NON_FINITE_GRADIENTS,
    SEEDS,
    SIZES,
    batches,
    class_index_losses,
    labelled,
    mixing_maps,
    non_finite_gradients,
    points,
    small_networks,
    vector_maps,
)
from forward_saves import forward_ad_cases, forward_mode_saves_nothing  # noqa: E402
from functional_passes import passes_counted, scalar_kinds  # noqa: E402
from oracle import (  # noqa: E402
    ClaimFailed,
    check_close,
    check_property,
    check_text,
    family_name,
    finite_difference_jacobian,
    shown_members,
)
from reader_settings import (  # noqa: E402
    AMP_LOSSES,
    AMP_MODELS,
    LATER_LAYERS,
    amp_losses,
    amp_models,
    autocast_dtypes,
    batch_norm_models,
    compiled_modules,
    compiled_modules_with_inductor,
    later_layers,
    losses_with_linear_terms,
    multi_feature_inputs,
    multi_term_losses,
    non_leaf_inputs,
    sample_batches,
    train_mode_models,
)
from second_backward import (  # noqa: E402
    CONSTANT_DERIVATIVE,
    SIMPLE_OPERATIONS,
    operation_chains,
    survives_a_second_pass,
)
from seed_properties import (  # noqa: E402
    NAMED_REQUIRES_GRAD,
    THREE_SEEDS,
    TOL,
    accumulated_by_the_chain_rule,
    backward_with,
    diagonal_everywhere_makes_elementwise,
    grads_after_backward,
    is_diagonal,
    jacobian,
    jacobian_rows,
    leaf_graphs_with_cut_paths,
    maps_and_inputs,
    maps_at_points,
    maps_with_the_rounded_sum,
    one_entry_per_column,
)


def replay(claims, page: str, quote: str, old_sentence, *families, fails_on: str,
           because: str | None = None) -> None:
    """Replay ``old_sentence`` as the property check of ``docs/<page>.md`` whose quote
    starts with ``quote`` draws, and require it to fail on a member shown as
    ``fails_on``, for the reason ``because`` (none: ``old_sentence`` returned False)."""
    found = [record for record in claims.get(page, []) if record["check"] == "check_property"
             and " ".join(record["quote"].split()).startswith(" ".join(quote.split()))]
    assert len(found) == 1, (f"docs/{page}.md has {len(found)} property checks quoting "
                             f"{quote!r}: its check changed, revisit this replay")
    [record] = found
    where = f"docs/{page}.md:{record['check_line']}"
    assert record["families"] == [family_name(family) for family in families], (
        f"{where} draws from other families than this replay: revisit it")
    def on_the_named_members(*members):  # the others are drawn as the check draws them
        return old_sentence(*members) if fails_on in shown_members(members) else None

    try:
        check_property(on_the_named_members, *families, claim=record["claim"],
                       examples=record["examples"], shrink=False)
    except ClaimFailed as failure:
        member, why = failure.shown, failure.because
    else:
        pytest.fail(f"{where}: the old sentence holds for every one of the check's "
                    f"{record['examples']} members; raise its examples= until it fails",
                    pytrace=False)
    assert fails_on in member, f"{where}: failed on another member: {member}, because: {why}"
    assert (because in why) if because else not why, (
        f"{where}: failed for another reason: {why or 'it returned False'} (on {member})")


# -- A1, A2: when the ones seed gives the diagonal of J -------------------------------

def ones_seed_gives_the_diagonal_when_no_input_feeds_two_outputs(f_x) -> None:
    """The trick works whenever no input feeds two outputs."""
    f, x = f_x
    J = jacobian(f, x)
    if one_entry_per_column(J):
        check_close(backward_with(f, x), torch.diagonal(J), "1ᵀJ = diag J", **TOL)


def ones_seed_misses_the_diagonal_when_an_input_feeds_two_outputs(f_x) -> bool:
    """For any other f (an input feeds two outputs) it gives the wrong numbers."""
    f, x = f_x
    J = jacobian(f, x)
    return one_entry_per_column(J) or not torch.allclose(backward_with(f, x),
                                                         torch.diagonal(J), **TOL)


DIRECTIONS = [
    pytest.param(ones_seed_gives_the_diagonal_when_no_input_feeds_two_outputs,
                 "flip(x) * c", "1ᵀJ = diag J", id="no input feeds two outputs: diagonal"),
    pytest.param(ones_seed_misses_the_diagonal_when_an_input_feeds_two_outputs,
                 "A @ x, A = [[1, 1, 0], [0, 1, 0], [0, -1, 1]]", None,
                 id="an input feeds two: not the diagonal"),
]


@pytest.mark.parametrize("old_sentence, fails_on, because", DIRECTIONS)
def test_a1_the_ones_seed_works_whenever_no_input_feeds_two_outputs(
        real_claims, old_sentence, fails_on, because):
    """A1, index.md:49-50: "The trick works whenever no input feeds two outputs; for
    any other f (softmax, cumsum, a normalization) it silently gives the wrong
    numbers". Both halves are false: flip(x) * c, and a map whose columns cancel."""
    replay(real_claims, "index", "If each $y_i$ depends on $z_i$ alone (as for `torch.sin`)",
           old_sentence, maps_at_points(), fails_on=fails_on, because=because)


@pytest.mark.parametrize("old_sentence, fails_on, because", [
    pytest.param(ones_seed_gives_the_diagonal_when_no_input_feeds_two_outputs,
                 "sin(x[[2, 1, 0, 5, 4, 3]])", "1ᵀJ = diag J", id="no input feeds two outputs: diagonal"),
    DIRECTIONS[1],
])
def test_a2_the_column_sum_is_its_entry_exactly_when_no_input_feeds_two_outputs(
        real_claims, old_sentence, fails_on, because):
    """A2, jacobians-of-vector-functions.md:239-247, read as the landing page sent
    readers to it, for dy_i/dx_i: "That sum is the column's one non-zero entry exactly
    when the column holds at most one, that is, when no input feeds two outputs. …
    A permutation is another"."""
    replay(real_claims, "explanation/jacobians-of-vector-functions",
           r"so $\mathbf{1}^\top J$ equals the diagonal of $J$ exactly when", old_sentence,
           maps_at_points(), fails_on=fails_on, because=because)


# -- A10: what forward mode saves -----------------------------------------------------

@pytest.mark.parametrize("docname, quote", [
    ("explanation/reverse-mode-is-a-chain-of-vjps", "Forward mode has no such cost"),
    ("explanation/forward-mode-jacobian-vector-products", "So forward mode saves nothing"),
    ("explanation/forward-mode-jacobian-vector-products", "It keeps nothing for a later"),
    ("explanation/see-what-autograd-saves-for-backward", "has no such cost"),
    ("explanation/see-what-autograd-saves-for-backward", "Forward mode saves nothing"),
    ("explanation/see-what-autograd-saves-for-backward", "Run it under `torch.no_grad()`"),
])
def test_a10_forward_mode_saves_nothing(real_claims, docname, quote):
    """A10, reverse-mode-is-a-chain-of-vjps.md:330-331, forward-mode-jacobian-vector-
    products.md:371-374 and 427-428, see-what-autograd-saves-for-backward.md:139-141
    and 366: "Forward mode has no such cost at all: it keeps nothing for later" / "it
    also keeps no graph for a later backward pass" / "forward mode saves nothing"."""
    replay(real_claims, docname, quote, lambda case: forward_mode_saves_nothing(*case),
           forward_ad_cases(), fails_on="('network', ")


# -- A13: a diagonal J at every point ---------------------------------------------------

def test_a13_a_diagonal_jacobian_everywhere_makes_f_elementwise(real_claims):
    """A13, jacobians-of-vector-functions.md:161-162: "a diagonal J at every point
    does [make f elementwise]", of the J autograd reports."""
    replay(real_claims, "explanation/jacobians-of-vector-functions",
           "a diagonal $J$ at every point does", diagonal_everywhere_makes_elementwise,
           maps_with_the_rounded_sum(), THREE_SEEDS, fails_on="x + round(sum(x))")


# -- A14: what the ones seed gives for a map that mixes entries --------------------------

def ones_seed_gives_no_entry_of_J(f, seed) -> bool:
    """Anything that mixes entries breaks the trick, and silently: no error, only
    numbers that are no entry of J."""
    x = f.point(seed)
    entries = finite_difference_jacobian(f, x).reshape(1, -1)
    return not torch.isclose(backward_with(f, x).reshape(-1, 1), entries, atol=1e-6).any()


def test_a14_mixing_maps_give_numbers_that_are_no_entry_of_j(real_claims):
    """A14, jacobians-of-vector-functions.md:291-292: "no error, only numbers that are
    no entry of J"."""
    replay(real_claims, "explanation/jacobians-of-vector-functions",
           "`backward` raises no error and returns the column sums", ones_seed_gives_no_entry_of_J,
           mixing_maps(), SEEDS, fails_on="cumprod(x) (n=2)")


# -- A16: z.grad / z ----------------------------------------------------------------------

def ratio_is_wrong_for_any_J_that_is_not_diagonal(f_z) -> bool:
    """z.grad / z is wrong for any J that is not diagonal (at z with no zero entry)."""
    f, z = f_z
    if (z.abs() < 1e-3).any():
        return True  # at a zero it is nan: another sentence
    J = jacobian(f, z)
    return is_diagonal(J) or not torch.allclose(backward_with(f, z, seed=z) / z,
                                                torch.diagonal(J), **TOL)


def test_a16_z_grad_over_z_is_wrong_for_any_non_diagonal_j(real_claims):
    """A16, why-backward-z-gives-z.md:382-383: "`z.grad / z` … wrong for any J that is
    not diagonal"."""
    replay(real_claims, "tutorial/why-backward-z-gives-z", "for a $J$ that is not diagonal",
           ratio_is_wrong_for_any_J_that_is_not_diagonal, maps_at_points(),
           fails_on="A @ x, A = [[1, 1, 0], [0, 1, 0], [0, -1, 1]] (n=3), tensor([1., 1., 1.]")


# -- A17: which leaves backward fills ---------------------------------------------------

def backward_accumulates_into_every_leaf_that_requires_grad(graph) -> bool:
    """backward then accumulates ∂L/∂z into the .grad of every leaf that requires grad
    (or only of those you name in inputs=)."""
    named = graph[5]
    return all(grad is not None and torch.allclose(grad, accumulated_by_the_chain_rule(graph, k),
                                                   atol=1e-5, rtol=1e-5)
               for k, grad in enumerate(grads_after_backward(graph))
               if named is None or named[k])


@pytest.mark.parametrize("docname, quote", [
    ("index", "`backward` then adds"),
    ("tutorial/why-backward-z-gives-z", "`backward` differentiates with respect to every leaf"),
    ("tutorial/why-backward-z-gives-z", "every leaf that requires grad and that `y` was"),
    ("explanation/what-backward-computes", "`backward` differentiates with respect to every leaf"),
    ("reference/glossary", "every leaf that requires grad and that $y$ was"),
    ("reference/look-up-the-questions-people-ask", "`y.backward(z)` adds the vector-Jacobian"),
    ("reference/look-up-the-questions-people-ask", "One `backward` fills `.grad` of every leaf"),
])
def test_a17_backward_fills_every_leaf_that_requires_grad(real_claims, docname, quote):
    """A17, index.md:43-45, why-backward-z-gives-z.md:174-175 and 377-379,
    what-backward-computes.md:191-193 (and the glossary and questions pages, which
    said it too): "`backward` then accumulates ∂L/∂z into the `.grad` of every leaf
    that requires grad"."""
    fails_on = {
        ("index", "`backward` then adds"): "['detach', 'compare', 'differentiable', 'detach']",
        ("tutorial/why-backward-z-gives-z", "`backward` differentiates with respect to every leaf"):
            "['detach', 'differentiable', 'unused']",
        ("tutorial/why-backward-z-gives-z", "every leaf that requires grad and that `y` was"):
            "['unused', 'differentiable']",
        ("explanation/what-backward-computes", "`backward` differentiates with respect to every leaf"):
            "['detach', 'differentiable']",
        ("reference/glossary", "every leaf that requires grad and that $y$ was"): "['differentiable', 'detach']",
        ("reference/look-up-the-questions-people-ask", "`y.backward(z)` adds the vector-Jacobian"):
            "['detach', 'differentiable']",
        ("reference/look-up-the-questions-people-ask", "One `backward` fills `.grad` of every leaf"):
            "['differentiable', 'argmax', 'unused']",
    }[docname, quote]
    replay(real_claims, docname, quote, backward_accumulates_into_every_leaf_that_requires_grad,
           leaf_graphs_with_cut_paths(), fails_on=fails_on)


# -- B9: a graph that needs no saved tensor survives a second pass ----------------------

def survives_when_no_derivative_needs_a_value(chain) -> bool:
    """A graph that saved nothing survives the first pass whole: (x + 1) summed needs
    no saved tensor, so two calls work. Read as readers use it: operations whose
    derivative is a constant (x + 1, or 10 * x, which keeps "only the number 10")
    need nothing saved, so their graph survives."""
    return not set(chain) <= CONSTANT_DERIVATIVE or survives_a_second_pass(
        chain, torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True))


@pytest.mark.parametrize("docname, quote, chains", [
    ("reference/misconceptions", "A second full `backward` (no `inputs=`) without `retain_graph` raises exactly",
     operation_chains()),
    ("reference/look-up-the-questions-people-ask", "Whether a graph survives a second pass",
     operation_chains(SIMPLE_OPERATIONS)),
], ids=["misconceptions", "questions"])
def test_b9_a_graph_that_needs_no_saved_tensor_survives_a_second_pass(
        real_claims, docname, quote, chains):
    """B9, misconceptions.md:317-319 (also look-up-the-questions-people-ask.md:160-161):
    "A graph that saved nothing survives the first pass whole. (x + 1) summed needs no
    saved tensor, so two calls work without retain_graph"."""
    replay(real_claims, docname, quote, survives_when_no_derivative_needs_a_value, chains,
           fails_on="'10 * x'")


# -- B11: one non-zero entry per column, for a batch of samples -------------------------

def one_entry_per_column_for_any_batch_of_independent_samples(member) -> bool:
    """That holds [each column of J has one non-zero entry] for elementwise maps, but
    also for permutations and for a batch of independent per-sample computations."""
    fn, point = member
    if isinstance(fn, torch.nn.Module):  # BatchNorm mixes the samples
        stated = not any(isinstance(m, torch.nn.BatchNorm1d) for m in fn.modules())
    else:
        stated = fn.kind in ("elementwise", "permutation") or fn.name == "sort(x)"
    return one_entry_per_column(jacobian_rows(fn, point)) == stated


@pytest.mark.parametrize("quote", ["That holds for elementwise maps",
                                   "A ones seed gives every non-zero entry of $J$ exactly"])
def test_b11_a_batch_of_independent_samples_has_one_entry_per_column(real_claims, quote):
    """B11, misconceptions.md:258-262 (and its summary, 570-571): "That holds for
    elementwise maps …, but also for permutations and for a batch of independent
    per-sample computations.", without "one scalar output per sample"."""
    replay(real_claims, "reference/misconceptions", quote,
           one_entry_per_column_for_any_batch_of_independent_samples, maps_and_inputs(),
           fails_on={"That holds for elementwise maps": "Linear(6→3) · ReLU · Linear(3→2)",
                     "A ones seed gives every non-zero entry of $J$ exactly": "Linear(2→2) · ReLU · Linear(2→2)"}[quote])


# -- B12: reverse passes of torch.autograd.functional's jvp and hvp ---------------------

def jvp_and_hvp_run_reverse_mode_twice(fn, scalar_kind) -> None:
    """the jvp and hvp of torch.autograd.functional run reverse mode twice"""
    counted = passes_counted(fn, scalar_kind)[:2]
    if counted != (2, 2):
        raise AssertionError(f"jvp and hvp ran {counted} reverse passes")


@pytest.mark.parametrize("quote", [
    "`functional.jvp` runs two reverse passes",
    "`torch.autograd.functional.jvp` runs reverse mode twice and `torch.autograd",
    "`torch.autograd.functional.jvp` runs reverse mode twice and `hvp` three times",
])
def test_b12_functional_jvp_and_hvp_run_reverse_mode_twice(real_claims, quote):
    """B12, differentiation-apis.md:14-16, 513 and 761: "the `jvp` and `hvp` of
    `torch.autograd.functional` run reverse mode twice"."""
    replay(real_claims, "reference/differentiation-apis", quote,
           jvp_and_hvp_run_reverse_mode_twice, vector_maps(), scalar_kinds(),
           fails_on="(fn(x) ** 2).sum()", because="jvp and hvp ran (2, 3) reverse passes")


# -- B13: the shape column of the API table ---------------------------------------------

# differentiation-apis.md draws its shapes in a hidden cell: x's of up to three
# dimensions, y's, s's and aux's of up to two, a batch size and a seed.
INPUT_SHAPES = st.lists(st.integers(1, 3), max_size=3).map(tuple)
OTHER_SHAPES = st.lists(st.integers(1, 3), max_size=2).map(tuple)
TABLE_FAMILIES = (INPUT_SHAPES, OTHER_SHAPES, OTHER_SHAPES, OTHER_SHAPES, st.integers(1, 4),
                  st.integers(0, 2**16))


def old_shape_rule(row: str):
    """The d247444 table's rule for ``row``, as a property of drawn shapes: what the
    API returns for a scalar f of x, a second argument s, an aux output and a batch."""
    def holds(x_shape, y_shape, s_shape, aux_shape, batch, seed) -> None:
        generator = torch.Generator().manual_seed(seed)
        x, s, xs = (torch.randn(shape, dtype=torch.float64, generator=generator)
                    for shape in (x_shape, s_shape, (batch, *x_shape)))

        def f(t):
            return (t ** 3).sum()
        if row == "torch.func.grad(f, has_aux=True)":
            aux = lambda t: t.sum() * torch.ones(aux_shape, dtype=t.dtype)  # noqa: E731
            got = torch.func.grad(lambda t: (f(t), aux(t)), has_aux=True)(x)
            rule, says = "(x.shape, y.shape)", (x_shape, ())
        elif row == "torch.func.grad(f, argnums=(0, 1))":
            got = torch.func.grad(lambda t, r: f(t) * (r ** 2).sum(), argnums=(0, 1))(x, s)
            rule, says = "(x.shape, x.shape)", (x_shape, x_shape)
        else:
            got, rule, says = (torch.func.vmap(torch.func.grad(f))(xs),), "(5,) + x.shape", ((5, *x_shape),)
        shapes = tuple(tuple(t.shape) for t in got)
        if shapes != says:
            raise AssertionError(f"{row} returned shapes {shapes}, not {rule}")
    return holds


@pytest.mark.parametrize("row, fails_on, because", [
    ("torch.func.grad(f, has_aux=True)", "(1, 1, 1), (2, 3), (), (2, 1)", "shapes ((1, 1, 1), (2, 1)), not"),
    ("torch.func.grad(f, argnums=(0, 1))", "(1, 1, 1), (2, 3), (), (2, 1)", "shapes ((1, 1, 1), ()), not"),
    ("torch.func.vmap", "(), (), (), (), 1, 0", "shapes ((1,),), not"),
], ids=["grad has_aux", "grad argnums", "vmap"])
def test_b13_the_shape_column_was_the_examples_values(real_claims, row, fails_on, because):
    """B13, differentiation-apis.md:50-52 with rows 115-122 and 151-154: "the last
    column is an expression in `x` (the input) and `y` (the output `f(x)`)", with
    `(x.shape, y.shape)` for grad(has_aux=True), `(x.shape, x.shape)` for
    argnums=(0, 1) and `(5,) + x.shape` for vmap."""
    replay(real_claims, "reference/differentiation-apis", "Each rule holds for inputs and outputs",
           old_shape_rule(row), *TABLE_FAMILIES, fails_on=fails_on, because=because)


# -- M3 (review A of d59c23e): the Jacobians page's summary on per-sample computations --

def every_non_zero_for_any_independent_per_sample_computation(member) -> None:
    """They are every non-zero entry of J when each column holds at most one
    (… independent per-sample computations), without "one scalar output per sample"."""
    fn, point = member
    if isinstance(fn, torch.nn.Module) and not any(
            isinstance(m, torch.nn.BatchNorm1d) for m in fn.modules()):
        assert one_entry_per_column(jacobian_rows(fn, point)), f"{fn}: a column holds two non-zeros"


def test_m3_independent_per_sample_computations_hold_one_entry_per_column(real_claims):
    """M3, jacobians-of-vector-functions.md:552-556 (Summary): "independent per-sample
    computations" among the maps whose columns hold at most one non-zero."""
    replay(real_claims, "explanation/jacobians-of-vector-functions",
           "independent per-sample computations with one scalar output per",
           every_non_zero_for_any_independent_per_sample_computation, maps_and_inputs(),
           fails_on="Linear(", because="a column holds two non-zeros")


# -- Review B of d59c23e: recipes checked on the page's toy, replayed in readers' settings --


def bessel_loss_backward_raises(other_terms) -> bool:
    """M2/C2, handle-operations-with-no-useful-derivative.md:311-315: a Bessel
    function has no grad_fn, "and `backward` raises "element 0 of tensors does not
    require grad" further on"."""
    x = torch.tensor([0.5, 1.0, 2.5], dtype=torch.float64, requires_grad=True)
    try:
        (torch.special.bessel_j0(x).sum() + other_terms(x)).backward()
    except RuntimeError:
        return True
    return False


def test_m2_a_bessel_term_beside_others_raises_nothing(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "if the loss has other terms", bessel_loss_backward_raises,
           multi_term_losses(terms=st.integers(0, 3)), fails_on="x.abs().mean() + x.sin().sum()")


def ones_seed_on_the_first_derivative_gives_u_xx(setting) -> None:
    """M5/C3, differentiate-a-network-output-with-respect-to-its-input.md:319-320:
    "Per sample, one output: `u_x = grad(u, x, ones_like(u), create_graph=True)`, then
    `u_xx = grad(u_x, x, ones_like(u_x), create_graph=True)`", with no condition on
    the number of input features."""
    model, x = setting.model, setting.inputs
    u = model(x)
    (u_x,) = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)
    (u_xx,) = torch.autograd.grad(u_x, x, torch.ones_like(u_x))
    H = torch.func.vmap(torch.func.hessian(lambda row: model(row[None])[0, 0]))(x.detach())
    check_close(u_xx[:, 0], H[:, 0, 0], f"{setting}: the recipe gives u_xx")


def test_m5_the_ones_seed_mixes_partials_with_two_input_features(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "Per sample, one output, one input feature (`grad` returns a tuple):", ones_seed_on_the_first_derivative_gives_u_xx,
           multi_feature_inputs(), fails_on="(4, 2) inputs", because="the recipe gives u_xx")


def norm_over_dim_1_is_the_per_sample_penalty(setting) -> None:
    """M6, penalize-the-gradient-with-respect-to-the-inputs.md:53-54, 87-89: the
    labml.ai structure with `penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()`."""
    model, x = setting.model, setting.inputs
    s = model(x)
    (g,) = torch.autograd.grad(s, x, torch.ones_like(s))
    alone = torch.stack([(torch.autograd.grad(model(x[i:i + 1]).sum(), x)[0][i].norm() - 1) ** 2
                         for i in range(len(x))]).mean()
    check_close(((g.norm(2, dim=1) - 1) ** 2).mean(), alone, f"{setting}: the penalty is per sample")


def test_m6_the_penalty_without_flatten_is_per_pixel_on_images(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
           "flattening each sample before the norm", norm_over_dim_1_is_the_per_sample_penalty,
           sample_batches(), fails_on="images", because="the penalty is per sample")


def grad_scaler_fixes_a_forward_overflow(dtype, *_) -> bool:
    """M1, debug-nan-and-wrong-gradients.md:372: "| a float16 loss under AMP | float16
    overflows to `inf` | `torch.amp.GradScaler`, which skips a step whose gradients
    hold `inf` or `nan` |": with GradScaler, training goes on with a finite loss (on
    the loss alone, whatever layers, loss and learning rate the check draws)."""
    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.fill_(350.0)
        layer.bias.zero_()
    optimizer = torch.optim.SGD(layer.parameters(), lr=1e-12)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    for _ in range(3):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype):
            loss = layer(torch.full((1, 2), 100.0)).float().mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return bool(loss.isfinite())


def test_m1_grad_scaler_leaves_a_float16_forward_overflow(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "`GradScaler` does not fix it",
           grad_scaler_fixes_a_forward_overflow, autocast_dtypes(), later_layers(), losses_with_linear_terms(),
           LEARNING_RATES, fails_on="torch.float16")


def log_softmax_of_finite_logits_is_finite(dtype, fraction) -> bool:
    """E2/C5, debug-nan-and-wrong-gradients.md: `log_softmax` "stays finite for any
    finite logits", on the dtype-wide check's logits +m, -m, 0 whose spread
    2m is the drawn fraction of the dtype's largest value."""
    m = fraction * torch.finfo(dtype).max / 2
    z = torch.tensor([m, -m, 0.0], dtype=dtype)
    return not torch.isfinite(z).all() or bool(torch.isfinite(torch.log_softmax(z, -1)).all())


def test_e2_log_softmax_overflows_when_the_logits_spread_past_their_dtype(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "minus the smallest is finite in the",
           log_softmax_of_finite_logits_is_finite,
           labelled(st.sampled_from([torch.float32, torch.float16, torch.bfloat16]), "dtypes of the logits"),
           labelled(st.sampled_from([0.5, 0.9, 1.2, 1.8]), "spreads as a fraction of the dtype's largest value"),
           fails_on="")


def log_softmax_finite_while_the_float32_spread_is(logits, dtype, fraction) -> bool:
    """r56g-3 C, debug-nan-and-wrong-gradients.md (68e5c17:1156-1158): the check on drawn
    logits cast them to float32, so "finite in the logits' dtype" read as "finite in
    float32" passed it; float16 logits whose spread passes 65504 give -inf."""
    spread, middle = logits.max() - logits.min(), (logits.max() + logits.min()) / 2
    scaled = (logits - middle) / spread * fraction * torch.finfo(dtype).max if spread > 0 else logits
    z = scaled.to(dtype)
    return bool(torch.isfinite(torch.log_softmax(z, -1)).all()) == bool(
        torch.isfinite(z.float().max() - z.float().min()))


def test_r56g_3_log_softmax_on_drawn_logits_in_float16(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "it stays finite while the largest logit minus",
           log_softmax_finite_while_the_float32_spread_is, points(n=st.integers(2, 6)),
           labelled(st.sampled_from([torch.float32, torch.float16, torch.bfloat16]), "dtypes of the logits"),
           labelled(st.sampled_from((1e-3, 0.5, 0.9, 1.2, 1.8)), "spreads as a fraction of the dtype's largest value"),
           fails_on="torch.float16")


def printed_norm_is_finite_where_the_gradient_is(dtype, entry) -> bool:
    """r62g-1 M, debug-nan-and-wrong-gradients.md (e6a1179:1001-1003): "prints
    `p.grad.norm()` for each `p`": in a float16 model the norm is computed in float16
    and is inf once it passes 65504, every entry of the gradient finite."""
    layer = torch.nn.Linear(1000, 1).to(dtype)
    layer(torch.full((1, 1000), entry).to(dtype)).sum().backward()
    return all(bool(p.grad.norm().isfinite()) == bool(p.grad.isfinite().all()) for p in layer.parameters())


def test_r62g_1_a_float16_gradient_s_norm_overflows(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "prints `p.grad.double().norm()` for each `p`",
           printed_norm_is_finite_where_the_gradient_is,
           labelled(st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64]),
                    "models in float16, bfloat16, float32, float64"),
           labelled(st.sampled_from([1.0, 2400.0, 1e25, float("inf"), float("nan")]),
                    "gradient entries 1, 2400, 1e25, inf, nan"),
           fails_on="torch.float16")


class Double(torch.autograd.Function):
    """error-messages.md's Double, rewritten with setup_context: no vmap rule, no jvp."""
    @staticmethod
    def forward(t):
        return 2 * t

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


def summed(f):
    return lambda t: f(t).sum()


TRANSFORMS = {"grad": lambda f: torch.func.grad(summed(f)), "jacrev": torch.func.jacrev,
              "jacfwd": torch.func.jacfwd, "vmap": torch.func.vmap,
              "vmap(grad)": lambda f: torch.func.vmap(torch.func.grad(summed(f))),
              "torch.func.jvp": lambda f: lambda t: torch.func.jvp(f, (t,), (torch.ones_like(t),))[1],
              "hessian": lambda f: torch.func.hessian(summed(f))}


def double_needs_the_rule_for_vmap_and_jacrev(transform) -> bool:
    """E1/C1, error-messages.md:1351-1353: "add `generate_vmap_rule = True` for `vmap`
    and `jacrev`": exactly those two refuse a Function without the rule."""
    try:
        TRANSFORMS[transform](Double.apply)(torch.ones(3, 2))
    except RuntimeError:
        return transform in ("vmap", "jacrev")
    return transform not in ("vmap", "jacrev")


def test_e1_jacrev_needs_no_vmap_rule(real_claims):
    replay(real_claims, "reference/error-messages", "`grad` and `jacrev` then work",
           double_needs_the_rule_for_vmap_and_jacrev,
           st.sampled_from(["grad", "jacrev", "jacfwd", "vmap", "vmap(grad)"]), fails_on="'vmap(grad)'")


def batch_sum_trick_is_the_ones_seed(net, data) -> bool:
    """M4/C6, differentiate-elementwise-functions-at-many-points.md:251-256: the
    one-scalar-output ones seed "is the batch-Jacobian trick of the torch.func
    tutorial (`jacrev` of `model(x).sum(0)`)"."""
    batch = data.draw(batches(features=net.in_features))
    by_sum = torch.autograd.functional.jacobian(lambda b: net(b).sum(0), batch)
    leaf = batch.clone().requires_grad_(True)
    out = net(leaf)
    (seeded,) = torch.autograd.grad(out, leaf, torch.ones_like(out))
    return by_sum.shape[0] == 1 and torch.allclose(by_sum[0], seeded)


def test_m4_the_batch_sum_trick_handles_several_outputs(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "the input: `(outputs, batch, inputs)` for rows. It needs only samples", batch_sum_trick_is_the_ones_seed,
           small_networks(), st.data(), fails_on="Linear")


# -- The audit of the proof marks (20261204): the explanations and tutorials ------------

from families import shaped_maps  # noqa: E402


def functional_jacobian_is_the_flat_m_by_n_matrix(f) -> None:
    """tutorial/compute-your-first-jacobian:366 (PARTIAL), as its old check read it: on
    the page's (2,) -> (3,) example `y.shape + x.shape` is also (m, n), so nothing told
    the rule from a flattened m × n matrix."""
    x = f.point()
    J = torch.autograd.functional.jacobian(f, x)
    assert tuple(J.shape) == (f(x).numel(), x.numel()), f"shape {tuple(J.shape)}"


def test_audit38_jacobian_shape_rule_is_checked_beyond_vectors(real_claims):
    replay(real_claims, "tutorial/compute-your-first-jacobian",
           "`torch.autograd.functional.jacobian(f, x)` returns $J$ with shape",
           functional_jacobian_is_the_flat_m_by_n_matrix, shaped_maps(), fails_on="sin(A x)",
           because="shape")


def columns_hold_several_non_zeros(J: torch.Tensor) -> bool:
    """The old check of jacobians-of-vector-functions:495, "Softmax gave zeros above.":
    it read the softmax Jacobian's pattern, not what the ones seed gave."""
    return bool(((J != 0).sum(dim=0) > 1).all())


def test_audit5_softmax_gave_zeros_is_checked_on_the_seeded_gradient(real_claims):
    """The page's check now compares the ones-seeded gradient with zeros; on a map whose
    columns are as dense but do not sum to zero (log_softmax) the old check still passed,
    the new comparison fails."""
    [record] = [r for r in real_claims["explanation/jacobians-of-vector-functions"]
                if r["quote"] == "Softmax gave zeros above."]
    assert record["check"] == "check_close" and ".grad" in record["compared"], record
    x = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0])
    not_softmax = lambda t: torch.log_softmax(t, 0)  # noqa: E731
    assert columns_hold_several_non_zeros(finite_difference_jacobian(not_softmax, x))
    seeded = x.clone().requires_grad_()
    not_softmax(seeded).backward(torch.ones(5))
    with pytest.raises(ClaimFailed):
        check_close(seeded.grad, torch.zeros(5), "the ones seed gives zeros")


# -- Issue 37's audit of the how-to pages: sentences checked at a few points, now over a family --

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def naive_softplus_is_finite_everywhere(dtype, values) -> None:
    """write-a-custom-autograd-function.md, "Finite everywhere, and 0.5 at 0.", was
    checked at the four float32 points of the page, where a softplus that overflows
    (the naive log1p(exp(x)) the page starts from) fails only at 100. Replayed with
    that softplus, the family must reach an overflowing input."""
    top = torch.finfo(dtype).max
    at = torch.tensor(values, dtype=torch.float64).clamp(-top, top).to(dtype).requires_grad_()
    out = torch.log1p(torch.exp(at))
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(at.grad).all(), "not finite"


def test_audit_the_finite_softplus_is_checked_where_a_naive_one_overflows(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function",
           "Its output and gradient are finite at every finite input", naive_softplus_is_finite_everywhere,
           st.sampled_from(FLOAT_DTYPES),
           st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=6),
           fails_on="torch.", because="not finite")


def detach_shares_the_leafs_storage(case) -> None:
    """stop-gradients.md's table row for `t.detach()` ("a new tensor sharing `t`'s
    storage") was checked on a leaf only, where t's storage is the leaf's. Read as
    "a write into the detached tensor reaches the leaf x", it fails for a copy or a
    cast of x, as `x.to(device)` is."""
    with torch.no_grad():
        case.tensor.detach().reshape(-1)[0] = 123.0
    assert case.leaf.reshape(-1)[0].item() == 123.0, "the leaf kept its value"


def test_audit_detach_shares_t_storage_not_the_leafs(real_claims):
    replay(real_claims, "how-to/stop-gradients", "| `t.detach()` | one tensor |",
           detach_shares_the_leafs_storage, non_leaf_inputs(), fails_on="then x",
           because="the leaf kept its value")


def second_backward_fails_when_an_operation_needs_a_value(chain) -> None:
    """accumulate-zero-and-reuse-gradients.md, "A second backward fails where the
    first freed a saved tensor", was checked on `exp` alone. The belief it must rule
    out: a second pass fails exactly when some derivative needs a value of x, which
    `10 * x` (it saves its 10) breaks."""
    raises = not survives_a_second_pass(chain, torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True))
    assert raises == any(name not in CONSTANT_DERIVATIVE for name in chain), "the belief fails"


def test_audit_a_second_backward_fails_on_a_saved_constant_too(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "A second backward fails where the first freed", second_backward_fails_when_an_operation_needs_a_value,
           operation_chains(), fails_on="['x / 2', 'x.reshape(-1)', 'x + 1']", because="the belief fails")


def whole_batch_norm_penalty_is_16(batch, bias) -> None:
    """penalize-the-gradient-with-respect-to-the-inputs.md, exercise 2, "predict the
    penalty for any batch", was checked by the critic's weight alone. An answer that
    takes one norm over the whole batch (no `dim=1`) is 16 for one sample only."""
    at = batch.clone().requires_grad_(True)
    scores = at @ torch.tensor([3.0, 4.0], dtype=at.dtype) + bias
    (gradient,) = torch.autograd.grad(scores, at, torch.ones_like(scores))
    check_close((gradient.norm() - 1) ** 2, torch.tensor(16.0), "the penalty is 16")


def test_audit_the_linear_critic_penalty_is_checked_on_batches(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
           "For a linear critic $D(x) = w^\\top x + b$", whole_batch_norm_penalty_is_16,
           batches(features=2), st.floats(-100, 100, allow_nan=False), fails_on="tensor(",
           because="the penalty is 16")


# -- Issue 39's reading of the how-to pages (s2): recipes replayed in the settings they missed --

STEPS = {"ceil": torch.ceil, "floor": torch.floor, "round": torch.round, "sign": torch.sign,
         "trunc": torch.trunc}


def the_same_line_works_for_any_step(form, name, dtype, values) -> None:
    """S1/S2, handle-operations-with-no-useful-derivative.md:272-275: "The same line
    works for any step: replace `x.round()` with `x.floor()`, `torch.sign(x)`", checked
    on float64 points in [-10, 10]. Replayed with that line on the exact form's draws
    (every step, every floating dtype, magnitudes up to 1e9)."""
    top = torch.finfo(dtype).max
    point = torch.tensor(values, dtype=torch.float64).clamp(-top, top).to(dtype)
    leaf = point.clone().requires_grad_(True)
    out = leaf + (STEPS[name](leaf) - leaf).detach()
    assert torch.equal(out.detach(), STEPS[name](point)), "forward is not the step"


def test_s1_the_straight_through_line_loses_a_far_step_to_rounding(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "Write `x - x.detach() + step(x).detach()` instead, exact for every finite input of these five steps",
           the_same_line_works_for_any_step,
           st.just("x - x.detach() + step(x).detach()"), st.sampled_from(sorted(STEPS)),
           st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64]),
           st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=6),
           fails_on="'sign'", because="forward is not the step")


def mean_of_the_unreduced_loss_is_the_builtin_mean(size, classes, weighted, ignored, seed, soft) -> None:
    """S3, backpropagate-from-a-non-scalar-output.md:36-38, 632-635: for a loss with
    `reduction='none'`, "`loss.mean().backward()` gives the gradient of the mean loss,
    the one a training step wants", checked on (w - 1) ** 2 alone. Replayed on the
    draws of the check of cross_entropy's mean with class weights and ignore_index
    (its class-probability members, where the mean is right, are skipped)."""
    if soft:
        return
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(size, classes, dtype=torch.float64, generator=generator)
    labels = torch.randint(classes, (size,), generator=generator)
    labels[:min(ignored, size - 1)] = -100
    class_weight = torch.rand(classes, dtype=torch.float64, generator=generator) + 0.1 if weighted else None
    check_close(torch.nn.functional.cross_entropy(scores, labels, weight=class_weight, reduction="none").mean(),
                torch.nn.functional.cross_entropy(scores, labels, weight=class_weight), "the built-in mean")


def test_s3_mean_of_an_unreduced_weighted_or_ignoring_loss_is_another_number(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "A classification loss with class-index targets", mean_of_the_unreduced_loss_is_the_builtin_mean,
           *COUNTED_WEIGHT_FAMILIES, fails_on=", False", because="the built-in mean")


COUNTED_WEIGHT_FAMILIES = (
    labelled(st.integers(2, 8), "batch sizes 2 to 8"), labelled(st.integers(2, 5), "2 to 5 classes"),
    labelled(st.booleans(), "class weights: yes or no"), labelled(st.integers(0, 3), "0 to 3 ignored targets"),
    labelled(SEEDS, "seeds of scores, labels and class weights"),
    labelled(st.booleans(), "class-index targets or class probabilities"))


def any_weighted_classification_mean_divides_by_the_counted_weights(size, classes, weighted, ignored,
                                                                    seed, soft) -> None:
    """s10 A1, backpropagate-from-a-non-scalar-output.md (19af9dd:903-906): "A
    classification loss with class `weight=` or `ignore_index` (cross_entropy,
    nll_loss) averages over the weights of the targets it counts [...]: divide the
    sum by those weights", of cross_entropy with class probabilities too, whose
    counted weight is each sample's probabilities times the class weights."""
    if not soft:
        return
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(size, classes, dtype=torch.float64, generator=generator)
    probabilities = torch.rand(size, classes, dtype=torch.float64, generator=generator).softmax(1)
    class_weight = torch.rand(classes, dtype=torch.float64, generator=generator) + 0.1 if weighted else None
    each = torch.nn.functional.cross_entropy(scores, probabilities, weight=class_weight, reduction="none")
    counted = probabilities.sum() if class_weight is None else (probabilities * class_weight).sum()
    check_close(each.sum() / counted,
                torch.nn.functional.cross_entropy(scores, probabilities, weight=class_weight),
                "the built-in mean")


def test_s10_a1_class_probability_targets_average_over_the_samples(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "with class probabilities as targets, `cross_entropy` averages over the samples",
           any_weighted_classification_mean_divides_by_the_counted_weights,
           *COUNTED_WEIGHT_FAMILIES, fails_on="8, 5, True, 1, ", because="the built-in mean")


def none_is_refused_for_an_input_that_requires_grad(wants_grad, returns_none, other_paths) -> bool:
    """S4/S5, write-a-custom-autograd-function.md:375-376: "(`None` for inputs that are
    not tensors or need no gradient)", checked by `w.grad is None` for a `w` that needs
    no gradient. Read as a rule, None anywhere else is refused: autograd accepts it."""
    from custom_backwards import returning_none

    inputs, returns_none, loss = returning_none(wants_grad, returns_none, other_paths)
    try:
        loss().backward()
    except RuntimeError:
        return True
    return not any(wants and none for wants, none in zip(wants_grad, returns_none))


NONE_FAMILIES = (st.lists(st.booleans(), min_size=1, max_size=3).filter(any), st.lists(st.booleans(), max_size=3),
                 labelled(st.booleans(), "each input also feeding a plain sum, or not"))


def test_s5_none_for_an_input_that_requires_grad_is_accepted_as_zero(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function",
           "For an input that requires grad, `None` means no gradient through this Function",
           none_is_refused_for_an_input_that_requires_grad, *NONE_FAMILIES, fails_on="True")


def penalty_through_compile_raises_one_of_the_two_messages(setting) -> bool:
    """look-up-the-questions-people-ask.md (d59c23e:1002): "differentiating a gradient
    again (a Hessian, a gradient penalty) raises "torch.compile with aot_autograd does
    not currently support double backward" or, depending on the inputs, "appears to not
    have been used in the graph"": a compiled critic's penalty, after a training step,
    fails with one of those. The critic is compiled afresh, as the page's check does:
    which error comes depends on the first backward the compiled module ran."""
    import copy

    from compiled_double_backward import DOUBLE_BACKWARD, NOT_USED

    critic = torch.compile(copy.deepcopy(setting.model._orig_mod), backend="aot_eager")
    x_hat = setting.inputs.detach().requires_grad_()
    torch.autograd.grad(critic(x_hat).sum(), x_hat)   # a training step
    scores = critic(x_hat)
    try:
        (gradients,) = torch.autograd.grad(scores, x_hat, torch.ones_like(scores), create_graph=True)
        ((gradients.norm(dim=1) - 1) ** 2).mean().backward()
    except RuntimeError as error:
        if str(error).startswith((DOUBLE_BACKWARD, NOT_USED)):
            return True
        raise
    return False


def test_lookup_a_compiled_critic_fails_at_its_first_create_graph(real_claims):
    from reader_settings import compiled_modules

    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "Through a compiled module with parameters, the first",
           penalty_through_compile_raises_one_of_the_two_messages, compiled_modules(),
           fails_on="compiled MLP", because="non-empty donated buffers")


def a_hessian_through_compile_raises_one_of_the_two_messages(g, seed, backend="aot_eager") -> bool:
    """The same old sentence, for "a Hessian": torch.autograd.functional.hessian of a
    compiled function raises one of the two messages."""
    from compiled_double_backward import DOUBLE_BACKWARD, NOT_USED

    torch._dynamo.reset()
    compiled = torch.compile(lambda t: g(t).sum(), backend=backend)
    try:
        torch.autograd.functional.hessian(compiled, g.point(seed))
    except RuntimeError as error:
        return str(error).startswith((DOUBLE_BACKWARD, NOT_USED))
    return False


def test_lookup_a_compiled_hessian_can_be_silently_zero(real_claims):
    from families import elementwise_maps

    compile_backends = st.sampled_from(["aot_eager", "inductor"])  # the page's family since audit s56 #3
    compile_backends.family_name = 'backend "aot_eager" or the default, "inductor"'

    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "`torch.autograd.functional.hessian` of a compiled",
           a_hessian_through_compile_raises_one_of_the_two_messages, elementwise_maps(), st.integers(0, 2**16),
           compile_backends, fails_on="(n=")


# -- Audit 2026-12-04, reference/glossary:576: the one-pass check always seeded ones ----

def one_pass_gives_the_ones_seed_product(A_map, seed) -> None:
    """The old check seeded every member with ones, so a backward that ignored its
    seed and always gave 1ᵀJ passed it: "one pass gives vᵀJ for one seed" was
    proven for v = 1 only. The check now draws v; this reading must fail on it."""
    at = A_map.point().requires_grad_()
    out = A_map(at)
    drawn_v = torch.randn(out.shape, dtype=out.dtype,
                          generator=torch.Generator().manual_seed(seed))
    out.backward(torch.ones_like(out))
    check_close(at.grad, drawn_v @ jacobian(A_map, at.detach()), "one backward gives vᵀJ")


def test_audit_glossary_one_pass_is_checked_for_drawn_seeds(real_claims):
    from families import SIZES, labelled, linear_maps

    replay(real_claims, "reference/glossary", r"One pass gives $v^\top J$ for one seed",
           one_pass_gives_the_ones_seed_product,
           st.one_of(linear_maps(n=st.integers(1, 64), m=SIZES), vector_maps()), labelled(SEEDS, "seeds of v"),
           fails_on="(n=", because="one backward gives vᵀJ")


# -- Reference reading (s2): a view made under no_grad or inference_mode keeps the flag --

GLOSSARY_OPS = {
    "x * 2": lambda t: t * 2, "sin": torch.sin, "x.sum()": lambda t: t.sum(),
    "x.double()": lambda t: t.double(), "x @ x": lambda t: t @ t,
    "x[0]": lambda t: t[0], "x[1:]": lambda t: t[1:],
    "x.view(3, 1)": lambda t: t.view(3, 1), "x.unsqueeze(0)": lambda t: t.unsqueeze(0),
    "argmax": torch.argmax, "x > 0": lambda t: t > 0, "x.long()": lambda t: t.long(),
    "x.int()": lambda t: t.int(), "argsort": torch.argsort, "x == 1": lambda t: t == 1,
    "x.bool()": lambda t: t.bool(), "isnan": torch.isnan,
    "x.to(torch.uint8)": lambda t: t.to(torch.uint8),
    "histc": lambda t: torch.histc(t, bins=4), "zeros_like": torch.zeros_like,
    "bessel_j0": torch.special.bessel_j0,  # the page's since r60d-1
    "x // 2": lambda t: t // 2, "heaviside": lambda t: torch.heaviside(t, torch.tensor(0.5)),
    "floor_divide(x, 3)": lambda t: torch.floor_divide(t, 3),
    # calls with nothing to do on a float32 CPU x (the page's since r27r1 R5): x itself
    "x.float()": lambda t: t.float(), "x.to(torch.float32)": lambda t: t.to(torch.float32),
    "x.contiguous()": lambda t: t.contiguous(), "x.type_as(x)": lambda t: t.type_as(t),
    "x.cpu()": lambda t: t.cpu()}
GLOSSARY_OPERATIONS = tuple(GLOSSARY_OPS)
# the page's third family since r27r1 R5; the old sentences said nothing of it
MADE_AS_LEAF_TIMES_ONE = labelled(st.booleans(), "x.float() and the like on leaf * 1 (else the leaf)")
GLOSSARY_CONTEXTS = {"plain": torch.enable_grad, "no_grad": torch.no_grad,
                     "inference_mode": torch.inference_mode}


def nothing_made_under_no_grad_requires_grad(op_name, context, made=False) -> bool:
    """glossary.md (requires_grad, no_grad): "The result of an operation on such a
    tensor inherits it, except inside no_grad or inference mode"; "results do not
    require grad". A view of a tensor that requires grad keeps the flag there."""
    leaf = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with GLOSSARY_CONTEXTS[context]():
        result = GLOSSARY_OPS[op_name](leaf)
    return context == "plain" or not result.requires_grad


def test_reading_views_under_no_grad_keep_requires_grad(real_claims):
    replay(real_claims, "reference/glossary",
           "The result of an operation on such a tensor inherits it, except for",
           nothing_made_under_no_grad_requires_grad, st.sampled_from(sorted(GLOSSARY_OPERATIONS)),
           st.sampled_from(["inference_mode", "no_grad", "plain"]), MADE_AS_LEAF_TIMES_ONE, fails_on="x")


# -- Reading refB (s17) R2: "no derivative to carry" is not PyTorch's rule --

NO_DERIVATIVE_TO_CARRY = ("argmax", "x > 0", "x.long()", "x.int()", "argsort", "x == 1",
                          "x.bool()", "isnan", "x.to(torch.uint8)", "x // 2", "heaviside",
                          "floor_divide(x, 3)")


def results_with_no_derivative_to_carry_do_not_inherit(op_name, context, made=False) -> bool:
    """glossary.md (requires_grad, before s17): "inherits it, except for results
    with no derivative to carry (indices and booleans ...)". `x // 2` and
    `heaviside` have none, yet keep the flag (backward raises); like the page's
    check, each member also runs the operations the entry now names."""
    return not any(context == "plain" and name in NO_DERIVATIVE_TO_CARRY and result.requires_grad
                   for name, _, result in _glossary_results(op_name, context))


def _glossary_results(op_name, context):
    """(name, leaf, result) for the drawn operation and every one the entry names,
    run on a fresh leaf in the drawn context, as the page's check runs them."""
    for name in dict.fromkeys((op_name, "argmax", "x > 0", "x.long()", "x.int()", "x[0]",
                               "histc", "zeros_like", "bessel_j0", "x // 2", "heaviside")):
        leaf = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        with GLOSSARY_CONTEXTS[context]():
            result = GLOSSARY_OPS[name](leaf)
        yield name, leaf, result


def every_operation_with_no_formula_passes_the_flag_and_raises(op_name, context, made=False) -> bool:
    """r60d-1, glossary.md (requires_grad, f68f664:2472-2474): "An operation with no
    derivative formula, such as `x // 2` or `heaviside`, still passes the flag on, and
    `backward` through it raises". torch.special.bessel_j0 has none either
    (derivatives.yaml: non_differentiable): its result does not require grad, and
    backward through a loss with another term runs, leaving its path out."""
    for name, leaf, result in _glossary_results(op_name, context):
        if context != "plain" or name not in ("bessel_j0", "x // 2", "heaviside", "floor_divide(x, 3)"):
            continue
        if not result.requires_grad:
            return False
        try:
            (result.sum() + leaf.sum()).backward()
        except RuntimeError:
            continue
        return False
    return True


@pytest.mark.parametrize("old_sentence", [results_with_no_derivative_to_carry_do_not_inherit,
                                          every_operation_with_no_formula_passes_the_flag_and_raises])
def test_reading_no_derivative_formula_still_passes_the_flag(real_claims, old_sentence):
    """refB R2 and r60d-1: both old readings fail on the first member drawn plain."""
    replay(real_claims, "reference/glossary",
           "The result of an operation on such a tensor inherits it, except for", old_sentence,
           st.sampled_from(sorted(GLOSSARY_OPERATIONS)),
           st.sampled_from(["inference_mode", "no_grad", "plain"]), MADE_AS_LEAF_TIMES_ONE, fails_on="plain")


def backward_fills_every_leaf_that_requires_grad(graph) -> bool:
    """differentiation-apis.md (reverse mode on a graph you built): "`backward` adds
    the result into `.grad` of every leaf tensor that requires grad". A leaf y was
    computed from only through .detach(), argmax or a comparison gets nothing."""
    return all(grad is not None for grad in grads_after_backward(graph)) if graph[5] is None \
        else True


def test_reading_backward_fills_only_the_leaves_y_depends_on(real_claims):
    replay(real_claims, "reference/differentiation-apis",
           "`backward` adds the result into `.grad` of every {term}`leaf tensor` that requires grad and",
           backward_fills_every_leaf_that_requires_grad, leaf_graphs_with_cut_paths(), fails_on="x")


def functional_call_of_the_parameters_alone_runs_under_grad(setting) -> bool:
    """R1, differentiation-apis.md (functional_call): "runs a module with the
    parameters you pass as a dict, leaving the module's own untouched, so a transform
    can differentiate with respect to them: grad(lambda p: functional_call(model, p,
    (x,)).sum())(params)". In training mode BatchNorm updates its own buffers, and
    under grad that raises."""
    model, batch = setting.model, setting.inputs.detach()
    params = {name: p.detach() for name, p in model.named_parameters()}
    torch.func.grad(lambda p: torch.func.functional_call(model, p, (batch,)).sum())(params)
    return True


def test_r1_functional_call_needs_the_buffers_of_a_train_mode_batchnorm(real_claims):
    from reader_settings import train_mode_models

    replay(real_claims, "reference/differentiation-apis", "Buffers you do not pass, such",
           functional_call_of_the_parameters_alone_runs_under_grad, train_mode_models(),
           fails_on="BatchNorm1d", because="mutate a captured Tensor")


def second_call_as_written_gives_u_xx(net, seed) -> None:
    """R13, look-up-the-questions-people-ask.md (PINN): "`u_xx = grad(u_x, x,
    torch.ones_like(u_x))[0]`" with no word on when it raises; its check ran another
    call (allow_unused=True, materialize_grads=True). As written it raises for a
    network with no activation, whose u_x does not depend on the input, and for a
    compiled one, which cannot differentiate twice (the first the check draws)."""
    points = torch.randn(5, 1, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(seed)).requires_grad_()
    u = net(points)[:, :1]
    (u_x,) = torch.autograd.grad(u, points, torch.ones_like(u), create_graph=True)
    torch.autograd.grad(u_x, points, torch.ones_like(u_x))


def test_r13_the_pinn_second_call_raises_without_an_activation(real_claims):
    from compiled_double_backward import one_feature_networks

    nets = one_feature_networks(compiled=True)
    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "The second call raises", second_call_as_written_gives_u_xx, nets,
           st.integers(0, 2**16), fails_on="(_orig_mod): Linear(1→6) · Tanh",
           because="does not currently support double backward")


def detach_or_force_converts_autocast_output(dtype, seed) -> None:
    """R2/R3, error-messages.md (numpy() on a tensor that requires grad): "detach
    first (and .cpu() first for a GPU tensor), or call x.numpy(force=True)" as the
    whole fix. autocast's bfloat16 output has no NumPy dtype either way."""
    layer = torch.nn.Linear(3, 2)
    with torch.random.fork_rng(devices=[]), torch.autocast("cpu", dtype=dtype):
        torch.manual_seed(seed)
        out = layer(torch.randn(4, 3))
    out.numpy(force=True)


def test_r2_numpy_of_autocast_bfloat16_needs_float_first(real_claims):
    from reader_settings import autocast_dtypes

    replay(real_claims, "reference/error-messages", "A bfloat16 tensor, such as",
           detach_or_force_converts_autocast_output, autocast_dtypes(), st.integers(0, 2**16),
           fails_on="torch.bfloat16", because="BFloat16")


# -- Audit of 2026-12-05: the false edits that stayed green ------------------------------

def element_k_counts_the_flattened_entries(outputs_drawn) -> None:
    """Audit row 21, error-messages.md: "'Element 0' counts the entries of the outputs,
    flattened in order"."""
    p = torch.tensor(1.0, requires_grad=True)
    outputs = [p * torch.ones(size) if has_graph else torch.zeros(size)
               for has_graph, size in outputs_drawn]
    flags = [has_graph for has_graph, _size in outputs_drawn]
    if all(flags):
        return
    k = flags.index(False)
    with pytest.raises(RuntimeError, match=f"^element {sum(s for _h, s in outputs_drawn[:k])} of"):
        torch.autograd.backward(outputs, [torch.ones_like(out) for out in outputs])


def test_audit_21_element_k_is_not_a_flattened_entry(real_claims):
    replay(real_claims, "reference/error-messages", '"Element 0" counts',
           element_k_counts_the_flattened_entries,
           st.lists(st.tuples(st.booleans(), st.integers(1, 3)), min_size=1, max_size=5),
           fails_on="(True, 1), (True, 1), (True, 3), (False, 2)", because="element 3 of tensors")


def leaky_relu_is_as_good_as_a_smooth_activation(name, hidden_layers, seed) -> bool:
    """Audit row 3, differentiate-a-network-output-with-respect-to-its-input.md: "A ReLU
    network has u_xx = 0: use `LeakyReLU` instead"."""
    torch.manual_seed(seed)
    activation = getattr(torch.nn, name)()
    net = torch.nn.Sequential(torch.nn.Linear(1, 16), activation, torch.nn.Linear(16, 1))
    points_x = torch.linspace(-2, 2, 9).unsqueeze(1).requires_grad_()
    u = net(points_x)
    (u_x,) = torch.autograd.grad(u, points_x, torch.ones_like(u), create_graph=True)
    (u_xx,) = torch.autograd.grad(u_x, points_x, torch.ones_like(u_x))
    return bool((u_xx == 0).all()) == (name == "ReLU")


def test_audit_3_leaky_relu_also_has_no_second_derivative(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "A network of linear layers and ReLU has $u_{xx} = 0$", leaky_relu_is_as_good_as_a_smooth_activation,
           st.sampled_from(["GELU", "LeakyReLU", "ReLU", "SiLU", "Softplus", "Tanh"]),
           st.integers(1, 2), SEEDS, fails_on="'LeakyReLU'")


def column_first_seeded_with_ones_like_u(setting) -> None:
    """N1, look-up-the-questions-people-ask.md (PINN, several input features):
    "`u_xx = grad(u_X[:, 0], X, torch.ones_like(u))[0][:, :1]`"; its check seeded
    with `torch.ones_like(u)[:, 0]` instead. A network returns u as (N, 1), the
    column u_X[:, 0] is (N,): the seed as written has the wrong shape and raises."""
    X = setting.inputs
    u = setting.model(X)
    (u_X,) = torch.autograd.grad(u, X, torch.ones_like(u), create_graph=True)
    torch.autograd.grad(u_X[:, 0], X, torch.ones_like(u))


def test_n1_the_column_first_seed_shaped_like_u_raises(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "With several input features,",
           column_first_seeded_with_ones_like_u, multi_feature_inputs(),
           fails_on="tanh MLP", because="Mismatch in shape")


def buffers_passed_once_run_under_vmap(setting) -> None:
    """N3, differentiation-apis.md (functional_call): "under `grad` or `vmap` that
    update raises. Pass them too, as an input of the function you transform". Under
    vmap, BatchNorm's buffers passed once (in_dims=None) raise as the captured ones do."""
    model, batch = setting.model, setting.inputs.detach()
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = {name: b.clone() for name, b in model.named_buffers()}

    def run(p, b, x):
        return torch.func.functional_call(model, (p, b), (x,)).sum()

    torch.func.vmap(run, in_dims=(None, None, 0), randomness="different")(
        params, buffers, torch.stack([batch, batch.flip(0)]))


def test_n3_buffers_passed_once_are_not_enough_under_vmap(real_claims):
    from reader_settings import train_mode_models

    replay(real_claims, "reference/differentiation-apis", "Buffers you do not pass, such",
           buffers_passed_once_run_under_vmap, train_mode_models(),
           fails_on="BatchNorm1d", because="Batch norm got a batched tensor")


def default_normalize_replaces_dividing_by_the_norm(shape_and_dim, seed) -> bool:
    """How-to 1, debug-nan-and-wrong-gradients.md (table): "`x / x.norm()` | ... |
    `F.normalize`", the mask with `n = x.norm(dim=-1, keepdim=True)`. F.normalize's
    default is dim=1, x.norm() the whole tensor's norm, the mask dim -1: three
    different numbers on rows and images, and a 1-D x raises."""
    x = torch.randn(shape_and_dim[0], dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed))
    return torch.allclose(torch.nn.functional.normalize(x), x / x.norm())


def test_howto1_normalize_names_no_dim(real_claims):
    from reader_settings import shapes_and_dims

    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "over the dimension you normalize over",
           default_normalize_replaces_dividing_by_the_norm, shapes_and_dims(), SEEDS,
           fails_on="((4,), ", because="Dimension out of range")


def mean_of_per_device_losses_is_the_batch_loss(devices, per_device, seed) -> bool:
    """N7, look-up-the-questions-people-ask.md (DataParallel): "Reduce it first:
    `loss.mean().backward()` (equal to the whole batch's mean ...)", for any loss.
    Per-device summed losses: their mean is the batch loss divided by the devices."""
    batch = torch.randn(devices * per_device, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(seed))
    sums = torch.stack([chunk.sum() for chunk in batch.split(per_device)])
    return torch.allclose(sums.mean(), batch.sum())


def test_n7_the_mean_of_summed_per_device_losses_halves_the_batch_loss(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "Reduce it first:",
           mean_of_per_device_losses_is_the_batch_loss, st.integers(2, 4), st.integers(1, 4),
           st.integers(0, 2**16), fails_on="2, 1, ")


def vmap_jacrev_of_the_model_gives_each_samples_jacobian(setting, jac) -> None:
    """G1, misconceptions.md (a network with several outputs per sample):
    "`torch.func.vmap(torch.func.jacrev(model))` gives each sample's Jacobian
    whole", with no word on Dropout or BatchNorm: the model as it comes, in
    training mode."""
    torch.func.vmap(jac(setting.model))(setting.inputs.detach())


def test_g1_vmap_jacrev_raises_on_a_train_mode_dropout_model(real_claims):
    from reader_settings import train_mode_models

    replay(real_claims, "reference/misconceptions", "`torch.func.vmap(torch.func.jacrev(model))` gives each",
           vmap_jacrev_of_the_model_gives_each_samples_jacobian, train_mode_models(),
           st.just(torch.func.jacrev), fails_on="Dropout (train)", because="called random operation")


# -- Fourth fresh reading (issue 39): the how-to findings H4-2 to H4-5 --------------------

def grad_output_cast_to_x_dtype_runs_under_autocast(dtype, x_is, shape) -> None:
    """H4-5, write-a-custom-autograd-function.md: "With `setup_context`, cast
    `grad_output` to the dtype of what you saved". After an autocast layer x is
    bfloat16 or float16 while the weight w is float32: g @ w.T mixes the two."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator, requires_grad=True)
    w = torch.randn(3, 2, generator=generator, requires_grad=True)

    class MatMul(TransposedMatMul):
        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            g = grad_output.to(x.dtype)  # transposed for any shape: only the cast is at fault
            return g @ w.mT, x.flatten(0, -2).mT @ g.flatten(0, -2)

    if x_is == "a float64 leaf, autocast off":  # one dtype throughout: the cast is a no-op
        MatMul.apply(x.double(), w.double()).sum().backward()
        return
    with torch.random.fork_rng(devices=[]), torch.autocast("cpu", dtype=dtype):
        given = x if x_is == "a float32 leaf" else torch.nn.Linear(3, 3)(x)
        product = MatMul.apply(given, w)
    product.float().sum().backward()


def test_h4_5_grad_output_cast_to_one_saved_dtype_raises_after_an_autocast_layer(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function",
           "With `setup_context`, compute the backward in at least float32",
           grad_output_cast_to_x_dtype_runs_under_autocast, autocast_dtypes(), *matmul_settings(),
           fails_on="the output of an autocast Linear", because="same dtype")


NORMALIZE_SETTINGS = ["a float16 tensor", "a float32 tensor under float16 autocast",
                      "a Linear's output under float16 autocast", "a Linear's output under bfloat16 autocast",
                      "a float32 tensor under bfloat16 autocast", "a bfloat16 tensor"]


def normalize_settings() -> st.SearchStrategy[str]:
    """debug-nan-and-wrong-gradients.md's family of F.normalize settings, under its name."""
    settings = st.sampled_from(NORMALIZE_SETTINGS)
    settings.family_name = ("float16 and bfloat16 tensors, and a float32 tensor and a Linear's output "
                            "under CPU autocast in each")
    return settings


def normalize_at_a_zero_row(setting) -> tuple[torch.Tensor, torch.Tensor, torch.dtype]:
    """F.normalize(h, dim=-1) at a zero row of h made as ``setting`` says: its value and
    the gradient of its sum with respect to h, in float32, and the value's dtype."""
    low = torch.bfloat16 if "bfloat16" in setting else torch.float16
    rows = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.5, -1.0]])
    with torch.random.fork_rng(devices=[]), torch.autocast("cpu", dtype=low, enabled="autocast" in setting):
        torch.manual_seed(0)
        layer = torch.nn.Linear(4, 3)
        torch.nn.init.zeros_(layer.bias)
        h = (layer(rows) if "Linear" in setting
             else rows[:, :3].to(torch.float32 if "float32" in setting else low).requires_grad_())
        out = torch.nn.functional.normalize(h, dim=-1)
    (gradient,) = torch.autograd.grad(out.float().sum(), h)
    return out[0].detach().float(), gradient[0].float(), out.dtype


def normalize_gradient_is_nan_in_float16(setting) -> bool:
    """H4-2, debug-nan-and-wrong-gradients.md: F.normalize's gradient at a zero vector
    "is 1/eps = 1e12, and `nan` in float16 (eps rounds to 0)", float16 autocast
    included. A float32 tensor under CPU autocast stays float32: the gradient is 1e12."""
    _, gradient, _ = normalize_at_a_zero_row(setting)
    return bool(gradient.isnan().all()) == ("bfloat16" not in setting)


def test_h4_2_normalize_under_float16_autocast_is_finite(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients",
           "In a float16 tensor both the value and the gradient are `nan`",
           normalize_gradient_is_nan_in_float16, normalize_settings(),
           fails_on="a float32 tensor under float16 autocast")


def under_autocast_the_norm_runs_in_float32(setting) -> bool | None:
    """F2, debug-nan-and-wrong-gradients.md: "under CPU `autocast` the norm runs in
    float32 (value 0, gradient 1e12)". Autocast leaves the norm in its input's dtype:
    a Linear's float16 output gives nan, its bfloat16 output stays bfloat16."""
    if "autocast" not in setting:
        return None
    value, gradient, dtype = normalize_at_a_zero_row(setting)
    return (dtype == torch.float32 and bool((value == 0).all())
            and torch.allclose(gradient, torch.full((3,), 1e12), rtol=1e-2))


def test_f2_autocast_leaves_the_norm_in_its_input_dtype(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "CPU `autocast` leaves the norm",
           under_autocast_the_norm_runs_in_float32, normalize_settings(),
           fails_on="a Linear's output under bfloat16 autocast")


def gradgradcheck_does_what_gradcheck_does_one_order_higher(state) -> bool:
    """H4-3, check-gradients.md: "`gradgradcheck` does the same one order higher", on
    any function gradcheck takes. On a compiled one it raises, whatever ran before."""
    compiled, inputs = compiled_mlp_after(state)
    return (torch.autograd.gradcheck(compiled, (inputs,))
            and torch.autograd.gradgradcheck(compiled, (inputs,)))


def test_h4_3_gradgradcheck_raises_on_a_compiled_function(real_claims):
    replay(real_claims, "how-to/check-gradients", "With `backend=\"aot_eager\"`, `gradgradcheck` raises on a",
           gradgradcheck_does_what_gradcheck_does_one_order_higher, GRADCHECK_ALL_CASES,
           fails_on="freshly compiled", because="double backward")


DIAGONAL_SHAPE_CASES = {
    "sin, 1-D x": (torch.sin, (4,)), "x * x.sum(), 1-D x": (lambda t: t * t.sum(), (3,)),
    "cumsum, 1-D x": (lambda t: t.cumsum(0), (5,)), "sin, (2, 3) x": (torch.sin, (2, 3)),
    "x * x.sum(), (2, 3) x": (lambda t: t * t.sum(), (2, 3)),
    "stack([x, x**2], 1), 1-D x": (lambda t: torch.stack([t, t ** 2], 1), (3,)),
    "x[:2] * x.sum(), 1-D x": (lambda t: t[:2] * t.sum(), (3,)),
    "cat([x, x[:2]]), 1-D x": (lambda t: torch.cat([t, t[:2]]), (3,)),
    "cat([x, x ** 2]), 1-D x": (lambda t: torch.cat([t, t ** 2]), (4,)),
    "stack([x, x**2]), scalar x": (lambda t: torch.stack([t, t ** 2]), ()),
    "(x**2).sum(), 1-D x": (lambda t: (t ** 2).sum(), (3,)),
    "x * ones(2, 3), scalar x": (lambda t: t * torch.ones(2, 3, dtype=t.dtype), ()),
    "x.sum() * arange(3), (2, 2) x": (lambda t: t.sum() * torch.arange(1, 4, dtype=t.dtype), (2, 2)),
    "x[0], (2, 2) x": (lambda t: t[0], (2, 2)), "x[0, :2], (3, 3) x": (lambda t: t[0, :2], (3, 3)),
    "x[0], (2, 3) x": (lambda t: t[0], (2, 3)), "x.flatten()[:3], (2, 2, 2) x": (lambda t: t.flatten()[:3], (2, 2, 2)),
    "x.sum() * arange(3), (3, 2) x": (lambda t: t.sum() * torch.arange(1, 4, dtype=t.dtype), (3, 2))}


def diagonal_shape_cases() -> st.SearchStrategy[str]:
    """The page's family of f and x for the diagonal of J, under its name."""
    cases = st.sampled_from(sorted(DIAGONAL_SHAPE_CASES))
    cases.family_name = ("f and the shape of x: scalar, 1-D, 2-D (square or not) and 3-D x, "
                         "scalar, 1-D and 2-D y, y with as many entries as x, fewer or more, "
                         "1-D y shorter or no shorter than a side of x")
    return cases


def diagonal_of_jacrev_gives_dy_i_dx_i_for_any_1d_x(case) -> bool | None:
    """H4-4, differentiate-elementwise-functions-at-many-points.md:
    "`torch.diagonal(torch.func.jacrev(f)(x))` gives dy_i/dx_i for any `f` of a 1-D
    `x`". With y = x[:2] * x.sum() it returns a (2,) tensor for a (3,) x, and with
    y = stack([x, x**2], 1) a (3, 2) tensor, no error."""
    f, shape = DIAGONAL_SHAPE_CASES[case]
    if len(shape) == 1:
        x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        J = torch.func.jacrev(f)(x)
        if J.dim() < 2:  # a scalar y: diagonal raises, no silent wrong number to replay
            return None
        return torch.diagonal(J).shape == x.shape
    return None


def test_h4_4_the_diagonal_of_jacrev_needs_y_as_long_as_x(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "gives $\\partial y_i / \\partial x_i$ when `x` and `y = f(x)` are 1-D",
           diagonal_of_jacrev_gives_dy_i_dx_i_for_any_1d_x, diagonal_shape_cases(),
           fails_on=", 1-D x")  # x[:2] * x.sum() or stack([x, x**2], 1), as the draw goes


SUMMARY_BODIES = ["if t > 0:", ".item()", "c.add_(1.0)", "c.mul_(t)", "c.zero_()", "torch.relu_(c)",
                  "torch.add(c, 1, out=c)", "torch._foreach_add_([c], 1)"]


def vmap_grad_rejects_every_in_place_change(name) -> bool:
    """r37g-4, differentiate-elementwise-functions-at-many-points.md (1778e9b:1326-1329,
    the Summary): `vmap(grad(f))` "rejects ... in-place changes to captured tensors":
    a write through out= or _foreach_add_ runs."""
    held = torch.zeros(())
    writes = {"torch.add(c, 1, out=c)": lambda t: torch.add(held, 1, out=held) * 0 + t * t,
              "torch._foreach_add_([c], 1)": lambda t: (torch._foreach_add_([held], 1), t * t)[1]}
    if name not in writes:
        return True
    try:
        torch.func.vmap(torch.func.grad(writes[name]))(torch.linspace(-2, 2, 7))
    except RuntimeError:
        return True
    return False


def test_r37g_4_some_writes_into_captured_tensors_run(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "it rejects data-dependent `if`, `.item()`,\n  in-place operations such as",
           vmap_grad_rejects_every_in_place_change,
           labelled(st.sampled_from(SUMMARY_BODIES),
                    "an if on a value, .item(), in-place operations on a captured tensor c, "
                    "and writes into c through out= and _foreach_add_"),
           fails_on="'torch._foreach_add_([c], 1)'")


# -- Fresh reading of the reference pages (issue 39): M1, G1, G2, I2 -----------------------

def eval_gives_the_train_mode_gradient(setting) -> bool:
    """M1, differentiation-apis.md (functional_call): "pass them too, ... or call
    `model.eval()` first", as an equal way to the same gradient. eval() switches
    Dropout off and makes BatchNorm read its running statistics: another function."""
    model, batch = setting.model, setting.inputs.detach()
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    total = lambda p, *given: torch.func.functional_call(model, (p, *given), (batch,)).sum()  # noqa: E731
    trained = torch.func.grad(total)(params, buffers)
    model.eval()
    evaluated = torch.func.grad(total)(params)
    model.train()
    return all(torch.allclose(trained[name], evaluated[name]) for name in params)


def test_m1_eval_mode_is_not_the_training_mode_gradient(real_claims):
    from reader_settings import train_mode_models

    replay(real_claims, "reference/differentiation-apis", "Buffers you do not pass, such",
           eval_gives_the_train_mode_gradient, train_mode_models(), fails_on="(train)")


def a_forward_pass_per_loss_term(setting, loss) -> bool:
    """G1, error-messages.md (backward twice): "**Fix:** run the forward pass again
    before each `backward`", applied to the terms of one loss: a forward pass per
    term gives the summed loss's gradients and BatchNorm update. Dropout draws a new
    mask per pass, BatchNorm counts one update per pass."""
    from reader_settings import LOSS_TERMS

    model, batch, params = setting.model, setting.inputs.detach(), list(setting.model.parameters())
    updates = lambda: [b.item() for n, b in model.named_buffers()  # noqa: E731
                       if n.endswith("num_batches_tracked")]
    torch.manual_seed(0)
    before = updates()
    out = model(batch)
    summed = torch.autograd.grad(sum(LOSS_TERMS[name](out) for name in loss.terms), params)
    once = [a - b for a, b in zip(updates(), before)]
    before = updates()
    per_pass = [torch.autograd.grad(LOSS_TERMS[name](model(batch)), params) for name in loss.terms]
    again = [a - b for a, b in zip(updates(), before)]
    return once == again and all(torch.allclose(s, sum(g)) for s, g in zip(summed, zip(*per_pass)))


def test_g1_a_forward_pass_per_loss_term_is_another_computation(real_claims):
    from reader_settings import multi_term_losses, train_mode_models

    replay(real_claims, "reference/error-messages", "When several losses that should all train",
           a_forward_pass_per_loss_term, train_mode_models(), multi_term_losses(st.integers(2, 4)),
           fails_on="(train)")


def gan_parts(setting, losses, seed):
    """D (the drawn model, its grads cleared), the real batch, G and z, and the two losses."""
    from reader_settings import GAN_LOSSES, generator_for

    setting.model.zero_grad(set_to_none=True)
    return (setting.model, setting.inputs.detach(), *generator_for(setting, seed), *GAN_LOSSES[losses])


def a_gan_s_two_losses_summed(setting, losses, seed) -> bool:
    """r56b-3 M, error-messages.md (68e5c17:257-259): "When several losses come from one
    forward pass, add them and call `backward` once, `(loss_a + loss_b).backward()`",
    read for a GAN's two losses on `fake = G(z)`: the sum's backward gives G the gradient
    of the generator's loss. It gives G the discriminator's loss's gradient too."""
    D, real, G, z, d_loss_of, g_loss_of = gan_parts(setting, losses, seed)
    try:
        fake = G(z)
        d_loss, g_loss = d_loss_of(D(real), D(fake)), g_loss_of(D(fake))
        alone = torch.autograd.grad(g_loss, list(G.parameters()), retain_graph=True)
        (d_loss + g_loss).backward()
        return all(torch.allclose(p.grad, g) for p, g in zip(G.parameters(), alone))
    finally:
        D.zero_grad(set_to_none=True)


def d_stepped_before_the_generator_s_backward(setting, losses, seed) -> bool:
    """n56b-2 M, error-messages.md (53d2a84:260-261): "call its `backward` and step `D`
    before the generator's `backward`", read with both losses computed first: the step
    changes D's weights, saved by the generator's loss on D(fake), in place, and the
    generator's backward raises."""
    D, real, G, z, d_loss_of, g_loss_of = gan_parts(setting, losses, seed)
    saved_state = {name: value.detach().clone() for name, value in D.state_dict().items()}
    try:
        fake = G(z)
        d_loss, g_loss = d_loss_of(D(real), D(fake.detach())), g_loss_of(D(fake))
        d_loss.backward()
        torch.optim.SGD(D.parameters(), lr=0.1).step()
        g_loss.backward()
        return True
    except RuntimeError as error:
        return "modified by an inplace operation" not in str(error)
    finally:
        D.zero_grad(set_to_none=True)
        D.load_state_dict(saved_state)


@pytest.mark.parametrize("old_sentence, fails_on", [
    pytest.param(a_gan_s_two_losses_summed, "'Wasserstein'", id="r56b-3: the two losses summed"),
    pytest.param(d_stepped_before_the_generator_s_backward, "", id="n56b-2: D stepped after D(fake)"),
])
def test_r56b_3_n56b_2_the_gan_sentence_s_old_readings(real_claims, old_sentence, fails_on):
    from reader_settings import GAN_LOSSES

    replay(real_claims, "reference/error-messages", "A GAN's discriminator loss should not train",
           old_sentence,
           labelled(st.one_of(sample_batches(), train_mode_models(), compiled_modules()),
                    "discriminators: critics on rows (N, F) or images (B, C, H, W), MLPs with Dropout or "
                    "BatchNorm1d in training mode, compiled MLPs"),
           labelled(st.sampled_from(sorted(GAN_LOSSES)), "binary cross-entropy and Wasserstein GAN losses"),
           SEEDS, fails_on=fails_on)


def a_computation_step_updated_under_no_grad(route, seed) -> bool:
    """G2, error-messages.md (in-place on a leaf): "**Fix:** update it inside
    `torch.no_grad()`", applied to an in-place step of the computation (x /= 255 in
    f = ((x / 255)**2).sum()): the step drops out of df/dx = 2 x / 255**2. (The
    check's other route, rebinding x, is R1's, below.)"""
    if route != "no_grad":
        return True
    x = torch.randn(3, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed)).requires_grad_()
    expected = 2 * x.detach() / 255**2
    with torch.no_grad():
        x /= 255
    (x**2).sum().backward()
    return torch.allclose(x.grad, expected)


def test_g2_no_grad_drops_a_computation_step_from_the_derivative(real_claims):
    from families import labelled

    replay(real_claims, "reference/error-messages", "Rebinding `x` itself",
           a_computation_step_updated_under_no_grad,
           labelled(st.sampled_from(["rebind", "no_grad"]), "x = x / 255, and x /= 255 under no_grad"), SEEDS,
           fails_on="no_grad")


def test_r60b_3_a_composite_s_grad_fn_hides_what_it_saved(real_claims):
    """r60b-3 M, error-messages.md (f68f664:1550-1552): "You need not guess what a
    built-in operation saved [...]: its `grad_fn` shows it", read for any built-in: a
    composite such as cosine_similarity records several nodes, and its grad_fn (the
    last, SumBackward1) shows no input, yet changing the input in place breaks backward.
    The old sentence is the check's saved_attributes_tell_what_breaks over every built-in
    the new check draws, run from the page's own cell (not copied here)."""
    from autograd_docs.code_cells import code_cells

    page = Path(__file__).resolve().parent.parent / "docs" / "reference" / "error-messages.md"
    [source] = [cell.source for cell in code_cells(page.read_text(encoding="utf8"), page)
                if "BUILT_INS = " in cell.source]
    namespace = {"torch": torch, "st": st, "labelled": labelled, "check_property": check_property}
    exec(source[source.index("IN_PLACE_OPS = "):source.index("def records_one_node")], namespace)
    built_ins, tells = namespace["BUILT_INS"], namespace["saved_attributes_tell_what_breaks"]
    replay(real_claims, "reference/error-messages", "You need not guess what a built-in operation that records",
           lambda name: tells(name, built_ins),
           labelled(st.sampled_from(sorted(built_ins)), "exp, sigmoid, tanh, relu, sqrt, sin, x ** 2, 10 * x, "
                    "x + 1, x * x, softmax out of place; exp_, sigmoid_, tanh_, relu_, sqrt_, sin_, pow_(2), "
                    "mul_(10), add_(1) in place on a whole tensor; composites: cosine_similarity, normalize, "
                    "softmin"),
           fails_on="cosine_similarity")


def vmap_of_the_eval_model_runs_on_images(member, jac) -> None:
    """I2, misconceptions.md and the questions page: "`BatchNorm1d` raises on the
    single sample `vmap` passes, even in eval mode", naming no other BatchNorm: an
    eval-mode Conv2d-BatchNorm2d model mapped as it comes, on an image batch."""
    kind, model, images = member
    if kind == "BatchNorm2d":
        torch.func.vmap(jac(model))(images)


def only_batchnorm_stops_vmap_of_the_model(member, jac) -> bool:
    """refB R1, both pages: "A BatchNorm layer [...] raises on the single sample
    `vmap` passes [...]: map `lambda row: model(row[None])[0]` instead", naming no
    other layer: without BatchNorm, vmap(jac(model)) gives each sample's Jacobian."""
    kind, model, batch = member
    if "BatchNorm" in kind:
        return True
    whole = torch.autograd.functional.jacobian(model, batch)
    out_dims = model(batch).dim() - 1
    own = torch.stack([whole[(b,) + (slice(None),) * out_dims + (b,)] for b in range(len(batch))])
    try:
        mapped = torch.func.vmap(jac(model))(batch)
    except (RuntimeError, ValueError, IndexError):
        return False
    return mapped.shape == own.shape and torch.allclose(mapped, own)


def _batch_dimension_families(jac):
    from per_sample_jacobians import batch_dimension_models

    return (batch_dimension_models(),
            labelled(st.just(jac), f"{jac.__name__}, as the sentence's vmap({jac.__name__}(model))"))


BATCH_DIMENSION_PAGES = [("reference/misconceptions", torch.func.jacrev),
                         ("reference/look-up-the-questions-people-ask", torch.func.jacfwd)]
BATCH_DIMENSION_QUOTE = "`vmap` passes the model one sample"


@pytest.mark.parametrize(("page", "jac"), BATCH_DIMENSION_PAGES)
def test_i2_batchnorm2d_raises_on_one_image_too(real_claims, page, jac):
    replay(real_claims, page, BATCH_DIMENSION_QUOTE, vmap_of_the_eval_model_runs_on_images,
           *_batch_dimension_families(jac), fails_on="BatchNorm2d", because="expected 4D input")


@pytest.mark.parametrize(("page", "jac"), BATCH_DIMENSION_PAGES)
def test_refb_r1_flatten_and_softmax_name_the_batch_dimension_too(real_claims, page, jac):
    replay(real_claims, page, BATCH_DIMENSION_QUOTE, only_batchnorm_stops_vmap_of_the_model,
           *_batch_dimension_families(jac), fails_on="Flatten")


CAPTURED_CHANGES_PER_SAMPLE = {"copy_", "copy_ of a detached value", "add_(t)", "add_(t.detach())",
                               "mul_(t)", "item assignment of t[0]", "BatchNorm1d in training mode"}
CAPTURED_CHANGES = sorted({"add_", "mul_", "zero_", "item assignment", "add_ under no_grad"}
                          | CAPTURED_CHANGES_PER_SAMPLE)


def refused_by_a_transform(change, transform) -> bool:
    """Whether ``transform`` (a torch.func one, vmap included) raises on an f(t) that
    makes ``change`` to a captured tensor, or to a captured training-mode BatchNorm1d's
    running statistics (get-a-full-jacobian-or-hessian.md's family)."""
    captured, ones = torch.zeros(3), torch.ones(3)
    layer = torch.nn.BatchNorm1d(3).train()
    write = {"copy_": lambda t: captured.copy_(t),
             "copy_ of a detached value": lambda t: captured.copy_(t.detach()),
             "item assignment": lambda t: captured.__setitem__(0, 5.0),
             "add_ under no_grad": lambda t: torch.no_grad()(captured.add_)(1.0),
             "add_(t)": lambda t: captured.add_(t),
             "add_(t.detach())": lambda t: captured.add_(t.detach()),
             "mul_(t)": lambda t: captured.mul_(t),
             "item assignment of t[0]": lambda t: captured.__setitem__(0, t[0]),
             "BatchNorm1d in training mode": lambda t: layer(torch.stack([t, 2 * t]))}.get(
        change, lambda t: getattr(captured, change)(*([] if change == "zero_" else [1.0])))

    def changing(t):
        write(t)
        return t * 2
    summed = lambda t: changing(t).sum()  # noqa: E731
    run = {"grad": lambda: torch.func.grad(summed)(ones),
           "vjp": lambda: torch.func.vjp(changing, ones)[1](ones),
           "jvp": lambda: torch.func.jvp(changing, (ones,), (ones,)),
           "jacrev": lambda: torch.func.jacrev(changing)(ones),
           "jacfwd": lambda: torch.func.jacfwd(changing)(ones),
           "hessian": lambda: torch.func.hessian(summed)(ones),
           "vmap": lambda: torch.func.vmap(changing)(torch.ones(2, 3))}[transform]
    try:
        run()
    except RuntimeError:
        return True
    return False


def torch_func_refuses_every_captured_change(change, transform) -> bool:
    """s3 audit row 16, get-a-full-jacobian-or-hessian.md: "`torch.func` refuses
    functions that change a captured tensor in place", read as every transform."""
    return refused_by_a_transform(change, transform)


def vmap_refuses_only_a_copy_of_a_batched_value(change, transform) -> bool:
    """s17 howtoB R1, get-a-full-jacobian-or-hessian.md: "`vmap` is not one of them: it
    runs such a change, unless it copies a batched value into the captured tensor"
    ("such a change": BatchNorm1d's running-statistics update, the example before)."""
    refused = refused_by_a_transform(change, transform)
    return refused != (transform == "vmap" and not change.startswith("copy_"))


def _captured_change_families():
    changes = st.sampled_from(CAPTURED_CHANGES)
    changes.family_name = "in-place changes of a captured tensor"
    transforms = st.sampled_from(sorted(["grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap"]))
    transforms.family_name = "torch.func transforms, vmap included"
    return changes, transforms


def test_s3_16_vmap_runs_an_in_place_change_of_a_captured_tensor(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`vmap` is not one of",
           torch_func_refuses_every_captured_change, *_captured_change_families(), fails_on="'vmap'")


def test_s17_howtob_r1_vmap_refuses_a_per_sample_write_not_only_a_copy(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`vmap` is not one of",
           vmap_refuses_only_a_copy_of_a_batched_value, *_captured_change_families(),
           fails_on="'vmap'")


# -- issue 39 reading of the how-to pages ---------------------------------------------

UNRECORDED = {"argmax": torch.argmax, "argmin": torch.argmin, "x > 0": lambda t: t > 0,
              "x == 0": lambda t: t == 0, "long": torch.Tensor.long, "to(int32)": torch.Tensor.int,
              "int": torch.Tensor.int, "bool": torch.Tensor.bool}
AS_FLOAT = ["double().exp()", "float()", "float() * x", "float().sum()", "where(t, 1., 0.)"]


def backward_through_an_unrecorded_term_raises(name, follow_up, other_terms) -> bool:
    """Rows 3-4, handle-operations-with-no-useful-derivative.md:205-207, 580-581:
    "Turning the mask back into floats does not reconnect it, and `backward` fails";
    "`backward` from them raises", said of any loss holding such a term. Every
    follow-up the page draws turns the result into floats; .float() stands for them."""
    leaf = torch.tensor([0.3, 1.7, -2.6], requires_grad=True)
    try:
        (other_terms(leaf) + UNRECORDED[name](leaf).float().sum()).backward()
    except RuntimeError as error:
        return "does not require grad" in str(error)
    return False


def test_howto39_3_an_unrecorded_term_beside_others_raises_nothing(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "Added to another loss term, the mask contributes nothing",
           backward_through_an_unrecorded_term_raises, st.sampled_from(sorted(UNRECORDED)),
           st.sampled_from(AS_FLOAT), multi_term_losses(terms=st.integers(1, 3)), fails_on="'argmax'")


def a_loss_of_u_x_trains_through_compile(setting, loss) -> None:
    """Row 6, differentiate-a-network-output-with-respect-to-its-input.md:581: "Through
    `torch.compile`, second derivatives are not supported", read as: a loss of the
    first derivative u_x alone (a first-order equation) still trains."""
    u = setting.model(setting.inputs)
    (u_x,) = torch.autograd.grad(u, setting.inputs, torch.ones_like(u), create_graph=True)
    loss(u_x).backward()


def test_howto39_6_a_loss_of_u_x_raises_through_compile(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "Nor can a loss built from that $u_x$", a_loss_of_u_x_trains_through_compile,
           compiled_modules(), multi_term_losses(terms=st.integers(1, 3)), fails_on="compiled MLP",
           because="RuntimeError")


def cross_sample_blocks_are_zero(setting) -> None:
    """Row 9, get-a-full-jacobian-or-hessian.md:714-716: the whole-batch Jacobian's
    "every block that pairs two different samples is zero", with no condition."""
    whole = torch.autograd.functional.jacobian(setting.model, setting.inputs.detach())
    for b in range(len(setting.inputs)):
        whole[b, :, b] = 0
    check_close(whole, torch.zeros_like(whole), f"{setting}: cross-sample blocks")


def test_howto39_9_train_mode_batch_norm_fills_the_cross_blocks(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "such as BatchNorm in training mode)",
           cross_sample_blocks_are_zero, train_mode_models(layers=("BatchNorm1d",)),
           fails_on="BatchNorm1d", because="cross-sample blocks")


def per_sample_gradients(model, inputs):
    """vmap(grad) of each sample's loss, the sample as a batch of one, as the page does."""
    params = {n: p.detach() for n, p in model.named_parameters()}

    def row_loss(p, row):
        return torch.func.functional_call(model, p, (row[None],)).pow(2).mean()

    return torch.func.vmap(torch.func.grad(row_loss), in_dims=(None, 0))(params, inputs.detach())


def check_mean_is_the_training_gradient(setting, model, per_sample) -> None:
    model.zero_grad()
    model(setting.inputs.detach()).pow(2).mean().backward()
    for name, p in model.named_parameters():
        check_close(per_sample[name].mean(0), p.grad, f"{setting}: {name}, the training gradient")


def eval_per_sample_gradients_average_to_the_training_gradient(setting) -> None:
    """Row 8, get-a-full-jacobian-or-hessian.md:955-957: "take per-sample gradients with
    the model in `eval()` mode", as the per-sample gradients of the training forward."""
    model = setting.model
    model.eval()
    per_sample = per_sample_gradients(model, setting.inputs)
    model.train()
    check_mean_is_the_training_gradient(setting, model, per_sample)


def test_howto39_8_eval_per_sample_gradients_are_of_another_function(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "They are then gradients of another function",
           eval_per_sample_gradients_average_to_the_training_gradient, train_mode_models(),
           fails_on="MLP with", because="the training gradient")


FROZEN = labelled(st.booleans(), "all parameters trainable, or the first one frozen")


def train_mode_batch_norm_has_no_per_sample_gradients(setting, loss, frozen) -> bool:
    """r37g-8, get-a-full-jacobian-or-hessian.md (1778e9b:1207-1209): "A model with
    BatchNorm in training mode has no per-sample gradients of its training forward":
    yet each sample's loss term of one training forward has one, and their mean is the
    batch gradient."""
    model, inputs = copy.deepcopy(setting.model), setting.inputs.detach()
    next(model.parameters()).requires_grad_(not frozen)
    params = [p for p in model.parameters() if p.requires_grad]
    losses = torch.stack([loss(out) for out in model(inputs)])
    try:
        per_sample = torch.autograd.grad(losses, params, torch.eye(len(inputs)), is_grads_batched=True,
                                         retain_graph=True)
    except RuntimeError:
        return True
    mean = torch.autograd.grad(losses.mean(), params)
    return not all(torch.allclose(g.mean(0), m) for g, m in zip(per_sample, mean))


def test_r37g_8_train_mode_batch_norm_has_per_sample_loss_gradients(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "Each sample's loss term still has a gradient there",
           train_mode_batch_norm_has_no_per_sample_gradients, batch_norm_models(), multi_term_losses(), FROZEN,
           fails_on="BatchNorm")


def every_parameter_takes_the_batched_grad(setting, loss, frozen) -> bool:
    """n38g-3, get-a-full-jacobian-or-hessian.md (1820ded:1239-1241): the recipe
    `torch.autograd.grad(losses, list(model.parameters()), torch.eye(B),
    is_grads_batched=True)`, read as running on the reader's model: with a frozen
    parameter it raises "One of the differentiated Tensors does not require grad"."""
    model, inputs = copy.deepcopy(setting.model), setting.inputs.detach()
    next(model.parameters()).requires_grad_(not frozen)
    losses = torch.stack([loss(out) for out in model(inputs)])
    try:
        torch.autograd.grad(losses, list(model.parameters()), torch.eye(len(inputs)), is_grads_batched=True)
    except RuntimeError as error:
        return "does not require grad" not in str(error)
    return True


def test_n38g_3_the_batched_grad_recipe_skips_frozen_parameters(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "Each sample's loss term still has a gradient there",
           every_parameter_takes_the_batched_grad, batch_norm_models(), multi_term_losses(), FROZEN,
           fails_on="(x - 1).exp().mean() + x.sin().sum(), True")


def the_batch_gradient_follows_the_recipe(setting, loss, frozen, earlier_micro_batch=False) -> None:
    """n39d F2, get-a-full-jacobian-or-hessian.md (a3dfc08:1239-1241): "... gives them,
    and their mean is the gradient of `losses.mean()`", read as the training step
    `losses.mean().backward()` on the same forward after the recipe. With
    ``earlier_micro_batch`` (set_p_grad_to_the_mean), after a backward of another
    micro-batch, and with retain_graph=True in the recipe so that backward runs."""
    model, inputs = copy.deepcopy(setting.model), setting.inputs.detach()
    next(model.parameters()).requires_grad_(not frozen)
    params = [p for p in model.parameters() if p.requires_grad]
    if earlier_micro_batch:
        torch.stack([loss(out) for out in model(2 * inputs + 0.5)]).mean().backward()
    losses = torch.stack([loss(out) for out in model(inputs)])
    per_sample = torch.autograd.grad(losses, params, torch.eye(len(inputs)), is_grads_batched=True,
                                     retain_graph=earlier_micro_batch)
    losses.mean().backward()
    for g, p in zip(per_sample, params):
        check_close(g.mean(0), p.grad, f"{setting}: p.grad")


def add_the_mean_as_backward_would_in_a_gradscaler_step(setting, loss, frozen) -> bool:
    """r42b F1, get-a-full-jacobian-or-hessian.md (77c7be3:1246-1247): "for the training
    step, add the mean of its $B$ gradients to each `p.grad` instead, as `backward` would",
    read in a float16 reader's step with torch.amp.GradScaler: after the add,
    scaler.unscale_ raises ("_scale is None"), as scaler.scale(loss).backward() never ran."""
    model, inputs = copy.deepcopy(setting.model), setting.inputs.detach()
    next(model.parameters()).requires_grad_(not frozen)
    params = [p for p in model.parameters() if p.requires_grad]
    losses = torch.stack([loss(out) for out in model(inputs)])
    per_sample = torch.autograd.grad(losses, params, torch.eye(len(inputs)), is_grads_batched=True)
    for g, p in zip(per_sample, params):
        p.grad = g.mean(0) if p.grad is None else p.grad + g.mean(0)
    try:
        torch.amp.GradScaler("cpu").unscale_(torch.optim.SGD(params, lr=0.1))
    except AssertionError:
        return False
    return True


def test_r42b_f1_adding_the_mean_breaks_a_gradscaler_step(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "The call frees the graph",
           add_the_mean_as_backward_would_in_a_gradscaler_step, batch_norm_models(), multi_term_losses(), FROZEN,
           fails_on="")


def test_n39d_f2_backward_after_the_recipe_raises(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "The call frees the graph",
           the_batch_gradient_follows_the_recipe, batch_norm_models(), multi_term_losses(), FROZEN,
           fails_on="BatchNorm", because="Trying to backward through the graph a second time")


def the_recipe_runs_under_torch_compile(setting) -> None:
    """n41f6-1, get-a-full-jacobian-or-hessian.md (1560b96:1239-1241): "...
    `torch.autograd.grad(losses, [...], torch.eye(B), is_grads_batched=True)` gives
    them", read on a module under torch.compile: under its default backend
    (inductor) the call raises NotImplementedError."""
    model, inputs = setting.model, setting.inputs.detach()
    params = [p for p in model.parameters() if p.requires_grad]
    losses = torch.stack([(out**2).sum() for out in model(inputs)])
    per_sample = torch.autograd.grad(losses, params, torch.eye(len(inputs)), is_grads_batched=True)
    assert [g.shape for g in per_sample] == [(len(inputs), *p.shape) for p in params], setting


def test_n41f6_1_the_recipe_raises_under_inductor(real_claims):
    from reader_settings import compiled_modules_with_inductor
    torch._dynamo.reset()  # a module dynamo refused earlier in this process runs eagerly
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "(eagerly, or under",
           the_recipe_runs_under_torch_compile, compiled_modules_with_inductor(batch_norm=True),
           fails_on="inductor-compiled", because="Cannot access storage of BatchedTensorImpl")



def the_recipe_raises_after_the_per_sample_recipe(setting) -> None:
    """s41 r41a F3, get-a-full-jacobian-or-hessian.md (c05e7c4:1243-1244): "under its
    default backend the call raises `NotImplementedError`", read on a reader's path
    through the page: the per-sample recipe (vmap of grad through functional_call) on
    the compiled module first. Dynamo then runs every nn.Sequential eagerly: the call runs."""
    from torch.func import functional_call, grad, vmap

    model, inputs = setting.model, setting.inputs.detach()
    if not setting.name.startswith("inductor-"):
        return
    params = {name: p.detach() for name, p in model.named_parameters()}
    vmap(grad(lambda ps, x: (functional_call(model, ps, (x.unsqueeze(0),)) ** 2).sum()), in_dims=(None, 0))(
        params, inputs)
    losses = torch.stack([(out**2).sum() for out in model(inputs)])
    try:
        torch.autograd.grad(losses, list(model.parameters()), torch.eye(len(inputs)), is_grads_batched=True)
    except NotImplementedError:
        return
    raise AssertionError(f"{setting}: the recipe ran after the per-sample recipe")


def test_s41_r41a_f3_the_recipe_runs_after_the_per_sample_recipe(real_claims):
    from reader_settings import compiled_modules_with_inductor
    torch._dynamo.reset()  # a reader's script starts afresh, then runs the page's recipes in order
    try:
        replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "(eagerly, or under",
               the_recipe_raises_after_the_per_sample_recipe, compiled_modules_with_inductor(batch_norm=True),
               fails_on="inductor-compiled", because="the recipe ran after the per-sample recipe")
    finally:
        torch._dynamo.reset()


def set_p_grad_to_the_mean(setting, loss, frozen) -> None:
    """s41 r41a F5, get-a-full-jacobian-or-hessian.md (c05e7c4:1245-1246): "for the
    training step, set each `p.grad` to the mean of its $B$ gradients instead", read on
    a micro-batch after another (gradient accumulation): backward would add to p.grad."""
    the_batch_gradient_follows_the_recipe(setting, loss, frozen, earlier_micro_batch=True)


def test_s41_r41a_f5_the_recipe_adds_to_p_grad(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "The call frees the graph",
           set_p_grad_to_the_mean, batch_norm_models(), multi_term_losses(), FROZEN,
           fails_on="BatchNorm", because="p.grad")


class AmpDecoratedMatMul(torch.autograd.Function):
    """x @ w in the forward(ctx, ...) form the summary recommends for autocast."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g


def grad_and_jacrev_take_the_amp_decorated_function(transform) -> None:
    """Row 5, write-a-custom-autograd-function.md:1610, 1622-1628: "`grad` and `jacrev`
    work as is" beside the recommended custom_fwd/custom_bwd forward(ctx, ...) form."""
    if transform in ("grad", "jacrev"):
        w = torch.randn(3, 2)
        getattr(torch.func, transform)(lambda x: AmpDecoratedMatMul.apply(x, w).sum())(torch.randn(4, 3))


def test_howto39_5_the_amp_decorated_form_gives_up_grad_and_jacrev(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function", "and\n  that form gives up every",
           grad_and_jacrev_take_the_amp_decorated_function,
           st.sampled_from(["grad", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]),
           fails_on="grad", because="setup_context")


def chunks_weighed_by_size_give_the_whole_batch_loss(size, devices, weighted, seed, loss_name) -> bool:
    """H5, backpropagate-from-a-non-scalar-output.md (dcf8206:844), the summary: "reduce
    it yourself, weighing unequal chunks by their size", for the page's cross-entropy
    batches with ignored targets and, or not, class weights."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(size, 3, dtype=torch.float64, generator=generator)
    labels = torch.randint(3, (size,), generator=generator)
    labels[torch.rand(size, generator=generator) < 0.3] = -100
    labels[0] = 0  # the batch counts a target
    class_weight = torch.rand(3, dtype=torch.float64, generator=generator) + 0.1 if weighted else None
    chunks = list(zip(scores.chunk(devices), labels.chunk(devices)))
    loss = CLASS_INDEX_LOSSES[loss_name]  # s41: the check draws nll_loss too
    by_size = sum(loss(z, t, weight=class_weight) * len(t) / size for z, t in chunks if (t != -100).any())
    return bool(torch.isclose(by_size, loss(scores, labels, weight=class_weight)))


def test_h5_weighing_chunks_by_size_misses_counted_targets(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "(by their counted weight for losses",
           chunks_weighed_by_size_give_the_whole_batch_loss,
           labelled(st.integers(2, 12), "batch sizes 2 to 12"), labelled(st.integers(2, 4), "2 to 4 devices"),
           labelled(st.booleans(), "class weights: yes or no"),
           labelled(SEEDS, "seeds of scores, labels and ignored targets"), class_index_losses(), fails_on=", ")


def equal_chunks_give_the_whole_batch_mean(chunk_size, devices, seed, loss_name) -> bool:
    """r60b-1 M, backpropagate-from-a-non-scalar-output.md (f68f664:1018-1019): "The mean
    of the per-chunk means equals the whole-batch mean when the chunks have the same
    size" (and the summary's "weighing unequal chunks by their size"), read for the
    class-index losses the paragraph goes on to name: a chunk's mean with ignored
    targets or class weights divides by the weights it counts."""
    generator = torch.Generator().manual_seed(seed)
    size = chunk_size * devices
    if loss_name == "plain mean":
        losses = torch.rand(size, dtype=torch.float64, generator=generator)
        return bool(torch.isclose(torch.stack([c.mean() for c in losses.chunk(devices)]).mean(), losses.mean()))
    scores = torch.randn(size, 3, dtype=torch.float64, generator=generator)
    labels = torch.randint(3, (size,), generator=generator)
    labels[torch.rand(size, generator=generator) < 0.3] = -100
    labels[::chunk_size] = 0
    weight = torch.rand(3, dtype=torch.float64, generator=generator) + 0.1 if seed % 2 else None
    loss = CLASS_INDEX_LOSSES[loss_name]
    per_chunk = [loss(z, t, weight=weight) for z, t in zip(scores.chunk(devices), labels.chunk(devices))]
    return bool(torch.isclose(torch.stack(per_chunk).mean(), loss(scores, labels, weight=weight)))


def test_r60b_1_equal_chunks_of_a_counted_weight_mean_are_not_the_whole_batch(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "The mean of the per-chunk means equals the whole-batch mean when the chunks\nhave the same size and",
           equal_chunks_give_the_whole_batch_mean, labelled(st.integers(1, 6), "chunk sizes 1 to 6"),
           labelled(st.integers(2, 4), "2 to 4 devices"), labelled(SEEDS, "seeds of the per-sample losses"),
           labelled(st.sampled_from(["plain mean", *sorted(CLASS_INDEX_LOSSES)]),
                    "plain means of per-sample losses; cross_entropy (label_smoothing 0 or 0.1) and "
                    "log_softmax + nll_loss with ignore_index and, or not, class weights"),
           fails_on="nll_loss")


MASK_FIX_SOURCES = labelled(
    st.sampled_from(["a float16 tensor", "a Linear's output under float16 autocast"]),
    "x a float16 tensor or a Linear's output under float16 autocast")
MASK_FIX_ENTRIES = labelled(st.sampled_from(["random", "rows 1000 times apart", "equal"]),
                            "x's entries and the summed loss's weights: random, random with the "
                            "second row 1000 times the first (gradients on both sides of the "
                            "bound in one x), or equal entries and weights of ones (float64's "
                            "gradient 0)")
MASK_FIX_SIZES = labelled(st.floats(0.0, 1.0),
                          "x's size (its first row's), 1e-7 to 1e-1, evenly in its power of ten")
# what the check drew before s61b-6 (457fca5): float32 and bfloat16 x too, not compared
MASK_FIX_SOURCES_457FCA5 = labelled(
    st.sampled_from(["a float16 tensor", "a Linear's output under float16 autocast",
                     "a float32 tensor", "a bfloat16 tensor"]),
    "x a float16 tensor or a Linear's output under float16 autocast; a float32 or bfloat16 "
    "tensor, which the sentence leaves out (not compared)")
MASK_FIX_ENTRIES_457FCA5 = labelled(st.sampled_from(["random", "equal"]),
                                    "x's entries and the summed loss's weights: random, or equal "
                                    "entries and weights of ones (float64's gradient 0)")


def _masked(v: torch.Tensor) -> torch.Tensor:
    n = v.norm(dim=-1, keepdim=True)
    return v / torch.where(n > 0, n, 1)


def _mask_fix_input(source: str, entries: str, size: float, seed: int):
    """debug-nan-and-wrong-gradients.md's mask_fix_input: two rows of x made as
    ``source`` says, the weights of the summed loss, and the Linear (or None). The
    float32 and bfloat16 sources are the ones the check drew before s61b-6, sized
    from 1e-24 as it sized them."""
    generator = torch.Generator().manual_seed(seed)
    low = -7 if "float16" in source else -24
    direction = torch.randn(2, 4, dtype=torch.float64, generator=generator)
    weights = torch.randn(2, 4, generator=generator)
    if entries == "equal":  # the loss x / x.norm() summed: float64's gradient is 0
        direction, weights = torch.ones(2, 4, dtype=torch.float64), torch.ones(2, 4)
    if entries == "rows 1000 times apart":
        direction[1] *= 1000
    direction = direction * 10 ** (low + size * (-1 - low))
    if "Linear" not in source:
        dtype = {"a float16 tensor": torch.float16, "a float32 tensor": torch.float32,
                 "a bfloat16 tensor": torch.bfloat16}[source]
        return direction.to(dtype).requires_grad_(), weights, None
    layer = torch.nn.Linear(4, 4, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(4))
    with torch.autocast("cpu", dtype=torch.float16):
        x = layer(direction.float())
    return x, weights, layer


def the_float16_mask_gives_a_finite_gradient_near_zero(source, entries, size, seed) -> bool:
    """H2, debug-nan-and-wrong-gradients.md (dcf8206:650, 1147-1148): the `where` mask
    "to avoid both" (a nan value and gradient) in float16, read for any vector: at a
    non-zero one of tiny norm its gradient is nan."""
    x, weights, _ = _mask_fix_input(source, entries, size, seed)
    (gradient,) = torch.autograd.grad((_masked(x) * weights.to(x.dtype)).sum(), x)
    return not bool(torch.isnan(gradient).any())


def the_mask_fix_matches_float64_in_any_dtype(source, entries, size, seed) -> bool:
    """r61g-1 M, debug-nan-and-wrong-gradients.md (d2d9261:1177): "Compute the mask and
    `n` from `x.float()` and cast the result back with `.to(x.dtype)`: ... the gradient
    matches float64's wherever that is below half of float16's largest value", named
    no dtype, right after the sentence on float32 and bfloat16: read for those too. In
    float32 `x.float()` changes nothing; at 1e-22 the gradient is 1e20, float64's 0."""
    x, weights, _ = _mask_fix_input(source, entries, size, seed)
    (got,) = torch.autograd.grad((_masked(x.float()).to(x.dtype) * weights.to(x.dtype)).sum(), x)
    reference = x.detach().double().requires_grad_()
    (_masked(reference) * weights.double()).sum().backward()
    if reference.grad.abs().max() >= torch.finfo(torch.float16).max / 2:
        return True
    return torch.allclose(got.double(), reference.grad, rtol=2e-2, atol=2e-2 * float(reference.grad.abs().max()))


def the_mask_fix_leaves_no_nan(source, entries, size, seed) -> bool:
    """r61g-2 M, debug-nan-and-wrong-gradients.md (d2d9261:1177): the float32 mask "cast
    the result back with `.to(x.dtype)`: no `nan`", in the setting the row names, x a
    Linear's output under float16 autocast: once float64's gradient with respect to x
    passes float16's range, x's is inf and the Linear's weight gradient nan."""
    x, weights, layer = _mask_fix_input(source, entries, size, seed)
    wrt = [x] if layer is None else [x, layer.weight]
    gradients = torch.autograd.grad((_masked(x.float()).to(x.dtype) * weights.to(x.dtype)).sum(), wrt)
    return not any(bool(torch.isnan(gradient).any()) for gradient in gradients)


@pytest.mark.parametrize("old_sentence, fails_on", [
    (the_float16_mask_gives_a_finite_gradient_near_zero, "float16"),  # H2
    (the_mask_fix_leaves_no_nan, "a Linear's output under float16 autocast"),  # r61g-2: "no nan"
])
def test_h2_r61g_2_the_float32_mask_s_old_readings(real_claims, old_sentence, fails_on):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients",
           "In float16, compute the mask and `n` from `x.float()`",
           old_sentence, MASK_FIX_SOURCES, MASK_FIX_ENTRIES, MASK_FIX_SIZES, SEEDS, fails_on=fails_on)


def test_r61g_1_the_float32_mask_read_for_any_dtype(real_claims):
    """r61g-1: the sentence now names float16 ("In float16, ..."), and since s61b-6 its
    check draws float16 x only, so the old reading (any dtype) is replayed over the
    sources that check drew before (457fca5), seeded by the same claim: it fails on a
    float32 x, out of the narrowed sentence."""
    [record] = [record for record in real_claims["how-to/debug-nan-and-wrong-gradients"]
                if record["check"] == "check_property"
                and record["quote"].startswith("In float16, compute the mask and `n` from `x.float()`")]
    with pytest.raises(ClaimFailed, match="counterexample: 'a float32 tensor'"):
        check_property(the_mask_fix_matches_float64_in_any_dtype, MASK_FIX_SOURCES_457FCA5,
                       MASK_FIX_ENTRIES_457FCA5, MASK_FIX_SIZES, SEEDS, claim=record["claim"],
                       examples=record["examples"], shrink=False)


def vmap_of_a_train_mode_dropout_network_raises(net, jac, seed) -> bool:
    """R2, misconceptions.md and look-up (per-sample Jacobians): "in training mode
    `vmap` raises on the random mask", with no word on `randomness=`. With
    randomness="different" (jacfwd: its own randomness="same") it runs."""
    dropped = torch.nn.Sequential(*net[:-1], torch.nn.Dropout(0.5), net[-1]).train()
    one_row = lambda row: dropped(row[None])[0]  # noqa: E731
    inner = jac(one_row, randomness="same") if jac is torch.func.jacfwd else jac(one_row)
    try:
        torch.func.vmap(inner, randomness="different")(torch.randn(4, *net.sample_shape,
                                                                   dtype=torch.float64))
    except RuntimeError:
        return True
    return False


def the_bare_model_under_vmap_with_randomness(net, jac, seed) -> bool:
    """s10 refB B6, misconceptions.md and look-up: the training-mode recipe mapped
    the bare ``model`` (``vmap(jacrev(model), randomness="different")``, the jacfwd
    form likewise), naming no condition but "no BatchNorm". A Conv2d-ReLU-Flatten-
    Linear classifier with Dropout raises: Flatten expects the batch dimension."""
    dropped = torch.nn.Sequential(*net[:-1], torch.nn.Dropout(0.5), net[-1]).train()
    inner = jac(dropped, randomness="same") if jac is torch.func.jacfwd else jac(dropped)
    try:
        torch.func.vmap(inner, randomness="different")(torch.randn(4, *net.sample_shape,
                                                                   dtype=torch.float64))
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("docname, quote, jac", [
    ("reference/misconceptions", "For the training-mode Jacobian of a model with Dropout",
     torch.func.jacrev),
    ("reference/look-up-the-questions-people-ask", "With\n`Dropout` in training mode,",
     torch.func.jacfwd)])
def test_s10_b6_the_training_mode_recipe_on_the_bare_model(real_claims, docname, quote, jac):
    from per_sample_jacobians import dropout_models

    replay(real_claims, docname, quote, the_bare_model_under_vmap_with_randomness,
           dropout_models(), st.just(jac), SEEDS, fails_on="Conv2d")


def row_none_works_whatever_the_layers(models, jac) -> bool:
    """s10 refB B1, both pages: "map `lambda row: model(row[None])[0]` instead,
    which works whatever the layers", under the page's vmap(jac). A GRU or an RNN
    raises (no batching rule), as do an LSTM and a TransformerEncoderLayer under
    jacfwd (no forward-mode formula)."""
    for _kind, model, batch in models:
        one_row = lambda row, model=model: model(row[None])[0]  # noqa: E731
        try:
            torch.func.vmap(jac(one_row))(batch)
        except (RuntimeError, NotImplementedError):
            return False
    return True


@pytest.mark.parametrize(("page", "jac"), BATCH_DIMENSION_PAGES)
def test_s10_b1_row_none_works_whatever_the_layers(real_claims, page, jac):
    from per_sample_jacobians import sequence_models

    replay(real_claims, page, "`Linear`, `Conv2d`, activations and `nn.MultiheadAttention`",
           lambda models: row_none_works_whatever_the_layers(models, jac), sequence_models(),
           fails_on="RNN, GRU")


@pytest.mark.parametrize("docname, quote, jac", [
    ("reference/misconceptions", "For the training-mode Jacobian of a model with Dropout",
     torch.func.jacrev),
    ("reference/look-up-the-questions-people-ask", "With\n`Dropout` in training mode,",
     torch.func.jacfwd)])
def test_r2_vmap_raises_on_dropout_in_training_mode_whatever_its_randomness(
        real_claims, docname, quote, jac):
    from per_sample_jacobians import dropout_models

    replay(real_claims, docname, quote, vmap_of_a_train_mode_dropout_network_raises,
           dropout_models(), st.just(jac), SEEDS, fails_on="")


def autocast_output_has_no_numpy_dtype(dtype, seed) -> bool:
    """R7, error-messages.md: "A bfloat16 tensor, such as autocast's output, has no
    NumPy dtype even then". float16 autocast's output converts as it is."""
    layer = torch.nn.Linear(3, 2)
    with torch.autocast("cpu", dtype=dtype):
        out = layer(torch.randn(4, 3))
    try:
        out.numpy(force=True)
    except TypeError:
        return True
    return False


def test_r7_every_autocast_output_needs_float_first(real_claims):
    replay(real_claims, "reference/error-messages", "A bfloat16 tensor, such as\nCPU autocast's",
           autocast_output_has_no_numpy_dtype, autocast_dtypes(), st.integers(0, 2**16),
           fails_on="torch.float16")


# -- Audit of seed 20261207 (rows 17, 19, 29, 4): the edits that stayed green, now red ------

def squared_derivative_is_two_at_every_entry(i) -> bool:
    """Audit row 17, why-backward-z-gives-z.md: "`z.grad` is $2 \\cdot 1 \\cdot 0 = 0$" (a
    wrong derivative factor) passed, because the seed z is 0 there. The page's check now
    measures the derivative apart, with the ones seed, at each entry of its z."""
    z = torch.linspace(-1, 1, steps=5, requires_grad=True)
    (ones_seed_grad,) = torch.autograd.grad(torch.pow(z, 2), z, torch.ones(5))
    return bool(ones_seed_grad[i] == 2 * 1.0)


def test_audit17_the_derivative_factor_at_zero_is_measured(real_claims):
    entries = st.sampled_from([2, 0, 1, 3, 4])
    entries.family_name = "the entries of linspace(-1, 1, 5), z = 0 first"
    replay(real_claims, "tutorial/why-backward-z-gives-z", "For $z^2$ at $z = 0$",
           squared_derivative_is_two_at_every_entry, entries, fails_on="2")


def backward_runs_on_the_complex_output_too(reduction) -> bool:
    """Audit row 19, complex-inputs.md: "reduce to a real number first (…), or call it on
    the complex output directly": the page's check tried the reductions only."""
    leaf = torch.tensor([1 + 2j, -0.5j], dtype=torch.complex128, requires_grad=True)
    y = leaf * leaf
    out = {"none, complex y": y.sum(), "real but two numbers": y.real, ".abs()": y.sum().abs(),
           ".real": y.sum().real, ".imag": y.sum().imag, "a real loss": (y.abs() ** 2).sum()}
    out[reduction].backward()
    return True


def test_audit19_backward_on_the_complex_output_raises(real_claims):
    names = ["none, complex y", "real but two numbers", ".abs()", ".real", ".imag", "a real loss"]
    replay(real_claims, "explanation/complex-inputs", "To call `backward` without an argument",
           backward_runs_on_the_complex_output_too, st.sampled_from(sorted(names)),
           fails_on="none, complex y", because="only for real scalar outputs")


def test_audit29_the_jacobian_shape_rule_of_the_body_is_checked_beyond_vectors(real_claims):
    """Audit row 29, compute-your-first-jacobian.md: "returns a matrix of shape
    `(y.numel(), x.numel())`, here `(3,) + (2,)`" passed the (3, 2) check."""
    replay(real_claims, "tutorial/compute-your-first-jacobian",
           "It takes the function and the point, and returns a tensor of shape",
           functional_jacobian_is_the_flat_m_by_n_matrix, shaped_maps(), fails_on="sin(A x)",
           because="shape")


def products_by_hand(value: float) -> int:
    """The products f runs at a: doublings until |2^n a| >= 1000 (the first is b = 2a),
    and 100 * b below 0; without the leaf's node."""
    n = 1
    while abs(value) * 2 ** n < 1000:
        n += 1
    return n + (value < 0)


def test_audit4_the_figure_counts_nodes_not_products(real_claims):
    """Audit row 4, use-python-control-flow-in-a-dynamic-graph.md: "The figure counts the
    *products* over six orders of magnitude" passed a check of the axis's two ends. The
    page now compares every plotted count with products + the leaf, by hand; the products
    alone are one fewer at every |a| (21 nodes, 20 products at 0.001)."""
    [record] = [r for r in real_claims["explanation/use-python-control-flow-in-a-dynamic-graph"]
                if r["quote"].startswith("The figure counts the nodes") and "nodes_by_hand" in r["compared"]]
    plotted_first = int(record["compared"].split("= tensor([[", 1)[1].split(",", 1)[0])
    assert plotted_first == products_by_hand(1e-3) + 1 == 21
    with pytest.raises(ClaimFailed):
        check_close(torch.tensor([plotted_first]), torch.tensor([products_by_hand(1e-3)]),
                    "the figure counts the products")


# -- Issue 37/39, reference pages (s5 rows 5-6, s4 audit reveals #16, #28, #30, self-audit) --

def _records_quoting(claims, page: str, words: str) -> list[dict]:
    return [record for record in claims.get(page, [])
            if " ".join(words.split()) in " ".join(record["quote"].split())]


def test_s5_glossary_maximum_is_the_expression_a_reader_can_paste(real_claims):
    """s5 reference rows 5-6, glossary.md: "`torch.maximum(x, 0)` returns 0.5" raises
    TypeError as pasted (an int operand), while its check ran a 0-dim tensor operand.
    The sentence and its check now run `torch.maximum(x, torch.zeros_like(x))`."""
    x = torch.tensor(0.0, requires_grad=True)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        torch.maximum(x, 0)
    assert not _records_quoting(real_claims, "reference/glossary", "`torch.maximum(x, 0)`")
    [record] = _records_quoting(real_claims, "reference/glossary",
                                "`torch.maximum(x, torch.zeros_like(x))` returns 0.5")
    assert record["check"] == "check_close" and "x.grad" in record["compared"], record


@pytest.mark.parametrize("page, words", [
    ("reference/glossary", "per-sample gradient The gradient of each example's loss"),
    ("reference/misconceptions", r"$\partial (\sum_i x_i) / \partial x_j = 1$ for every $j$"),
])
def test_audit_16_28_family_reveals_say_what_each_integer_is(real_claims, page, words):
    """s4 audit reveals #16 and #28: the families read "integers from 2 to 5 ×
    integers from 1 to 4 × integers from 0 to 2147483647", saying neither that they
    are batch size, features and seed, nor what the check keeps fixed."""
    found = [r for r in _records_quoting(real_claims, page, words) if r["check"] == "check_property"]
    assert found, f"docs/{page}.md: no property check quotes {words!r}"
    for record in found:
        assert not any(name.startswith("integers from") for name in record["families"]), record["families"]


def test_glossary_per_sample_reveal_names_the_fixed_loss(real_claims):
    [record] = [r for r in _records_quoting(real_claims, "reference/glossary", "per-sample gradient The gradient")
                if r["check"] == "check_property"]
    assert "tanh" in record.get("fixed", ""), record


def test_audit_30_a_function_without_jvp_is_not_said_to_define_only_backward(real_claims):
    """s4 audit reveal #30, differentiation-apis.md: the reveal showed Cube defines
    ['backward', 'forward'] beside "a Function that defines only `backward`". Every
    Function defines forward; what it lacks is a jvp, and the sentence now says so."""
    assert not _records_quoting(real_claims, "reference/differentiation-apis", "defines only `backward`")
    found = _records_quoting(real_claims, "reference/differentiation-apis",
                             "with a `forward` and a `backward` but no `jvp`")
    assert {r["check"] for r in found} == {"check_text", "check_property"}, found


def gradient_of_small_g_is_a_formula_matching_the_two_points_shown(seed) -> None:
    """differentiation-apis.md, "The gradient of g(x) = x_0 x_1 + x_2^2 is
    (x_1, x_0, 2x_2)", was checked at (1, 2, 3) and (0, 1, -1) only, where
    (x_0 + 1, x_1 - 1, 2x_2) gives the same (2, 1, 6) and (1, 0, -2)."""
    at = torch.randn(3, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    g = lambda t: t[0] * t[1] + t[2] ** 2  # noqa: E731
    check_close(torch.stack([at[0] + 1, at[1] - 1, 2 * at[2]]), finite_difference_jacobian(g, at),
                "(x_0 + 1, x_1 - 1, 2 x_2)", atol=1e-6)


def test_apis_gradient_formula_is_checked_beyond_the_two_points(real_claims):
    from families import labelled
    for shown in ([1., 2., 3.], [0., 1., -1.]):
        at = torch.tensor(shown)
        assert torch.equal(torch.stack([at[0] + 1, at[1] - 1, 2 * at[2]]), torch.stack([at[1], at[0], 2 * at[2]]))
    replay(real_claims, "reference/differentiation-apis", "The gradient of $g(x) = x_0 x_1 + x_2^2$ is",
           gradient_of_small_g_is_a_formula_matching_the_two_points_shown,
           labelled(SEEDS, "seeds of standard normal points x in R^3"), fails_on="", because="(x_0 + 1")


def test_glossary_a_write_through_data_escapes_the_version_counter(real_claims):
    """glossary.md, in-place operation: "It fails `backward` when it overwrites a
    saved tensor" held only for writes autograd sees; one through `.data` runs
    backward on the new values with no error. The entry now names that case."""
    leaf = torch.tensor([0.5, -1.0], requires_grad=True)
    out = leaf.exp()
    out.data.add_(1)
    out.sum().backward()  # the old sentence: this raises
    assert torch.allclose(leaf.grad, leaf.detach().exp() + 1)
    assert _records_quoting(real_claims, "reference/glossary",
                            "a write through `x.data`, or to a tensor a saved-tensor hook packed as it is, escapes it")


def test_glossary_forward_mode_claims_are_checked_on_the_forward_mode_rule(real_claims):
    """glossary.md, JVP: "torch.func.jvp and forward_ad compute it in forward mode;
    functional.jvp returns the same J u from two reverse passes" was checked on values
    only, which reverse mode gives as well. A Function whose jvp returns 100 u tells
    the two apart."""
    [forward] = _records_quoting(real_claims, "reference/glossary", "compute it in forward mode")
    assert "100 * u_jvp" in forward["compared"], forward
    [reverse] = _records_quoting(real_claims, "reference/glossary", "from two reverse passes")
    assert "reverse_passes" in reverse["compared"], reverse


# -- s6 self-audit, debug-nan: "wrap f in torch.compiler.disable" -----------------------

def anomaly_mode_names(function) -> str:
    """The backward node detect_anomaly names for the page's f at (-1, 0, 4)."""
    import warnings
    at = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.autograd.detect_anomaly():
                function(at).backward()
        except RuntimeError as error:
            return str(error).split("'")[1]
    return "nothing raised"


def test_debug_nan_compiling_the_disabled_f_still_names_the_compiled_region(real_claims):
    """debug-nan-and-wrong-gradients.md said "Debug the eager function: drop the
    `compile`, or wrap `f` in `torch.compiler.disable`, and it names `SqrtBackward0`"
    and checked disable(f) run eagerly. Read as written, torch.compile of the wrapped f
    still names CompiledFunctionBackward; only a compiled caller of the disabled f
    names SqrtBackward0. The page now says so, and quotes both."""
    def f(x):
        roots = torch.sqrt(x)
        return torch.where(x > 0, roots, torch.zeros_like(x)).sum()

    quotes = [record["quote"] for record in real_claims["how-to/debug-nan-and-wrong-gradients"]]
    assert any(q.startswith("Compiling the wrapped `f` itself is not enough") for q in quotes)
    torch._dynamo.reset()
    assert anomaly_mode_names(torch.compile(torch.compiler.disable(f), backend="aot_eager")) \
        == "CompiledFunctionBackward"  # the old sentence's reading: it does not name SqrtBackward0
    outside = torch.compiler.disable(f)
    assert anomaly_mode_names(torch.compile(lambda t: outside(t * 1.0), backend="aot_eager")) \
        == "SqrtBackward0"


# -- s6 self-audit, forward-mode: jacobian's shape beyond 1-d (as audit #29) -------------

def jacobian_is_numel_by_numel(x_shape, y_shape) -> bool:
    """The reading a 1-d example cannot refute: the shape is (y.numel(), x.numel())."""
    import math
    weights = torch.ones(math.prod(y_shape), math.prod(x_shape), dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(
        lambda t: (weights @ t.reshape(-1)).reshape(y_shape), torch.ones(x_shape, dtype=torch.float64))
    return tuple(jac.shape) == (math.prod(y_shape), math.prod(x_shape))


def test_forward_mode_jacobian_shape_is_not_numel_by_numel(real_claims):
    shapes = st.lists(st.integers(1, 3), max_size=3).map(tuple)
    shapes.family_name = "shapes of rank 0 to 3 with sides 1 to 3"
    replay(real_claims, "explanation/forward-mode-jacobian-vector-products",
           "{py:func}`torch.autograd.functional.jacobian` returns shape", jacobian_is_numel_by_numel,
           shapes, shapes, fails_on="()")


# -- s4 audit #1, #8: the first example of what-backward-computes, the chain rule's seed ----

def page_f_is_x0_squared_plus_x1_squared(p) -> None:
    """Audit #1, what-backward-computes: "$f(x) = (x_0 x_1,\\ \\sin x_0,\\ x_0^2 + x_1^2)$",
    an edit that agrees with the page's f at (1, 2) (both give 5 there)."""
    import math

    x0, x1 = p.tolist()
    page_f = torch.stack([p[0] * p[1], torch.sin(p[0]), p[0] + p[1] ** 2])
    check_close(page_f, torch.tensor([x0 * x1, math.sin(x0), x0**2 + x1**2], dtype=p.dtype),
                "f(x) = (x0 x1, sin x0, x0^2 + x1^2)")


def test_s4_1_the_example_f_is_checked_away_from_its_point(real_claims):
    replay(real_claims, "explanation/what-backward-computes", r"Take $f: \mathbb{R}^2",
           page_f_is_x0_squared_plus_x1_squared, points(n=2), fails_on="tensor(",
           because="f(x) = (x0 x1, sin x0, x0^2 + x1^2)")


def a_y_shaped_seed_enters_from_either_side(chain) -> None:
    """Audit #8, reverse-mode-is-a-chain-of-vjps: "a seed $v$ (shaped like $y$) can enter
    from the left or from the right": from the right, J v needs v shaped like x."""
    n, g, m, seed = chain
    gen = torch.Generator().manual_seed(seed)
    J = torch.randn(m, n, dtype=torch.float64, generator=gen)
    v = torch.randn(m, dtype=torch.float64, generator=gen)
    v @ J  # from the left
    J @ v  # from the right


def test_s4_8_a_y_shaped_seed_enters_from_the_left_only(real_claims):
    from vjp_chains import three_step_chains

    replay(real_claims, "explanation/reverse-mode-is-a-chain-of-vjps",
           "The chain rule multiplies them, and a seed $v$", a_y_shaped_seed_enters_from_either_side,
           three_step_chains(), fails_on="(", because="size mismatch")


def a_loss_linear_in_the_last_weight_leaves_no_graph(setting) -> bool:
    """higher-order-derivatives (self-audit): "A loss linear in a parameter (a critic's
    `model(data).mean()`, in the last bias) leaves that gradient without a graph". The
    mean is linear in the last Linear's weight too, yet that gradient, the mean input of
    the layer, is computed from the earlier parameters and has a graph."""
    model = setting.model
    last = list(model.modules())[-1]
    if not isinstance(last, torch.nn.Linear):  # not linear in its weight: nothing to say
        return True
    (weight_grad,) = torch.autograd.grad(model(setting.inputs.detach()).mean(), [last.weight],
                                         create_graph=True)
    return weight_grad.grad_fn is None


def test_self_audit_higher_order_linear_is_not_a_constant_derivative(real_claims):
    from reader_settings import image_batches, multi_feature_inputs, train_mode_models

    replay(real_claims, "explanation/higher-order-derivatives",
           "A loss whose derivative in a parameter is a constant",
           a_loss_linear_in_the_last_weight_leaves_no_graph,
           st.one_of(image_batches(), multi_feature_inputs(), train_mode_models()), fails_on="")


def second_derivative_of_the_cube_is_3t_squared(t0) -> None:
    """higher-order-derivatives (self-audit): "$d^2y/dt^2$" of $t^3$ checked only at
    t = 2, where 6t and 3t^2 both give 12: the edit "$d^2y/dt^2 = 3t^2$" passed."""
    t = torch.tensor(t0, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(t**3, t, create_graph=True)
    (second,) = torch.autograd.grad(first, t)
    check_close(second, torch.tensor(3 * t0**2, dtype=torch.float64), "d2y/dt2 = 3t^2")


def test_self_audit_higher_order_the_cube_is_checked_away_from_2(real_claims):
    from families import labelled

    replay(real_claims, "explanation/higher-order-derivatives", "Start with one variable",
           second_derivative_of_the_cube_is_3t_squared,
           labelled(st.floats(-5, 5, allow_nan=False), "t, any float from -5 to 5"), fails_on="",
           because="d2y/dt2 = 3t^2")


def test_self_audit_saves_a_custom_function_node_has_no_saved_attributes():
    """see-what-autograd-saves-for-backward (self-audit): "Each node of the graph (the
    tensor's `grad_fn`) exposes what it kept as attributes named `_saved_*`" is false for
    a custom autograd.Function, whose node keeps save_for_backward's tensors in
    saved_tensors; the page now names that exception."""

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, cotangent):
            (t,) = ctx.saved_tensors
            return 2 * t * cotangent

    x = torch.randn(3, requires_grad=True)
    node = Square.apply(x).grad_fn
    assert [name for name in dir(node) if name.startswith("_saved_")] == []
    assert node.saved_tensors[0] is x


# -- s6 self-audit of the how-to pages stop-gradients and check-gradients --------------

def backward_raises_the_version_error(out) -> bool:
    """Whether ``out.sum().backward()`` raises because a tensor it saved changed in place."""
    try:
        out.sum().backward()
    except RuntimeError as error:
        return "modified by an inplace operation" in str(error)
    return False


def a_write_into_a_saved_tensor_always_raises(case) -> bool:
    """Audit s4 #21, stop-gradients.md: "If the graph saved the tensor you modify, the
    backward pass sees the new version and refuses to use the changed value", with no
    word on `.data`: a write through t.data into the input sin saved."""
    out = torch.sin(case.tensor)
    case.tensor.data.add_(1.0)
    return backward_raises_the_version_error(out)


def test_s4_21_a_write_through_data_into_a_saved_tensor_goes_unnoticed(real_claims):
    replay(real_claims, "how-to/stop-gradients", "If the graph saved the tensor such an operation changes",
           a_write_into_a_saved_tensor_always_raises, non_leaf_inputs(), fails_on="randn(3, 2")


GRADCHECK_STATES = {"freshly compiled": None,
                    "a training step on plain data, batch 4": (False, 4),
                    "a training step on plain data, batch 2": (False, 2),
                    "a training step on inputs that require grad, batch 4": (True, 4),
                    "a training step on inputs that require grad, batch 16": (True, 16)}
GRADCHECK_FUNCTIONS = ("the tanh MLP", "tanh(x).sum()", "the page's g", "one Linear", "torch.tanh",
                       "Linear · Tanh")
GRADCHECK_MODULES = ("the tanh MLP", "one Linear", "Linear · Tanh")
GRADCHECK_AFTER_TRAINING = st.sampled_from(
    [f"{function}, {state}" for function in GRADCHECK_FUNCTIONS for state in GRADCHECK_STATES
     if function in GRADCHECK_MODULES or "plain data" not in state])
GRADCHECK_AFTER_TRAINING.family_name = (
    "an MLP, one Linear, tanh(x).sum(), torch.tanh, Linear · Tanh and the page's g under "
    "torch.compile(backend=\"aot_eager\"), fresh or after one training step, checked at batch 4")
# r25h5 R5, R1: the page's family for its first compile sentence adds each module in
# a loss computed outside it, and functions returning views of their input.
GRADCHECK_VIEWS = {"t[1:].t()": lambda t: t[1:].t(),
                   "an expand": lambda t: t.unsqueeze(0).expand(3, *t.shape),
                   "a transpose and its sine": lambda t: (t.t(), t.t().sin()),
                   "a split into rows": lambda t: t.split(1),
                   "two views t.T and t[0]": lambda t: (t.T, t[0]),
                   "a chunk in two": lambda t: t.chunk(2),
                   "an unbind": lambda t: t.unbind(0)}
_COMPUTING = [f"{function}, {state}" for function in GRADCHECK_FUNCTIONS for state in GRADCHECK_STATES
              if function in GRADCHECK_MODULES or "plain data" not in state]
GRADCHECK_ALL_CASES = st.sampled_from(
    _COMPUTING
    + [f"{case}, in a loss" for case in _COMPUTING
       if case.split(", ")[0] in GRADCHECK_MODULES]
    + [f"{function}, {state}" for function in GRADCHECK_VIEWS
       for state in ("freshly compiled", "a training step on inputs that require grad, batch 16")]
    + [f"{function}, freshly compiled, in a loss" for function in GRADCHECK_VIEWS
       if not isinstance(GRADCHECK_VIEWS[function](torch.zeros(2, 2)), tuple)])
GRADCHECK_ALL_CASES.family_name = ("the cases below, each also in a loss computed outside "
                                   "the compiled module, and functions returning views of "
                                   "their input (a slice and transpose, an expand, a "
                                   "transpose with its sine, a split into rows, two "
                                   "views as a tuple, a chunk, an unbind)")


def compiled_mlp_after(case):
    """check-gradients.md's compiled cases: what ``case`` names (float64) under
    aot_eager, compiled anew, after the training step it names (if any), and
    gradcheck's input ((4, 2) for the modules, 4 numbers for the functions)."""
    function, state = case.removesuffix(", in a loss").split(", ", 1)
    step = GRADCHECK_STATES[state]
    generator = torch.Generator().manual_seed(0)
    if function == "the tanh MLP":
        eager, shape = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(),
                                           torch.nn.Linear(8, 1)).double(), (lambda n: (n, 2))
    elif function == "one Linear":
        eager, shape = torch.nn.Linear(2, 1).double(), (lambda n: (n, 2))
    elif function == "Linear · Tanh":
        eager, shape = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh()).double(), (lambda n: (n, 2))
    elif function == "torch.tanh":
        eager, shape = torch.tanh, (lambda n: (n,))
    elif function in GRADCHECK_VIEWS:
        eager, shape = GRADCHECK_VIEWS[function], (lambda n: (n, 2))
    elif function == "tanh(x).sum()":
        eager, shape = (lambda t: torch.tanh(t).sum()), (lambda n: (n,))
    else:
        eager, shape = (lambda t: (t ** 2 * torch.sin(t)).sum()), (lambda n: (n,))
    inputs = torch.randn(*shape(4), dtype=torch.float64, generator=generator, requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(eager, backend="aot_eager")
    if step is not None:
        batch = torch.randn(*shape(step[1]), dtype=torch.float64, generator=generator,
                            requires_grad=step[0])
        outputs = compiled(batch)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        sum(output.sum() for output in outputs).backward()
    if case.endswith(", in a loss"):
        return (lambda t: compiled(t).sum()), inputs
    return compiled, inputs

def gradcheck_raises_after_any_training_step(state) -> bool:
    """Rows 1-2, check-gradients.md (f7cafa7:426-428): "when the function was first
    compiled by a training step (a forward pass and `backward()`), `gradcheck` raises
    too", read of the usual step, on plain data of gradcheck's batch size (of the
    functions the page drew then: torch.tanh and Linear · Tanh came with r63f-1). Only
    plain-data steps are read: on other steps, functions that save no computed tensor
    fail it too (r65f-1's new quote draws those first)."""
    if "plain data" not in state or state.startswith(("torch.tanh", "Linear · Tanh")):
        return True
    compiled, inputs = compiled_mlp_after(state)
    try:
        torch.autograd.gradcheck(compiled, (inputs,))
    except RuntimeError as error:
        return "donated buffers" in str(error)
    return False


def test_howto39_1_gradcheck_passes_after_a_training_step_on_plain_data(real_claims):
    replay(real_claims, "how-to/check-gradients", "Handed such a computing function itself, `gradcheck` passes",
           gradcheck_raises_after_any_training_step, GRADCHECK_AFTER_TRAINING,
           fails_on="a training step on plain data")  # r61f-3's quote changed the draws


def donated_buffers_after_any_such_step(case) -> bool:
    """s10 A2, check-gradients.md (19af9dd:435-437): "After a training step on an input
    that required grad, or on another batch size, both raise ("compiled with non-empty
    donated buffers")", of any compiled function; the page's g, whose compiled backward
    saves only its input, still passes gradcheck."""
    state = case.split(", ", 1)[1]
    if state in ("freshly compiled", "a training step on plain data, batch 4"):
        return True
    compiled, inputs = compiled_mlp_after(case)
    try:
        torch.autograd.gradcheck(compiled, (inputs,))
    except RuntimeError as error:
        return "donated buffers" in str(error)
    return False


def test_s10_a2_gradcheck_after_a_step_depends_on_what_the_backward_saves(real_claims):
    replay(real_claims, "how-to/check-gradients", "After a training step (a forward pass and `backward()`) on an input that required grad",
           donated_buffers_after_any_such_step, GRADCHECK_AFTER_TRAINING,
           fails_on=", a training step")  # one Linear, the page's g, torch.tanh or Linear · Tanh


def gradcheck_passes_after_eval_whatever_the_dropout(p, width, seed, form) -> bool:
    """r62f-1, check-gradients.md (e6a1179:173-175): "Dropout in train mode draws a new
    mask per evaluation ...: check after `model.eval()`", read of any Dropout: a
    forward calling F.dropout(t, p) keeps `training=True` whatever eval() says."""
    torch.manual_seed(seed)
    linear = torch.nn.Linear(3, width).double()
    drop = torch.nn.Dropout(p).eval() if form == "nn.Dropout" else (
        lambda t: torch.nn.functional.dropout(t, p))
    inputs = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    return torch.autograd.gradcheck(lambda t: drop(linear(t)), (inputs,), raise_exception=False)


def test_r62f_1_eval_does_not_stop_functional_dropout(real_claims):
    replay(real_claims, "how-to/check-gradients", "or pass by luck when the masks it compares happen to match",
           gradcheck_passes_after_eval_whatever_the_dropout,
           labelled(st.sampled_from([0.02, 0.05, 0.1, 0.5]), "p from 0.02 to 0.5"),
           labelled(st.integers(1, 4), "Linear(3, width), width 1 to 4"), labelled(SEEDS, "seeds"),
           labelled(st.sampled_from(["nn.Dropout", "F.dropout"]),
                    "nn.Dropout, or F.dropout(t, p) in forward (training left True)"),
           fails_on="F.dropout")



def donated_buffers_whenever_it_saves_a_computed_tensor(case) -> bool:
    """r63f-1 (E), check-gradients.md (83070eb:812-817): after a training step on an
    input that required grad or on another batch size "both raise ("compiled with
    non-empty donated buffers") if the compiled backward saves a tensor the forward pass
    computed", read of torch.tanh and Linear · Tanh, which save tanh(x): they pass."""
    function, state = case.split(", ", 1)
    if state in ("freshly compiled", "a training step on plain data, batch 4") or function in (
            "the page's g", "one Linear"):
        return True
    return donated_buffers_after_any_such_step(case)


def test_r63f_1_a_compiled_function_that_returns_what_it_saves_is_not_donated(real_claims):
    replay(real_claims, "how-to/check-gradients", "After a training step (a forward pass and `backward()`) on an input that required grad",
           donated_buffers_whenever_it_saves_a_computed_tensor, GRADCHECK_AFTER_TRAINING,
           fails_on="anh, a training step")  # torch.tanh or Linear · Tanh


def test_r64e_2_a_micro_batch_that_counts_no_target_makes_the_shares_nan(real_claims):
    """r64e-2 (M), accumulate (dbe71ba:1247-1249): "Weight each micro-batch's mean loss by
    its share of the counted weight". A micro-batch whose targets are all of a class
    weighted 0 has a nan mean, and its share 0 times it is nan: every gradient is nan.
    The page's check now draws such micro-batches."""
    [record] = [record for record in real_claims["how-to/accumulate-zero-and-reuse-gradients"]
                if record["check"] == "check_property"
                and " ".join(record["quote"].split()).startswith("In one process, sum the unreduced loss")]
    assert "counting no target" in record["families"][0], record["families"]
    features = torch.randn(4, 3, dtype=torch.float64)
    labels, class_weight = torch.tensor([0, 0, 1, 2]), torch.tensor([0.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    W = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    for x, t, share in zip(features.chunk(2), labels.chunk(2), (0.0, 1.0)):
        torch.nn.functional.cross_entropy(x @ W, t, weight=class_weight).mul(share).backward()
    assert W.grad.isnan().all(), "the old sentence's recipe: the whole-batch gradient"


def test_r64b_1_one_step_after_both_backward_passes_trains_d_with_g_s_loss():
    """r64b-1 (M), error-messages (dbe71ba:1780): "Run both backward passes, then step
    once." For a GAN whose losses both run through D(fake), D's step then also follows
    the generator's loss: D's .grad is not its own loss's gradient. The sentence now
    names its condition (both losses should train the same parameters)."""
    torch.manual_seed(0)
    G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    fake, real = G(torch.randn(4, 2)), torch.randn(4, 2)
    d_loss = D(real).mean() - D(fake).mean()
    g_loss = D(fake).mean()
    own = torch.autograd.grad(d_loss, D.weight, retain_graph=True)[0]
    d_loss.backward(retain_graph=True)
    g_loss.backward()
    assert not torch.allclose(D.weight.grad, own), "the old recipe: D's own gradient"


def assert_checks_now_quote(claims, page: str, quoting: str, words: str) -> None:
    """Every check of docs/<page>.md whose quote holds ``quoting`` quotes ``words``:
    the narrowed sentence, not the old one, is what is checked (whitespace folded)."""
    fold = lambda text: " ".join(text.split())  # noqa: E731
    quotes = [record["quote"] for record in claims[page] if fold(quoting) in fold(record["quote"])]
    assert quotes and all(fold(words) in fold(quote) for quote in quotes), (page, quotes)


def test_r65f_1_a_batch_of_one_compiles_anew_after_a_step(real_claims):
    """r65f-1 (E), check-gradients (77a5941:812-815): after a training step on an input
    that required grad, gradcheck and gradgradcheck "both raise ("compiled with non-empty
    donated buffers")" if the compiled backward saves a computed tensor. Checked at a
    batch of one, the tanh MLP compiles anew (size 1 is specialized): gradcheck passes.
    The sentence now says "can raise"; its check still draws batch 4."""
    assert_checks_now_quote(real_claims, "how-to/check-gradients", "After a training step (a forward pass",
                            "both can raise instead")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    torch._dynamo.reset()
    compiled = torch.compile(mlp, backend="aot_eager")
    compiled(torch.randn(4, 2, dtype=torch.float64, requires_grad=True)).sum().backward()
    one = torch.randn(1, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(compiled, (one,)), "the old sentence: gradcheck raises"


def test_r66a_1_an_eval_lstm_writes_in_place_under_linearize(real_claims):
    """r66a-1 (M), pass-options (064b67a:478-479): "PyTorch layers that write in place
    inside, such as `nn.RMSNorm`, `nn.GRU` and `nn.RNN`", read as the list to go by: a
    float64 nn.LSTM in eval() with frozen weights linearizes with no error, and from the
    second call on jvp_fn(u) is not J u. The sentence now names nn.LSTM too."""
    assert_checks_now_quote(real_claims, "how-to/pass-options-to-torch-func-transforms",
                            "layers that write in place inside", "`nn.LSTM`")
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(4, 5, batch_first=True).double().eval().requires_grad_(False)
    at = torch.randn(2, 3, 4, dtype=torch.float64)
    u = torch.ones_like(at)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _value, jvp_fn = torch.func.linearize(lambda t: lstm(t)[0], at)
    want = torch.func.jvp(lambda t: lstm(t)[0], (at,), (u,))[1]
    calls = [jvp_fn(u) for _ in range(2)]
    assert torch.allclose(calls[0], want) and not torch.allclose(calls[1], want), "the old list: no in-place LSTM"


def test_audit5_12_a_complex_input_makes_the_input_shaped_seed_raise(real_claims):
    """audit5 #12, non-scalar (064b67a:564-566): "For an elementwise function of `x` alone
    ... the two always have the same shape, so the wrong seed runs": for abs of a complex
    x the shapes match and the seed torch.ones_like(x) raises (its dtype is complex, the
    output's real). The sentence now says from a real x to a real y."""
    assert_checks_now_quote(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
                            "always have the same shape", "from a real `x` to a real `y`")
    x = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        x.abs().backward(torch.ones_like(x))


def test_r65b_1_targets_of_minus_100_are_ignored_without_ignore_index(real_claims):
    """r65b-1/-2 (M), non-scalar and error-messages (77a5941:258, :96): the counted-weights
    recipe was "for class weights or `ignore_index`", read as an argument the reader
    passed. cross_entropy ignores targets of -100 by default: with no ignore_index
    passed, .mean() of the unreduced loss is not the loss's own mean."""
    for page, start in (("reference/error-messages", "For `cross_entropy` or `nll_loss` with class-index"),
                        ("how-to/backpropagate-from-a-non-scalar-output", "A classification loss with class-index")):
        assert_checks_now_quote(real_claims, page, start, "ignored targets (`ignore_index`, -100 by default)")
    scores, labels = torch.randn(6, 4, dtype=torch.float64), torch.tensor([1, 3, -100, 0, -100, 2])
    unreduced = torch.nn.functional.cross_entropy(scores, labels, reduction="none")
    builtin = torch.nn.functional.cross_entropy(scores, labels)
    assert not torch.isclose(unreduced.mean(), builtin), "the old reading: .mean() is the loss"
    assert torch.isclose(unreduced.sum() / (labels != -100).sum(), builtin)

NO_GRAD_VIEWS = {"t[:1]": lambda t: t[:1], "t.view(-1)": lambda t: t.view(-1),
                 "t.unsqueeze(0)": lambda t: t.unsqueeze(0), "t.t()": lambda t: t.t(),
                 "t.expand(2, 3, 2)": lambda t: t.expand(2, 3, 2), "t.select(0, 1)": lambda t: t.select(0, 1),
                 "t.split(1)[0]": lambda t: t.split(1)[0], "t.diagonal()": torch.diagonal}
NO_GRAD_VIEW_FAMILY = st.sampled_from(sorted(NO_GRAD_VIEWS))
NO_GRAD_VIEW_FAMILY.family_name = "views: slicing, view, unsqueeze, t, expand, select, split, diagonal"
NO_GRAD_VIEW_BASES = st.sampled_from(["a leaf", "a non-leaf (leaf * 2)"])
NO_GRAD_VIEW_BASES.family_name = "inputs that require grad"


def no_grad_outputs_never_require_grad(view, base_kind) -> bool:
    """s6, stop-gradients.md (f7cafa7:344-345): "Inside `torch.no_grad`, operations are
    not recorded: their outputs have `requires_grad=False` and no `grad_fn`, even when
    their inputs require grad". A view of such an input keeps requires_grad=True."""
    leaf = torch.randn(3, 2, requires_grad=True)
    t = leaf if base_kind == "a leaf" else leaf * 2
    with torch.no_grad():
        out = NO_GRAD_VIEWS[view](t)
    return not out.requires_grad and out.grad_fn is None


def test_s6_no_grad_views_of_inputs_that_require_grad_keep_the_flag(real_claims):
    replay(real_claims, "how-to/stop-gradients", "A view of an input that requires grad",
           no_grad_outputs_never_require_grad, NO_GRAD_VIEW_FAMILY, NO_GRAD_VIEW_BASES, fails_on="t")


from second_backward import summed_chain  # noqa: E402


def a_second_backward_always_fails(chain) -> bool:
    """s6, accumulate-zero-and-reuse-gradients.md (f7cafa7:866-867): "A backward pass
    frees the intermediate values the graph saved, so a second backward through the
    same part of the graph fails", of any graph: one that saved nothing runs twice."""
    return second_backward_raises(summed_chain(chain, torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True)))


def second_backward_raises(out) -> bool:
    """Whether a second backward of ``out``, after a first, raises the second-backward error."""
    out.backward()
    try:
        out.backward()
    except RuntimeError as error:
        return "a second time" in str(error)
    return False


def test_s6_a_graph_that_saved_nothing_runs_backward_twice(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "so a second backward through a part of the graph that saved one fails",
           a_second_backward_always_fails, operation_chains(), fails_on="[")


INFERENCE_VIEW_BASES = st.sampled_from(["a leaf", "a tensor that does not require grad"])
INFERENCE_VIEW_BASES.family_name = "normal tensors"


def every_result_of_inference_mode_is_an_inference_tensor(view, base_kind) -> bool:
    """s6, stop-gradients.md (f7cafa7:53, 501-502): `inference_mode` gives "*inference
    tensors*: no graph, no version counter", of every operation in the block. A view of
    a normal tensor taken there stays normal, with a version counter and its base."""
    leaf = torch.randn(3, 2, requires_grad=True)
    base = leaf if base_kind == "a leaf" else (leaf * 2).detach()
    with torch.inference_mode():
        viewed = NO_GRAD_VIEWS[view](base)
    return viewed.is_inference()


def test_s6_inference_mode_views_of_normal_tensors_stay_normal(real_claims):
    replay(real_claims, "how-to/stop-gradients", "A view of a normal tensor taken inside the block",
           every_result_of_inference_mode_is_an_inference_tensor, NO_GRAD_VIEW_FAMILY, INFERENCE_VIEW_BASES,
           fails_on="t")


# -- r57e-2: stop-gradients.md, a conversion with nothing to do returns its input ----------

from conversions import CONVERSIONS, conversion_families, prediction  # noqa: E402


def every_output_of_the_blocks_is_new(old_mode):
    """r57e-2 M, stop-gradients.md (57eca8f:53-54, 411, 1535): no_grad gives "outputs with
    `requires_grad=False` (views of inputs that require grad, and tensors changed in place,
    aside) | fine, as constants", and inference_mode "*inference tensors* (views of normal
    tensors aside)", of every operation in the block. A conversion with nothing to do
    (`pred.float()` of a float32 pred) returns pred itself, graph and all."""
    def holds(way, kind, mode) -> bool:
        _leaf, pred = prediction(kind)
        with getattr(torch, mode)():
            out = CONVERSIONS[way](pred)
        if mode != old_mode:
            return True  # the other block's sentence
        return out.is_inference() if mode == "inference_mode" else not out.requires_grad
    return holds


@pytest.mark.parametrize("quote, old_mode", [
    ("Under `no_grad` (and `inference_mode`), some calls that have nothing to do", "no_grad"),
    ("Under `no_grad` (and `inference_mode`), some calls that have nothing to do", "inference_mode"),
    ("and an input a call returns unchanged, aside)", "inference_mode"),
    ("; some calls with nothing to do, such as `.float()` of a float32 tensor", "no_grad"),
])
def test_r57e_2_a_conversion_with_nothing_to_do_is_its_input(real_claims, quote, old_mode):
    replay(real_claims, "how-to/stop-gradients", quote, every_output_of_the_blocks_is_new(old_mode),
           *conversion_families(), fails_on={
               ("Under `no_grad` (and `inference_mode`), some calls that have nothing to do", "no_grad"):
                   "'nn.Identity()(x)', 'float64', 'no_grad'",
               ("; some calls with nothing to do, such as `.float()` of a float32 tensor", "no_grad"):
                   "'x.to(float64)', 'float64', 'no_grad'",
           }.get((quote, old_mode), f"'nn.Dropout().eval()(x)', 'float32', '{old_mode}'"))


# -- s6-g: audit rows #13 and #18, and the inner jacfwd's randomness (s5 how-to 3-5) --

from families import linear_maps, seed_batches  # noqa: E402


def batched_seeds_give_the_rows_of_J(fmap, seed_batch) -> bool:
    """#13, get-a-full-jacobian-or-hessian: "`torch.autograd.grad` returns the rows of J,
    whatever seeds you pass", which the old check (seeds torch.eye(3) only, where each
    vᵀJ is a row) could not tell from one vᵀJ per seed."""
    count, seed = seed_batch
    at = fmap.point()
    leaf = at.clone().requires_grad_(True)
    out = fmap(leaf)
    seeds = torch.randn(count, *out.shape, dtype=at.dtype,
                        generator=torch.Generator().manual_seed(seed))
    (batched,) = torch.autograd.grad(out, leaf, seeds, is_grads_batched=True)
    J = torch.autograd.functional.jacobian(fmap, at)
    rows = min(count, J.shape[0])
    return torch.allclose(batched[:rows], J[:rows])


def test_13_batched_seeds_give_one_vjp_each_not_the_rows(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "With the classic API the same trick",
           batched_seeds_give_the_rows_of_J,
           st.one_of(vector_maps(), linear_maps(m=st.integers(1, 5))), seed_batches(), fails_on="")


def seed_e1_gives_0_1_x2_plus_3(point) -> bool:
    """#18, backpropagate-from-a-non-scalar-output: the gradient of y_1 = x_1 + x_2^2 as
    "(0, 1, x_2 + 3)", which equals (0, 1, 2 x_2) at the page's x_2 = 3 only."""
    leaf = point.clone().requires_grad_(True)
    torch.stack([leaf[0] * leaf[1], leaf[1] + leaf[2] ** 2]).backward(
        torch.tensor([0.0, 1.0], dtype=point.dtype))
    return torch.allclose(leaf.grad, torch.stack([point[2] * 0, point[2] * 0 + 1, point[2] + 3]))


def test_18_the_row_formula_is_checked_at_more_than_x2_3(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "That is row 1 of $J$",
           seed_e1_gives_0_1_x2_plus_3, points(n=3), fails_on="")


def different_on_the_inner_jacfwd_keeps_one_mask(setting) -> bool:
    """s5 how-to rows 3-5, differentiate-a-network-output: "keep the masks with
    `randomness=` on `vmap` and on `jacfwd`", read as "different" on both (the old check's
    Linear(1, 16) pushes one tangent, so it could not tell): each sample's Hessian would
    then come from one mask, hence be symmetric."""
    first, activation, last = setting.model
    dropped = torch.nn.Sequential(first, activation, torch.nn.Dropout(0.5), last).train()
    H = torch.func.vmap(torch.func.jacfwd(torch.func.jacrev(dropped), randomness="different"),
                        randomness="different")(setting.inputs.detach())
    return torch.allclose(H, H.transpose(-1, -2))


def test_s5_inner_jacfwd_randomness_must_be_same(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           'Keep `"same"` on the inner `jacfwd`', different_on_the_inner_jacfwd_keeps_one_mask,
           multi_feature_inputs(features=st.integers(2, 3)), fails_on="")


# -- s6 self-audit: compiled double backward, a carried loop state, x³'s piled grad ------

def compiling_a_disabled_function_differentiates_twice(g, seed, around) -> bool:
    """Row 1, error-messages.md: "or wrap it in torch.compiler.disable", read as
    disable(f) then torch.compile: the second grad would be a tensor. It raises."""
    from compiled_double_backward import second_grad_through_compile

    at = g.point(seed).requires_grad_(True)
    return isinstance(second_grad_through_compile(torch.compiler.disable(g), at), torch.Tensor)


def test_s6_1_compiling_a_disabled_function_still_raises(real_claims):
    from compiled_double_backward import around_the_call, curved_sums, point_seeds

    replay(real_claims, "reference/error-messages", "**Fix:** take the derivatives that are differentiated",
           compiling_a_disabled_function_differentiates_twice, curved_sums(), point_seeds(),
           around_the_call(), fails_on="summed")


def disable_inside_fixes_whatever_is_around_it(g, seed, around) -> bool:
    """s12 refA R4, error-messages.md: "where a compiled function calls it, wrap that
    inner function in torch.compiler.disable", read with any compiled work around the
    call: the second grad would be eager mode's. Nonlinear work raises or is wrong."""
    from compiled_double_backward import AROUND, second_grad_through_compile

    make, _on_results, _weights = AROUND[around]
    at = g.point(seed).requires_grad_(True)
    inside = second_grad_through_compile(make(torch.compiler.disable(g)), at)
    true = second_grad_through_compile(make(g), at, compiled=False)
    return isinstance(inside, torch.Tensor) and torch.allclose(inside, true)


def test_s12_refA_r4_disable_fixes_only_linear_work_around_the_call(real_claims):
    from compiled_double_backward import around_the_call, curved_sums, point_seeds

    # the first member drawn that breaks it is work around the call that is not linear
    replay(real_claims, "reference/error-messages", "**Fix:** take the derivatives that are differentiated",
           disable_inside_fixes_whatever_is_around_it, curved_sums(), point_seeds(),
           around_the_call(), fails_on="'E(t) ** 2'")


def retain_graph_in_the_loop_gives_stale_gradients_or_raises(w0, steps) -> bool:
    """Rows 3-4, error-messages.md: "retain_graph=True would only trade this error for
    stale gradients or an in-place error". With no optimizer step it raises nothing,
    and w.grad is the full gradient of the summed losses."""
    w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    state, total = torch.tensor(1.0, dtype=torch.float64), 0
    try:
        for _step in range(steps):
            state = torch.tanh(w * state)
            total = total + state
            state.backward(retain_graph=True)
    except RuntimeError:
        return True
    (full,) = torch.autograd.grad(total, w)
    return not torch.allclose(w.grad, full)


def test_s6_3_retain_graph_in_the_loop_gives_the_full_gradient(real_claims):
    from families import labelled

    replay(real_claims, "reference/error-messages", "This is truncated backpropagation through time:",
           retain_graph_in_the_loop_gives_stale_gradients_or_raises,
           labelled(st.floats(0.2, 2.0), "weights w from 0.2 to 2"),
           labelled(st.integers(2, 4), "loops of 2 to 4 iterations"), fails_on="")


def penalty_through_a_compiled_critic_trains(setting, before) -> bool:
    """Row 7, look-up.md: the WGAN-GP answer named batch norm as the only setting to
    avoid, so a compiled critic would train with the penalty. It raises (r58c-1: at its
    backward, or after a generator step already at its first grad)."""
    from compiled_critic import penalty_through_a_critic

    return penalty_through_a_critic(setting, before)[0] == "runs"


def test_s6_7_the_penalty_through_a_compiled_critic_raises(real_claims):
    from compiled_critic import before_the_penalty

    replay(real_claims, "reference/look-up-the-questions-people-ask", "And do not compute the\npenalty",
           penalty_through_a_compiled_critic_trains, compiled_modules(), before_the_penalty(),
           fails_on="compiled MLP")


def two_create_graph_calls_pile_3x2_plus_6x2(at) -> None:
    """Self-audit, error-messages.md: "`x.grad` ends as 3x² + 6x" was checked at x = 1
    only, where 3x² + 6x² is the same 9. The family tells them apart."""
    import warnings

    leaf = torch.tensor(at, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (leaf ** 3).backward(create_graph=True)
        leaf.grad.backward(create_graph=True)
    check_close(leaf.grad, torch.tensor(3 * at ** 2 + 6 * at ** 2, dtype=torch.float64), "3x² + 6x²")


def test_s6_piled_grad_is_not_3x2_plus_6x2(real_claims):
    from families import labelled

    replay(real_claims, "reference/error-messages", "`x.grad` ends as $3x^2 + 6x$, neither derivative",
           two_create_graph_calls_pile_3x2_plus_6x2,
           labelled(st.floats(0.25, 3.0) | st.floats(-3.0, -0.25), "x from 0.25 to 3, and -3 to -0.25"),
           fails_on="", because="3x² + 6x²")


def blitz_a_grad_is_45a_minus_54(n, seed) -> None:
    """Self-audit, look-up.md: the blitz sentence's "a.grad = 9a²" was pinned by the
    values at a = (2, 3) only, which 45a - 54 also gives. The family tells them apart."""
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(n, dtype=torch.float64, generator=generator).requires_grad_()
    (3 * a ** 3).backward(torch.ones(n, dtype=torch.float64))
    check_close(a.grad, 45 * a.detach() - 54, "a.grad = 45a - 54")


def test_s6_blitz_a_grad_is_not_45a_minus_54(real_claims):
    from families import labelled

    replay(real_claims, "reference/look-up-the-questions-people-ask", "`a.grad` $= 9a^2$",
           blitz_a_grad_is_45a_minus_54, labelled(st.integers(1, 5), "lengths n of a and b, 1 to 5"),
           labelled(SEEDS, "seeds of a and b"), fails_on="", because="45a - 54")


# -- Issue 37, s6 audit rows #16, #35, #40, #22 (seed 20261208) ------------------------

def any_seed_with_as_many_entries_as_y_is_taken(shapes) -> bool:
    """Audit row 16, compute-your-first-jacobian.md: "v has the shape of y" was never
    tried; read as "as many entries as y", backward refuses (3, 1) and (1, 3) for a y
    of shape (3,)."""
    from seed_properties import y_and_seeds

    _x, y, _seed, reshaped = y_and_seeds(shapes)
    y.backward(reshaped)
    return True


def test_s6_audit16_a_seed_needs_the_shape_of_y_not_its_entries(real_claims):
    from seed_properties import seed_shapes

    replay(real_claims, "tutorial/compute-your-first-jacobian",
           "where the {term}`seed` $v$ has the shape of $y$", any_seed_with_as_many_entries_as_y_is_taken,
           seed_shapes(), fails_on="", because="Mismatch in shape")


def test_s6_audit35_accumulates_is_checked_onto_a_filled_grad(real_claims):
    """Audit row 35, use-python-control-flow-in-a-dynamic-graph.md: "`backward`
    accumulates vᵀJ" was checked on fresh leaves, where writing vᵀJ over x.grad gives
    the same numbers. Both checks now start from a filled x.grad and subtract it."""
    found = [r for r in _records_quoting(real_claims, "explanation/use-python-control-flow-in-a-dynamic-graph",
                                         "`backward` accumulates $v^\\top J$") if r["check"] == "check_close"]
    assert len(found) == 2 and all("onto_prefilled" in r["compared"] for r in found), found
    prefilled = torch.tensor([100.0, -10.0, 1.0], dtype=torch.float64)
    x = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
    x.grad = prefilled.clone()
    x.cumsum(0).backward(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    v_J = torch.tensor([6.0, 5.0, 3.0], dtype=torch.float64)  # the page's cumsum answer
    with pytest.raises(ClaimFailed):  # the edit "writes vᵀJ into x.grad, replacing what was there"
        check_close(x.grad, v_J, "backward replaces x.grad with vᵀJ")
    check_close(x.grad - prefilled, v_J, "backward adds vᵀJ")


def every_move_is_a_non_leaf_copy(case) -> bool:
    """Audit row 40, get-gradients-of-intermediate-tensors.md: "whether or not it changed
    the device or dtype, you hold a non-leaf copy": x.float(), x.to(float32) and
    x.to('cpu') on a float32 CPU leaf return the leaf itself."""
    return not case.tensor.is_leaf


def test_s6_audit40_a_move_that_changes_nothing_returns_the_leaf(real_claims):
    from reader_settings import FORMAT_MOVES, MOVES, moved_leaves

    quote = "**`.to()`, `.cuda()` or `.double()` after `requires_grad=True`**"
    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors", quote, every_move_is_a_non_leaf_copy,
           moved_leaves(formats=True), fails_on="x.float()")
    [record] = [r for r in _records_quoting(real_claims, "how-to/get-gradients-of-intermediate-tensors", quote)
                if r["check"] == "check_property"]
    # Every move ran, and the reveal names each one whole (not "...then x.").
    moves = {**MOVES, **FORMAT_MOVES}
    assert record["members"] == len(moves) and set(record["drawn"]) <= set(moves), record


def test_s6_audit22_the_plain_tensor_clause_is_shown_by_plain(real_claims):
    """Audit reveal #22, penalize-the-gradient-with-respect-to-the-inputs.md: "without it
    the result is a plain tensor" was revealed by the create_graph=True check."""
    records = _records_quoting(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
                               "without it the result is a plain tensor")
    # r61c-1 added a property over the whole sentence; the clause's own check stays
    own = min(records, key=lambda record: len(record["quote"]))
    assert "plain.requires_grad" in own["compared"], own
    assert not [record for record in records if "through_gradients" in record["compared"]], records


@pytest.mark.parametrize("page", ["tutorial/compute-your-first-jacobian",
                                  "explanation/use-python-control-flow-in-a-dynamic-graph",
                                  "how-to/get-gradients-of-intermediate-tensors",
                                  "how-to/penalize-the-gradient-with-respect-to-the-inputs"])
def test_s6_audit_families_say_what_each_integer_is(real_claims, page):
    """s6 audit reveals: families shown as bare "integers from 0 to 2147483647"."""
    named = [name for r in real_claims[page] if r["check"] == "check_property" for name in r["families"]]
    assert named and not [name for name in named if name.startswith("integers from")], named


# -- s6 fresh reading of the reference pages (issue 39) ---------------------------------

def the_old_recipe_keeps_the_leaf(recipe, shape, seed) -> bool:
    """R1/R2, error-messages.md: "write it out of place, `x = x / 255`, or change a
    clone, `x = x.clone()` first", run as printed where the reader's x is a leaf: the
    name x then holds a non-leaf, and the reader's x.grad stays None."""
    import warnings

    start = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    reader = {"x": start.clone().requires_grad_()}
    exec(recipe, {}, reader)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # .grad of a non-leaf
        (reader["x"] ** 2).sum().backward()
        x = reader["x"]
        return x.grad is not None and torch.allclose(x.grad, 2 * start / 255**2)


def test_s6_r1_rebinding_x_loses_the_leaf(real_claims):
    from families import SEEDS, labelled

    replay(real_claims, "reference/error-messages", "If the change is part of the computation\n(scaling an input, `x /= 255`), write it out of place under a new name",
           the_old_recipe_keeps_the_leaf,
           labelled(st.sampled_from(["x = x / 255", "x = x.clone()\nx /= 255"]), "the two recipes as printed"),
           labelled(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), "shapes, 1 to 4 dims"),
           SEEDS, fails_on="x = x")


ELEMENT_0_CAUSES = ["NumPy", "argmax", "comparison", "detach", "frozen", "item", "no requires_grad",
                    "no_grad"]


def requires_grad_before_the_forward_pass_fixes(cause) -> bool:
    """R3, error-messages.md: "**Fix:** ask for gradients before the forward pass that
    should record them", for every cause the entry lists: the input (or the layer)
    requires grad from the start, and the cause's own step still cuts the graph."""
    import numpy  # noqa: F401  (the NumPy round trip)

    x = torch.tensor([1., 2., 3.], requires_grad=True)
    frozen = torch.nn.Linear(3, 1).requires_grad_(False)
    with torch.no_grad():
        under_no_grad = (x ** 2).sum()
    loss = {"no requires_grad": lambda: (x ** 2).sum(), "no_grad": lambda: under_no_grad,
            "detach": lambda: (x.detach() ** 2).sum(), "item": lambda: torch.tensor((x ** 2).sum().item()),
            "NumPy": lambda: torch.from_numpy((x ** 2).detach().numpy()).sum(),
            "argmax": lambda: x.argmax().float(), "comparison": lambda: (x > 1).float().sum(),
            "frozen": lambda: frozen(x).sum()}[cause]
    try:
        loss().backward()
    except RuntimeError:
        return False
    return x.grad is not None and bool(x.grad.abs().sum() > 0)


def test_s6_r3_one_fix_does_not_settle_every_cause(real_claims):
    from families import labelled

    replay(real_claims, "reference/error-messages", "That does not help the other causes",
           requires_grad_before_the_forward_pass_fixes,
           labelled(st.sampled_from(ELEMENT_0_CAUSES), "the causes listed"), fails_on="")


def fixed_2_by_3_gradient_is_right(backward, rows, columns, seed) -> bool:
    """R4, error-messages.md: the fix's `grad.expand(2, 3)`, read as "return one
    gradient per input, shaped like it" for the reader's batch: it raises for 4 rows and
    gives twice the gradient for 1 row."""
    class ColumnSums(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.sum(0)

        @staticmethod
        def backward(ctx, grad):
            return grad.expand(2, 3)

    generator = torch.Generator().manual_seed(seed)
    batch = torch.randn(rows, columns, generator=generator, requires_grad=True)
    w = torch.randn(columns, generator=generator)
    try:
        (ColumnSums.apply(batch) * w).sum().backward()
    except RuntimeError:
        return False
    return torch.allclose(batch.grad, w.expand(rows, columns))


def test_s6_r4_a_fixed_shape_gradient_breaks_other_batches(real_claims):
    from families import SEEDS, labelled

    replay(real_claims, "reference/error-messages", "**Fix:** return one gradient per input, shaped like it",
           fixed_2_by_3_gradient_is_right,
           labelled(st.sampled_from(["ctx.shape", "fixed (2, 3)"]), "the page's backward and a fixed (2, 3)"),
           labelled(st.integers(1, 5), "batches of 1 to 5 rows"), labelled(st.integers(1, 4), "1 to 4 columns"),
           SEEDS, fails_on="")


def only_jacfwd_needs_jvp(transform, batching, with_jvp) -> bool:
    """R5 and audit #26, error-messages.md: "`vmap`, `jacfwd` and `vmap(grad)` also
    need `generate_vmap_rule = True` (or a `vmap` static method), and `jacfwd` a `jvp`
    static method too": read as naming every need, torch.func.jvp and hessian need no
    jvp, and hessian no vmap rule."""
    body = {}
    if batching == "generate_vmap_rule = True":
        body["generate_vmap_rule"] = True
    elif batching == "a vmap static method":
        body["vmap"] = staticmethod(lambda info, in_dims, t: (2 * t, in_dims[0]))
    if with_jvp:
        body["jvp"] = staticmethod(lambda ctx, tangent: 2 * tangent)
    variant = type("Variant", (Double,), body)
    stated = ((transform not in ("vmap", "jacfwd", "vmap(grad)") or batching != "no vmap support")
              and (transform != "jacfwd" or with_jvp))
    try:
        TRANSFORMS[transform](variant.apply)(torch.ones(3, 2))
    except (RuntimeError, NotImplementedError):
        return not stated
    return stated


def test_s6_r5_jvp_and_hessian_need_what_jacfwd_needs(real_claims):
    from families import labelled

    replay(real_claims, "reference/error-messages", "`vmap`,\n`vmap(grad)`, `jacfwd` and `hessian`",
           only_jacfwd_needs_jvp,
           labelled(st.sampled_from(sorted(TRANSFORMS)), "the transforms the fix names"),
           labelled(st.sampled_from(["no vmap support", "generate_vmap_rule = True", "a vmap static method"]),
                    "no vmap support, the generated rule, a vmap static method"),
           labelled(st.booleans(), "with or without a jvp static method"), fails_on="")


def second_pass_raises_exactly_when_saved_for_backward(name, form) -> bool:
    """R6/R7, misconceptions.md: "raises exactly when some operation in the graph saved
    a tensor through autograd's saved-tensor mechanism: ... or `ctx.save_for_backward`
    in a custom Function". A Function that saves and never reads runs twice."""
    outcome, _ = second_pass_of(custom_function(name, form))
    return (outcome == "raises") == (name in OLD_SENTENCE_RAISES_FOR)


# R6/R7's sentence judged the three Functions of its time; the fourth, added in s25
# (B2), raises, and is counted so here: R6's replay fails on saving without reading.
# The page's check draws each in three forms (forward(ctx, x), setup_context, and
# setup_context with once_differentiable, s34 #35).
OLD_SENTENCE_RAISES_FOR = ("saves and reads", "saves, never reads", "saves nothing, reads")
CUSTOM_FUNCTIONS = (custom_behaviours, custom_forms)


def test_s6_r6_saving_without_reading_does_not_raise(real_claims):
    replay(real_claims, "reference/misconceptions", "For a custom Function, that is when its `backward` reads",
           second_pass_raises_exactly_when_saved_for_backward, *CUSTOM_FUNCTIONS,
           fails_on="saves, never reads")


def penalty_call_works_on_the_usual_x_hat(setting) -> bool:
    """R8, look-up.md: "Compute it with `torch.autograd.grad(scores, x_hat, ...)`" with
    no word on x_hat requiring grad: the usual x_hat, mixed from real samples and
    detached fakes, does not, and the call raises."""
    critic, real = setting.model, setting.inputs.detach()
    fake = (0.5 * real.flip(0)).detach()
    eps = torch.rand(real.shape[0], *[1] * (real.dim() - 1), dtype=real.dtype)
    x_hat = eps * real + (1 - eps) * fake
    scores = critic(x_hat)
    try:
        torch.autograd.grad(scores, x_hat, grad_outputs=torch.ones_like(scores), create_graph=True)
    except RuntimeError:
        return False
    return True


def test_s6_r8_x_hat_must_require_grad(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "Make `x_hat` require grad first",
           penalty_call_works_on_the_usual_x_hat, sample_batches(), fails_on="")


# -- s6 reading, how-to part 2: once_differentiable, differentiable backwards, J0, MatMul --

CUSTOM_FUNCTION_PAGE = "how-to/write-a-custom-autograd-function"


def once_differentiable_always_raises_on_a_second_derivative(seed_kind, second_pass,
                                                             other_terms) -> bool:
    """F1-F2: "differentiating it again raises 'trying to differentiate twice ...'", and
    the summary's "makes a second derivative fail loudly". With a seed of ones that
    does not require grad it raises nothing, or another error."""
    from custom_backwards import CUSTOM_BACKWARDS

    cube, _ = CUSTOM_BACKWARDS["x³, backward through NumPy, @once_differentiable"]
    at = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    loss = cube.apply(at).sum() + other_terms(at)
    seed = torch.ones_like(loss).requires_grad_(seed_kind == "ones that require grad")
    (slope,) = torch.autograd.grad(loss, at, seed, create_graph=True)
    try:
        if second_pass == "slope.sum().backward()":
            slope.sum().backward()
        elif second_pass == "slope.sum().backward(inputs=[seed])":
            slope.sum().backward(inputs=[seed] if seed.requires_grad else [at])
        else:
            torch.autograd.grad(slope.sum(), seed if second_pass.endswith("seed)") and seed.requires_grad else at)
    except RuntimeError as error:
        return str(error).startswith("trying to differentiate twice")
    return False


def test_s6_h2_f1_once_differentiable_raises_only_for_a_seed_that_requires_grad(real_claims):
    from families import labelled

    seeds = labelled(st.sampled_from(["ones of a scalar loss", "grad_outputs=torch.ones_like(loss)",
                                      "ones that require grad"]),
                     "seeds: a scalar loss's ones, ones_like, ones that require grad")
    passes = labelled(st.sampled_from(["slope.sum().backward()", "autograd.grad(slope.sum(), x)",
                                       "autograd.grad(slope.sum(), seed)",
                                       "slope.sum().backward(inputs=[seed])"]),
                      "second passes: backward() to every leaf, grad with respect to x or to the seed, "
                      "backward(inputs=[seed])")
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Differentiating it again raises",
           once_differentiable_always_raises_on_a_second_derivative, seeds, passes,
           multi_term_losses(terms=st.integers(0, 3)), fails_on="ones")


def every_backward_of_torch_operations_is_differentiable(name, values, _seed) -> bool:
    """F3-F4: "Build the backward from PyTorch operations, and it is itself
    differentiable: second derivatives work", of any such backward."""
    from custom_backwards import passes_gradgradcheck

    return passes_gradgradcheck(name, values)


def test_s6_h2_f3_a_backward_of_torch_operations_can_read_constants(real_claims):
    from custom_backwards import backward_points, custom_backwards, grad_outputs

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Build the backward from PyTorch operations on the tensors",
           every_backward_of_torch_operations_is_differentiable, custom_backwards(),
           backward_points(vanishing=True), grad_outputs(), fails_on="")


J0_FOLLOW_UPS = {  # as the page's check has them; True: linear, constant coefficients
    ".sum()": (lambda j: j.sum(), True),
    ".mean()": (lambda j: j.mean(), True),
    "(3 * J0).sum()": (lambda j: (3 * j).sum(), True),
    "a seed of constants": (lambda j: (j * torch.linspace(-2, 3, j.numel(), dtype=j.dtype)).sum(), True),
    "(J0**2).sum()": (lambda j: (j**2).sum(), False),
    "J0.tanh().sum()": (lambda j: j.tanh().sum(), False),
}


def j0_follow_ups():
    return labelled(st.sampled_from(sorted(J0_FOLLOW_UPS)),
                    "what follows the Function: " + ", ".join(J0_FOLLOW_UPS))


J0_BEFORE = {  # as the page's check has them: what x goes through before the Function
    "x": lambda at: at,
    "2 * x": lambda at: 2 * at,
    "x ** 2": lambda at: at**2,
    "x.tanh()": lambda at: at.tanh(),
    "Linear(x)": None,
}


def j0_befores():
    return labelled(st.sampled_from(sorted(J0_BEFORE)),
                    "what x goes through before it: " + ", ".join(J0_BEFORE))


class LiteralJ1(SinFromInput):  # saves its input as SinFromInput does
    """J1 with J1' = J0 - J1/t written as it stands: 0/0 at t = 0."""

    forward = staticmethod(lambda t: torch.special.bessel_j1(t))

    @staticmethod
    def backward(ctx, grad_output):
        (t,) = ctx.saved_tensors
        return grad_output * (torch.special.bessel_j0(t) - torch.special.bessel_j1(t) / t)


class TrueJ0(BesselJ0):
    """The page's J0 with a backward that calls LiteralJ1: differentiable, away from t = 0."""

    @staticmethod
    def backward(ctx, grad_output):
        (t,) = ctx.saved_tensors
        return -grad_output * LiteralJ1.apply(t)


def j0_second_derivatives(other_terms, values, follow_up, before="x"):
    """The BesselJ0 recipe's second derivative of ``follow_up(J0(before(x))) + other_terms``
    with respect to x (None when it raises) and the true one, through a J0 whose backward
    is differentiable."""
    from custom_backwards import CUSTOM_BACKWARDS

    j0_function, _ = CUSTOM_BACKWARDS["J0, backward calls bessel_j1"]

    after, _ = J0_FOLLOW_UPS[follow_up]
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    if before == "Linear(x)":
        torch.manual_seed(len(values))
        into = torch.nn.Linear(len(values), len(values)).double()
    else:
        into = J0_BEFORE[before]
    found = []
    for j0 in (j0_function.apply, TrueJ0.apply):
        (slope,) = torch.autograd.grad(after(j0(into(at))) + other_terms(at), at, create_graph=True)
        try:
            found.append(torch.autograd.grad(slope.sum(), at)[0])
        except RuntimeError:
            found.append(None)
    return found


J0_SECOND = ["slope.sum()", "penalty", "penalty + x.sum()", "penalty + x.tanh().sum()", "penalty + w ** 2"]


def j0_seconds():
    return labelled(st.sampled_from(sorted(J0_SECOND)),
                    "what the second backward differentiates: " + ", ".join(J0_SECOND))


J0_PASSES = ("torch.autograd.grad(second, x)", "second.backward()")  # as the page has them


def j0_settings():
    """The page's J0_SETTINGS: the families its second-derivative check draws from."""
    from custom_backwards import backward_points

    return (losses_with_linear_terms(terms=st.integers(0, 3)), backward_points(), j0_follow_ups(),
            j0_befores(), j0_seconds(),
            labelled(st.sampled_from(J0_PASSES), "how it is taken: " + ", ".join(J0_PASSES)))


def j0_recipe_gives_the_second_derivative(other_terms, values, follow_up, before="x",
                                          second="slope.sum()", how=J0_PASSES[0]) -> bool:
    """F5, handle-operations...md: the BesselJ0 recipe, read as J0's derivative at every
    order a loss asks for: its second derivative would be the true one."""
    got, true = j0_second_derivatives(other_terms, values, follow_up, before)
    return got is not None and torch.allclose(got, true)


def test_s6_h2_f5_the_j0_recipe_gives_first_derivatives_only(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "This Function gives first derivatives only", j0_recipe_gives_the_second_derivative,
           *j0_settings(), fails_on="")


class TransposedMatMul(torch.autograd.Function):
    """F6: the old recipe, ``.T`` on x and on grad_output, right for 2-D x only."""

    @staticmethod
    def forward(x, w):
        return x @ w

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        g = grad_output.float()
        return (g @ w.float().T).to(x.dtype), (x.float().T @ g).to(w.dtype)


def transposed_matmul_works_for_any_activation(dtype, x_is, shape) -> bool:
    """F6: "In a network, `x` is the bfloat16 output of the layer before": the old
    recipe raises in backward for a (B, T, C) activation."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator, requires_grad=True)
    w = torch.randn(3, 2, generator=generator, requires_grad=True)
    with torch.autocast("cpu", dtype=dtype):
        given = x if x_is == "a float32 leaf" else torch.nn.Linear(3, 3)(x)
        product = TransposedMatMul.apply(given, w)
    try:
        product.float().sum().backward()
    except RuntimeError:
        return False
    return w.grad.shape == w.shape


def matmul_settings() -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """The families the page's MatMul recipe checks draw x from: what made it, its shape."""
    from families import labelled

    inputs = st.sampled_from(["a float32 leaf", "the output of an autocast Linear",
                              "a float64 leaf, autocast off"])
    inputs.family_name = ("x a float32 leaf or the output of an autocast Linear, "
                          "or a float64 leaf outside autocast")
    shapes = labelled(st.sampled_from([(4, 3), (2, 4, 3), (2, 2, 2, 3)]),
                      "x of shape (N, C), (B, T, C), (B, H, W, C)")
    return inputs, shapes


def test_s6_h2_f6_the_transposed_matmul_recipe_fails_on_sequences(real_claims):
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Transpose with `.mT` and flatten",
           transposed_matmul_works_for_any_activation, autocast_dtypes(), *matmul_settings(),
           fails_on="(2, ")


# -- s6 fresh reading of how-to pages, part 1 (issue 39): F1, F2, F3, F4 -------------------

def the_diagonal_of_another_count_has_another_shape(case) -> bool | None:
    """F1, differentiate-elementwise-functions-at-many-points.md (Summary): "When the
    counts differ, ... `torch.diagonal` returns a tensor of another shape than `x`".
    For y = cat([x, x[:2]]) of a 1-D x the diagonal has x's own shape."""
    f, shape = DIAGONAL_SHAPE_CASES[case]
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    if f(x).numel() == x.numel():
        return None
    J = torch.func.jacrev(f)(x)
    if J.dim() < 2:  # a scalar beside a 1-D tensor: diagonal raises, not the shape replayed
        return None
    return torch.diagonal(J).shape != x.shape


def test_f1_the_diagonal_can_have_x_own_shape_when_the_counts_differ(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "When the counts differ, $\\partial y_i / \\partial x_i$ means nothing, yet",
           the_diagonal_of_another_count_has_another_shape, diagonal_shape_cases(),
           fails_on="'x.flatten()[:3], (2, 2, 2) x'")


LOG_SOFTMAX_LOSSES = {
    "sum": lambda log_p: log_p.sum(),
    "mean": lambda log_p: log_p.mean(),
    "F.nll_loss, the large logit as target":
        lambda log_p: torch.nn.functional.nll_loss(log_p, torch.ones(len(log_p), dtype=torch.long)),
    "F.nll_loss, the small logit as target":
        lambda log_p: torch.nn.functional.nll_loss(log_p, torch.zeros(len(log_p), dtype=torch.long))}


def log_of_softmax_gives_a_loss_of_minus_inf(loss_name, dtype, gaps) -> bool:
    """F3, debug-nan-and-wrong-gradients.md (log(softmax) row): "the loss is `-inf` and
    the gradient `nan`". With F.nll_loss and the large logit as target the loss is 0,
    and the gradient is nan all the same."""
    z = torch.tensor([[0.0, gap] for gap in gaps], dtype=dtype, requires_grad=True)
    loss = LOG_SOFTMAX_LOSSES[loss_name](torch.log(torch.softmax(z, -1)))
    loss.backward()
    return loss.item() == float("-inf") and bool(z.grad.isnan().all())


def test_f3_the_gradient_is_nan_with_a_finite_loss(real_claims):
    from families import labelled

    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "`log` gives `-inf` there, and the gradient",
           log_of_softmax_gives_a_loss_of_minus_inf,
           labelled(st.sampled_from(sorted(LOG_SOFTMAX_LOSSES)), "sum, mean, F.nll_loss of either target"),
           labelled(st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64]),
                    "float16, bfloat16, float32 and float64 logits"),
           labelled(st.lists(st.floats(800.0, 3000.0), min_size=1, max_size=3),
                    "1 to 3 rows (0, gap), gaps from 800 to 3000"),
           fails_on="'F.nll_loss, the large logit as target'")


def materialize_grads_gives_the_derivative_in_eager_mode(setting) -> bool:
    """F4, differentiate-a-network-output-with-respect-to-its-input.md (Summary): for
    "appears to not have been used in the graph", "in eager mode, pass
    `materialize_grads=True`". After slicing the input it returns zeros where u_x is not 0."""
    xt = setting.inputs.detach().clone().requires_grad_()
    u = setting.model(xt)
    (flagged,) = torch.autograd.grad(u, xt[:, :1], torch.ones_like(u), materialize_grads=True)
    true = torch.func.vmap(torch.func.jacrev(lambda row: setting.model(row[None])[0, 0]))(xt.detach())
    return torch.allclose(flagged, true[:, :1], atol=1e-6)


def test_f4_materialize_grads_gives_wrong_zeros_after_a_slice(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "Pass `materialize_grads=True` only when you know",
           materialize_grads_gives_the_derivative_in_eager_mode, multi_feature_inputs(),
           fails_on="tanh MLP")


def backward_adds_vjp_to_the_grad_of_any_x(non_leaf, seed) -> None:
    """s6 F7, backpropagate-from-a-non-scalar-output.md: "a tensor `x` with
    `requires_grad=True` ... `y.backward(v)` adds vᵀJ to `x.grad`", read for an `x`
    computed from a leaf (a cast, a copy, a view): its `.grad` stays None."""
    import warnings

    generator = torch.Generator().manual_seed(seed)
    x = non_leaf.tensor
    mixing = torch.randn(4, x.numel(), dtype=x.dtype, generator=generator)
    v = torch.randn(4, dtype=x.dtype, generator=generator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        torch.sin(mixing @ x.reshape(-1)).backward(v)
        filled = x.grad
    assert filled is not None, f"{non_leaf}: x.grad is None"


def test_s6_f7_backward_fills_only_a_leaf(real_claims):
    from reader_settings import non_leaf_inputs

    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "By default only a leaf gets a `.grad`.",
           backward_adds_vjp_to_the_grad_of_any_x, non_leaf_inputs(), labelled(SEEDS, "seeds of A and v"),
           fails_on="then", because="x.grad is None")


def test_s6_f8_chunks_of_3_and_2_are_dataparallel_s_scatter(real_claims):
    """s6 F8, backpropagate-from-a-non-scalar-output.md: "chunks of 3 and 2 (as
    `torch.chunk` splits it)" was checked by `torch.arange(5).chunk(2)`, which holds
    whatever DataParallel does. Since r57b-4 the 3 and 2 are `torch.chunk`'s, the
    chunk sizes DataParallel's scatter passes are checked over its runs, and its CUDA
    cut is cited, quoted by no check."""
    page = "how-to/backpropagate-from-a-non-scalar-output"
    [sizes] = _records_quoting(real_claims, page, "(its scatter passes no chunk sizes")
    assert sizes["check"] == "check_property", sizes
    assert not _records_quoting(real_claims, page, "and so does\n`DataParallel` on two devices")


def jacrev_batches_its_products_into_one_pass(m, k, seed) -> bool:
    """s6 F5, get-a-full-jacobian-or-hessian.md: "both batch those products with `vmap`
    into one pass", read for jacrev whatever its options: chunk_size=k < m runs
    ceil(m/k) backward passes, k products each."""
    backward_calls = []

    class CountedTanh(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(t):
            return t.tanh()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, grad_output):
            backward_calls.append(grad_output.shape)
            return grad_output * (1 - ctx.saved_tensors[0] ** 2)

    generator = torch.Generator().manual_seed(seed)
    W1, W2 = torch.randn(64, 4, generator=generator), torch.randn(m, 64, generator=generator)
    torch.func.jacrev(lambda t: W2 @ CountedTanh.apply(W1 @ t), chunk_size=k)(torch.randn(4, generator=generator))
    return len(backward_calls) == 1


CHUNK_FAMILIES = (labelled(st.integers(128, 512), "n inputs of sin, exp, W tanh, 128 to 512"),
                  labelled(st.integers(1, 64), "chunk sizes k, 1 to 64"),
                  labelled(st.integers(16, 128), "m outputs, 16 to 128"),
                  labelled(st.integers(0, 2**16), "seeds of x and W"))


def test_s6_f5_chunked_jacrev_runs_several_passes(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "When that is too much, `jacrev(f, chunk_size=k)`",
           lambda n, k, m, seed: jacrev_batches_its_products_into_one_pass(m, k, seed), *CHUNK_FAMILIES,
           fails_on="")


def jacrev_peak_bytes(f, at, **options) -> int:
    """The most bytes alive at once among the tensors jacrev allocates (a view counts
    as its base), as the page's hidden watcher measures it."""
    from torch.multiprocessing import reductions
    from torch.utils._python_dispatch import TorchDispatchMode

    class Watch(TorchDispatchMode):
        storages: dict = {}
        peak = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not any(returned.alias_info for returned in func._schema.returns):
                for t in torch.utils._pytree.tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        s = t.untyped_storage()
                        self.storages[s.data_ptr()] = (reductions.StorageWeakRef(s), s.nbytes())
            self.peak = max(self.peak, sum(b for ref, b in self.storages.values() if not ref.expired()))
            return out

    watch = Watch()
    watch.storages = {}
    with watch:
        torch.func.jacrev(f, **options)(at)
    return watch.peak


def chunked_jacrev_takes_less(n, k, m, seed) -> bool:
    """s19 B1, get-a-full-jacobian-or-hessian.md:274: "`jacrev(f, chunk_size=k)` runs
    them k at a time and takes less", read for the page's family's sin on R^n."""
    at = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return jacrev_peak_bytes(torch.sin, at, chunk_size=k) < jacrev_peak_bytes(torch.sin, at)


def test_s19_b1_chunked_jacrev_takes_no_less_for_sin(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "When that is too much, `jacrev(f, chunk_size=k)`",
           chunked_jacrev_takes_less, *CHUNK_FAMILIES, fails_on="")


REPLACED_OR_UNTRACKED = labelled(
    st.sampled_from(("replace_all_batch_norm_modules_", "track_running_stats=False")),
    "replace_all_batch_norm_modules_, or BatchNorm built with track_running_stats=False")


def only_where_replaced(old_sentence):
    """An old sentence about replace_all_batch_norm_modules_, replayed on the draws of
    the check that also builds BatchNorm with track_running_stats=False: it said
    nothing of those, so they pass."""
    def said(setting, how, mode="train"):  # the old sentences were of training mode
        return True if how != "replace_all_batch_norm_modules_" else old_sentence(setting)
    return said


TRAIN_OR_EVAL = labelled(st.sampled_from(("train", "eval")), "the model in training or in eval() mode")


def replaced_batch_norm_gives_per_sample_training_gradients(setting) -> None:
    """s6 F6, get-a-full-jacobian-or-hessian.md:1048-1049 and 472-475: per-sample
    gradients of a BatchNorm model's training forward, from
    `replace_all_batch_norm_modules_` (the page's other BatchNorm fix): vmap hands
    BatchNorm one sample, and training mode refuses it."""
    import copy

    model = copy.deepcopy(setting.model)
    torch.func.replace_all_batch_norm_modules_(model)
    per_sample = per_sample_gradients(model, setting.inputs)
    check_mean_is_the_training_gradient(setting, model, per_sample)


def test_s6_f6_replacing_batch_norm_gives_no_per_sample_gradients(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`replace_all_batch_norm_modules_`, or BatchNorm built with",
           only_where_replaced(replaced_batch_norm_gives_per_sample_training_gradients), rs_one_value(), REPLACED_OR_UNTRACKED, TRAIN_OR_EVAL,
           fails_on="BatchNorm1d", because="Expected more than 1 value per channel")


@pytest.mark.parametrize("page", ["how-to/backpropagate-from-a-non-scalar-output",
                                  "how-to/get-a-full-jacobian-or-hessian"])
def test_s6_audit_10_30_families_say_what_each_integer_is(real_claims, page):
    """s6 audit reveals #10 and #30: "integers from 0 to 2147483647" for the seeds of
    the random 2-vectors a and b, and "integers from 1 to 4 × integers from 1 to 4 ×
    integers from 1 to 4 × integers from 0 to 65536" for B, m, n and a seed."""
    records = [r for r in real_claims.get(page, []) if r["check"] == "check_property"]
    assert records, f"docs/{page}.md: no property check"
    for record in records:
        assert not any(name.startswith(("integers from", "tuple(x) for x among lists", "lists of"))
                       for name in record["families"]), (record["check_line"], record["families"])


def accumulating_under_ddp_all_reduces_once(K, seed) -> bool:
    """s6 F9, accumulate-zero-and-reuse-gradients.md: the micro-batch recipe ("call
    `backward` on each micro-batch's loss divided by K, and step once") said nothing
    of DistributedDataParallel, read as costing one all-reduce there too. In a
    one-process gloo group a comm hook counts K, one per backward."""
    import torch.distributed as dist
    from families import seeded

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with seeded(seed):
            model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
            rows, wanted = torch.randn(4 * K, 3), torch.randn(4 * K, 1)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        reduced = []

        def counting_hook(state, bucket):
            reduced.append(bucket.index())
            done = torch.futures.Future()
            done.set_result(bucket.buffer())
            return done

        ddp.register_comm_hook(None, counting_hook)
        for chunk_x, chunk_t in zip(rows.chunk(K), wanted.chunk(K)):
            (((ddp(chunk_x) - chunk_t) ** 2).mean() / K).backward()
    finally:
        dist.destroy_process_group()
    return len(reduced) == 1


def test_s6_f9_micro_batches_under_ddp_all_reduce_each_backward(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients", "Under `DistributedDataParallel`, each",
           accumulating_under_ddp_all_reduces_once, labelled(st.integers(2, 5), "K micro-batches, 2 to 5"),
           labelled(st.integers(0, 2**16), "seeds of the model and the batch"), fails_on="")


def train_batchnorm_raises_under_vmap(setting) -> bool:
    """s7 R1/R2, glossary.md (per-sample gradient): "a model with BatchNorm in training
    mode raises under `vmap`, as updating its running statistics in place is
    refused", read whatever its statistics. With one copy of them per image
    (in_dims=0), or track_running_stats=False, a BatchNorm2d model runs."""
    from batchnorm_under_vmap import per_sample_gradients

    try:
        per_sample_gradients(setting)
    except (RuntimeError, ValueError):
        return True
    return False


def image_batchnorm_with_copies_or_untracked_runs(setting) -> bool:
    """r32i-2, glossary.md (2c2b508:2395-2398): "An image model (`BatchNorm2d`) passed
    one copy of them per sample (`in_dims=0`), or built with `track_running_stats=False`,
    runs", read of images of any size: on 1×1 images a BatchNorm2d sees one value per
    channel, and a batch of one raises as on rows."""
    from batchnorm_under_vmap import OWN

    return setting.layer != "BatchNorm2d" or setting.stats == OWN or not train_batchnorm_raises_under_vmap(setting)


@pytest.mark.parametrize("old_sentence, member", [
    (train_batchnorm_raises_under_vmap, "BatchNorm2d"),
    (image_batchnorm_with_copies_or_untracked_runs, "1×1 images")])
def test_s7_r1_train_batchnorm_runs_under_vmap_with_copies_or_untracked(real_claims, old_sentence, member):
    from batchnorm_under_vmap import batchnorm_statistics_settings

    replay(real_claims, "reference/glossary", "Given a batch of one (`row[None]`), a model with BatchNorm",
           old_sentence, batchnorm_statistics_settings(), fails_on=member)


def vmap_jacrev_gives_each_samples_training_jacobian(setting) -> bool:
    """s7 R3, misconceptions.md (several outputs per sample): "For the training-mode
    Jacobian, `torch.func.vmap(torch.func.jacrev(model), randomness="different")`
    gives each sample's Jacobian", read of any train-mode model: with BatchNorm it
    raises (the samples are mixed, no per-sample Jacobian exists)."""
    torch.func.vmap(torch.func.jacrev(setting.model), randomness="different")(setting.inputs.detach())
    return True


def test_s7_r3_train_batchnorm_has_no_per_sample_jacobian(real_claims):
    from batchnorm_under_vmap import train_batchnorm_models

    replay(real_claims, "reference/misconceptions", "(in training mode BatchNorm",
           vmap_jacrev_gives_each_samples_training_jacobian, train_batchnorm_models(),
           fails_on="BatchNorm", because="expected")


STATINGS = ("in order", "in order, with more around", "as shown", "a sign flipped", "reversed", "as numbers")
TYPED_VALUES = labelled(st.lists(st.integers(-99, 99) | st.booleans(), min_size=1, max_size=3),
                        "typed lists of 1 to 3 integers from -99 to 99, True or False")
SENTENCES = labelled(st.sampled_from(STATINGS), "sentences stating them in order, with more around, "
                     "not at all, with a sign or a True/False flipped, reversed, or True as 1")


def a_typed_value_is_the_sentences_when_it_states_its_numbers(values, how) -> bool:
    """s7 audit #36 and reveal #12, how-this-site-is-built.md: "called the value the
    sentence states only when the sentence states its numbers", read as the oracle
    applied it: a typed True or False, with no number to state, was always the
    sentence's, even after "it raises" or "0/0 = nan"."""
    import oracle

    if how not in ("in order", "as shown"):
        return True  # the old sentence and the new agree on the slips
    sentence = "the values are " + (" and ".join(map(str, values)) if how == "in order" else "as shown")
    old = how == "in order" or all(isinstance(v, bool) for v in values)
    return oracle._side(f"torch.tensor({list(values)})", 0.0, quote=sentence).startswith(
        "the value the sentence states" if old else "the value typed in the check")


def a_typed_true_or_false_is_always_the_checks(values, how) -> bool:
    """s7 audit #36, the edit that stayed green: "a typed True or False, which states
    no number, is always called the value typed in the check"."""
    import oracle

    if not all(isinstance(v, bool) for v in values):
        return True
    sentence = "the values are " + " and ".join(map(str, values))
    return oracle._side(f"torch.tensor({list(values)})", 0.0, quote=sentence).startswith(
        "the value typed in the check")


def test_s7_audit_36_a_typed_true_or_false_is_the_sentences_only_when_it_says_so(real_claims):
    for old_sentence, member in ((a_typed_value_is_the_sentences_when_it_states_its_numbers,
                                  "[True, True, False], 'as shown'"),
                                 (a_typed_true_or_false_is_always_the_checks, "[False]")):
        replay(real_claims, "reference/how-this-site-is-built", "A value typed into a check is called",
               old_sentence, TYPED_VALUES, SENTENCES, fails_on=member)


def replay_check_yourself(edit, words: str) -> None:
    """Run how-this-site-is-built.md's Check yourself answer cell and its hidden
    check as the page has them (they pass), then with ``edit`` applied to the answer:
    the hidden check must raise ClaimFailed, saying ``words``."""
    from autograd_docs.code_cells import code_cells

    page = Path(__file__).resolve().parent.parent / "docs" / "reference" / "how-this-site-is-built.md"
    cells = [cell.source for cell in code_cells(page.read_text(encoding="utf8"), page)]
    at = next(i for i, source in enumerate(cells) if "sin'(0) matches finite differences" in source)
    answer, hidden = cells[at], cells[at + 1]
    edited = edit(answer)
    assert edited != answer, "the answer cell changed: revisit this replay"
    for source, holds in ((answer, True), (edited, False)):
        namespace = {"torch": torch, "check_text": check_text, "In": ["", source, hidden]}
        exec(source, namespace)
        try:
            exec(hidden, namespace)
        except ClaimFailed as failure:
            assert not holds and words in str(failure), failure
        else:
            assert holds, f"the edited answer passes the hidden check:\n{edited}"


def test_s7_audit_24_one_oracle_twice_fails_exercise_1():
    """s7 audit #24, how-this-site-is-built.md (Check yourself 1): the hidden check
    compared t.grad with a typed ones(1) only, so an answer with one oracle twice (a
    second cos 0 for the finite differences) stayed green."""
    replay_check_yourself(lambda answer: answer.replace(
        "finite_difference_jacobian(\n        lambda s: torch.sin(s).sum(), t\n    )", "torch.cos(torch.zeros(1))"),
        "['the closed form cos', 'the closed form cos']")


def test_s7_exercise_2_numbers_that_disagree_fail_it():
    """how-this-site-is-built.md (Check yourself 2), "refuses a claim whose shape is
    wrong even when the numbers agree": the hidden check read only the refusal, so
    ones(2) against zeros(2, 1), refused for its shape too, stayed green."""
    replay_check_yourself(lambda answer: answer.replace("torch.ones(2, 1),", "torch.zeros(2, 1),"),
                          "(True, False, '(shape (2,) != expected (2, 1))')")


# -- s7 audit (issue 37): rows 18, 20, 26 and reveals 22, 29 ----------------------------

def test_s7_audit_18_gradcheck_s_numbers_are_read_from_gradcheck(real_claims):
    """s7 audit #18, where-derivatives-do-not-exist.md: "gradcheck at exactly 0
    compares 0 with 0.5" was checked on the page's own central slope, so "compares 0
    with 1, its forward-difference slope" stayed green. The check now reads the two
    numbers from gradcheck's error message, which says 0.5, not 1."""
    [record] = [r for r in _records_quoting(real_claims, "explanation/where-derivatives-do-not-exist",
                                            "at exactly 0 compares 0 with 0.5 for relu and fails")
                if r["check"] == "check_close"]
    assert "gradcheck_compared" in record["compared"], record["compared"]
    with pytest.raises(RuntimeError) as raised:
        torch.autograd.gradcheck(torch.relu, (torch.zeros(1, dtype=torch.float64, requires_grad=True),))
    said = str(raised.value)
    assert "numerical:tensor([[0.5000]]" in said and "analytical:tensor([[0.]]" in said, said
    assert "numerical:tensor([[1.0000]]" not in said


# the page's optimizers with weight decay or momentum (stop-gradients.md)
MOVING_OPTIMIZERS = {"Adam": (torch.optim.Adam, {}), "AdamW": (torch.optim.AdamW, {}),
                     "RMSprop momentum": (torch.optim.RMSprop, {"momentum": 0.9}),
                     "RMSprop weight decay": (torch.optim.RMSprop, {"weight_decay": 0.1}),
                     "SGD momentum": (torch.optim.SGD, {"momentum": 0.9}),
                     "SGD weight decay": (torch.optim.SGD, {"weight_decay": 0.1})}


def only_sgd_moves_a_zeroed_frozen_weight(net, name, steps) -> bool:
    """s7 audit #26's edit: "an SGD optimizer with weight decay or momentum keeps
    moving the frozen weight at every step; Adam, AdamW and RMSprop leave it in place"."""
    optimizer_class, options = MOVING_OPTIMIZERS[name]
    optimizer = optimizer_class(net.parameters(), lr=0.1, **options)
    batch = torch.ones(3, net.in_features, dtype=torch.float64)
    net(batch).pow(2).sum().backward()
    optimizer.step()
    net[0].requires_grad_(False)
    before = net[0].weight.detach().clone()
    for _step in range(steps):
        optimizer.zero_grad(set_to_none=False)
        net(batch).pow(2).sum().backward()
        optimizer.step()
    return name.startswith("SGD") or torch.equal(net[0].weight.detach(), before)


def test_s7_audit_26_adam_adamw_and_rmsprop_move_a_zeroed_frozen_weight(real_claims):
    """s7 audit #26, stop-gradients.md: "an optimizer with weight decay or momentum
    keeps moving the frozen weight" was checked over SGD only."""
    moving = st.sampled_from(sorted(MOVING_OPTIMIZERS))
    moving.family_name = ("optimizers with weight decay or momentum: SGD and RMSprop with either, "
                          "Adam (beta1), AdamW (beta1 and its default decay)")
    replay(real_claims, "how-to/stop-gradients", "With `zero_grad(set_to_none=False)` the frozen",
           only_sgd_moves_a_zeroed_frozen_weight, small_networks(batchnorm=False), moving,
           labelled(st.integers(1, 3), "steps after freezing, from 1 to 3"), fails_on="'Adam")


def one_entry_per_column_for(member, *, permutations: bool, networks: bool) -> bool:
    """misconceptions.md's summary ("exactly when each column of J has at most one
    non-zero"), with permutations or one-output networks struck from its cases."""
    fn, point = member
    if isinstance(fn, torch.nn.Module):
        stated = networks and fn(point).shape[1] == 1 and not any(
            isinstance(m, torch.nn.BatchNorm1d) for m in fn.modules())
    else:
        stated = fn.kind == "elementwise" or permutations and (
            fn.kind == "permutation" or fn.name == "sort(x)")
    return one_entry_per_column(jacobian_rows(fn, point)) == stated


@pytest.mark.parametrize("struck, fails_on", [("permutations", "x["), ("networks", "Linear(")])
def test_s7_audit_20_the_summary_s_family_reaches_each_case_it_names(real_claims, struck, fails_on):
    """s7 audit #20, misconceptions.md: the summary's "(elementwise maps, permutations,
    independent samples with one scalar output each)" drew 3 members, none a
    permutation or a one-output network, so "a permutation does not qualify" passed."""
    import functools

    old_sentence = functools.partial(one_entry_per_column_for, permutations=struck != "permutations",
                                     networks=struck != "networks")
    replay(real_claims, "reference/misconceptions", "A ones seed gives every non-zero entry of $J$ exactly",
           old_sentence, maps_and_inputs(), fails_on=fails_on)


def test_s7_audit_reveal_22_the_mask_is_checked_in_each_dtype(real_claims):
    """s7 audit reveal 3, debug-nan-and-wrong-gradients.md: "To avoid both, mask zero
    vectors" ran in a loop over three dtypes whose reveal showed the float32 run only.
    It is now a family whose members are float32, float16 and bfloat16."""
    found = _records_quoting(real_claims, "how-to/debug-nan-and-wrong-gradients", "To avoid both, mask zero vectors")
    [record] = found
    assert record["check"] == "check_property", found
    assert sorted(record["drawn"]) == ["torch.bfloat16", "torch.float16", "torch.float32"], record["drawn"]


def test_s7_audit_reveal_29_the_slowdown_says_its_ratio_and_what_was_timed(real_claims):
    """s7 audit reveal 6: the anomaly-mode slowdown showed only "`slowdown > 3` is True"."""
    import re

    for words in ("That slows the forward pass down", "turn it off again afterwards")[:1]:
        [record] = _records_quoting(real_claims, "how-to/debug-nan-and-wrong-gradients", words)
        assert "the backward pass took" in record["claim"], record["claim"]
        ratio = re.search(r"took (\d+\.\d) times the CPU time", record["claim"])
        assert ratio and float(ratio.group(1)) > 3, record["claim"]


def every_replaced_batch_norm_refuses_a_sample(setting) -> bool:
    """s7 E1/C1, get-a-full-jacobian-or-hessian.md: "under `vmap` each sample is a
    batch of one, which BatchNorm in training mode refuses". BatchNorm2d on images
    runs, normalizing each image alone (an instance norm)."""
    import copy

    model = copy.deepcopy(setting.model)
    torch.func.replace_all_batch_norm_modules_(model)
    try:
        per_sample_gradients(model, setting.inputs)
    except ValueError:
        return True
    return False


def test_s7_e1_replaced_batch_norm2d_runs_on_images(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`replace_all_batch_norm_modules_`, or BatchNorm built with",
           only_where_replaced(every_replaced_batch_norm_refuses_a_sample), rs_one_value(), REPLACED_OR_UNTRACKED, TRAIN_OR_EVAL, fails_on="BatchNorm2d")


def replaced_batch_norm1d_refuses_a_sample(setting) -> bool:
    """s9 R1, get-a-full-jacobian-or-hessian.md: "`BatchNorm1d` in training mode
    refuses it", said of the class. On sequences (N, C, L) a batch of one holds L
    values per channel, and it runs as an instance norm, as BatchNorm2d on images."""
    return setting.kind != "BatchNorm1d" or every_replaced_batch_norm_refuses_a_sample(setting)


def test_s9_r1_replaced_batch_norm1d_runs_on_sequences(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`replace_all_batch_norm_modules_`, or BatchNorm built with",
           only_where_replaced(replaced_batch_norm1d_refuses_a_sample), rs_one_value(), REPLACED_OR_UNTRACKED, TRAIN_OR_EVAL, fails_on="sequences")


def unseeded_comparison_agrees_with_the_trick(setting, seed) -> bool:
    """s7 G2, differentiate-elementwise-functions-at-many-points.md: "compare the trick
    with ... the diagonal blocks of the batch Jacobian", said of any layer: with
    train-mode Dropout each call draws its own mask, and the right trick disagrees."""
    net = torch.nn.Sequential(*setting.model[:-1], torch.nn.Dropout(0.5), setting.model[-1]).train()
    x = setting.inputs.detach().requires_grad_(True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        out = net(x)
        (seeded,) = torch.autograd.grad(out, x, torch.ones_like(out))
        J = torch.func.jacrev(lambda t: net(t)[:, 0])(x.detach())
    return torch.allclose(seeded, torch.stack([J[b, b] for b in range(len(x))]), atol=1e-6)


def test_s7_g2_the_trap_comparison_needs_one_dropout_mask(real_claims):
    from reader_settings import batch_norm_models

    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points", "With Dropout in training mode each",
           unseeded_comparison_agrees_with_the_trick,
           labelled(st.one_of(sample_batches(), batch_norm_models()),
                    "critics on rows (N, F) or images (B, C, H, W), and models with BatchNorm (running "
                    "statistics, the default) in training mode (rows, sequences, images)"),
           labelled(SEEDS, "seeds of the Dropout masks"), fails_on="")


def test_s7_i2_a_cast_that_changes_nothing_is_the_leaf(real_claims):
    """s7 I2/C3, backpropagate-from-a-non-scalar-output.md: "For an `x` computed from a
    leaf, such as `x = w.double()` ..." read of any cast: x.float(), x.to(float32) and
    x.to('cpu') of a float32 CPU leaf return the leaf."""
    from reader_settings import moved_leaves

    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "A cast that changes nothing",
           every_move_is_a_non_leaf_copy, moved_leaves(formats=True), fails_on="x.float()")


def test_r44b_1_2_a_cast_keeping_dtype_and_device_can_copy(real_claims):
    """r44b-1/2, backpropagate-from-a-non-scalar-output.md (be9cf34:41-43): "A cast to
    the dtype and device `w` already has ... returns `w` itself", drawn only from
    moved_leaves() (no memory format, no copy=True)."""
    from reader_settings import moved_leaves

    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "A cast that changes nothing",
           a_move_copies_when_it_changes_the_dtype_or_device, moved_leaves(formats=True),
           fails_on="memory_format=channels_last")


def made_under_no_grad_does_not_require_grad(chain, how) -> None:
    """s7 I1/C1, get-gradients-of-intermediate-tensors.md: "every tensor that does
    not require grad is a leaf, whatever made it: ... or anything computed under
    `torch.no_grad()`", read with its family: whatever made it without recording an
    operation, it is a leaf that does not require grad. A view of the leaf taken under
    no_grad requires grad."""
    from second_backward import MADE_WITHOUT_GRAD

    t = MADE_WITHOUT_GRAD[how](chain, torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True))
    assert t.is_leaf and not t.requires_grad, f"{how}: requires grad"


def test_s7_i1_c1_a_view_under_no_grad_requires_grad(real_claims):
    from second_backward import NON_SCALAR_OPERATIONS, made_without_grad

    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "every tensor that does **not** require grad is a leaf, whatever made it: a constant",
           made_under_no_grad_does_not_require_grad, operation_chains(NON_SCALAR_OPERATIONS),
           made_without_grad(),
           fails_on="a view of the leaf under no_grad", because="requires grad")


def reentrant_checkpoint_takes_the_penalty(setting) -> bool:
    """s7 G1, penalize-the-gradient-with-respect-to-the-inputs.md: "Three setups
    break a gradient penalty where a plain loss works" left out activation
    checkpointing: with use_reentrant=True, autograd.grad through the critic raises."""
    from torch.utils.checkpoint import checkpoint

    x = setting.inputs.detach().requires_grad_()
    s = checkpoint(setting.model, x, use_reentrant=True)
    (g,) = torch.autograd.grad(s, x, torch.ones_like(s), create_graph=True)
    return bool(torch.isfinite(g).all())


def test_s7_g1_reentrant_checkpointing_breaks_the_penalty(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
           "**Activation checkpointing.** `torch.utils.checkpoint.checkpoint` with `use_reentrant=True`",
           reentrant_checkpoint_takes_the_penalty, sample_batches(), fails_on="",
           because="When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()")


def test_s7_c2_the_first_amp_penalty_is_checked_nan_not_just_non_finite(real_claims):
    """s7 C2, penalize-the-gradient-with-respect-to-the-inputs.md: "so the first
    penalty comes out NaN" was checked as isfinite() == False, which inf passes too.
    The check now compares "nan", "inf" or "finite"."""
    found = [r for r in real_claims["how-to/penalize-the-gradient-with-respect-to-the-inputs"]
             if "the first penalty comes out inf or NaN (NaN here)" in " ".join(r["quote"].split())]
    assert found, "no check quotes the NaN sentence: revisit this test"
    assert any("(65536.0, 'nan', True)" in r["compared"] for r in found), [r["compared"] for r in found]


@pytest.mark.parametrize("page", ["how-to/pass-options-to-torch-func-transforms",
                                  "how-to/handle-operations-with-no-useful-derivative"])
def test_s7_i2_three_minus_j_needs_its_index_base(page):
    """s7 I2: "appears in 3 - j partial sums" held only for 0-based j, which neither
    page said; read 1-based, as a = (1, 2, 3) invites, it gives (2, 1, 0) against
    the gradient (3, 2, 1). The page must state the base, and it must be the one
    that gives the gradient."""
    import re

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / f"{page}.md").read_text().split())
    stated = re.findall(r"counting \$j = (\d), (\d), (\d)\$, appears in \$3 - j\$", text)
    assert stated and len(stated) == text.count("$3 - j$"), f"docs/{page}.md: a 3 - j without its j"
    [(first, second, third)] = set(stated)
    j = torch.tensor([float(first), float(second), float(third)])
    x = torch.ones(3, requires_grad=True)
    x.cumsum(0).sum().backward()
    check_close(3 - j, x.grad, f"docs/{page}.md: 3 - j for the stated j")
    assert not torch.equal(3 - torch.tensor([1.0, 2.0, 3.0]), x.grad), "1-based j reads right"


# -- s7 expert reading of the PINN how-to (M1 + C2, G1, G3, I3) ----------------------

PINN_PAGE = "how-to/differentiate-a-network-output-with-respect-to-its-input"


def no_loss_of_an_input_derivative_trains_through_compile(setting) -> bool:
    """s7 M1: "Through `torch.compile`, second derivatives are not supported ... no
    loss built from an input derivative can be trained". A loss that takes its
    derivatives with torch.func inside the compiled function trains."""
    from compiled_pinn_loss import compiled_and_eager_gradients

    try:
        compiled_and_eager_gradients(setting.model, setting.inputs.detach())
    except RuntimeError:
        return True
    return False


PINN_TRAINING_ACTIVATIONS = ("Tanh", "Softplus", "GELU")


def test_s7_m1_a_compiled_loss_with_torch_func_derivatives_trains(real_claims):
    from compiled_pinn_loss import pinn_networks

    replay(real_claims, PINN_PAGE, "or compile the whole loss with the derivatives taken by `torch.func`",
           no_loss_of_an_input_derivative_trains_through_compile,
           pinn_networks(features=st.integers(2, 3), activations=PINN_TRAINING_ACTIVATIONS), fails_on=" MLP")


def compiled_torch_func_loss_trains_on_the_points(setting, points) -> bool:
    """r56g-4, -5: "compile the whole loss with the derivatives taken by `torch.func`
    inside it: that loss trains, with the gradients of eager mode", of any network and
    any points (run in a fresh process: a failed compilation breaks later ones)."""
    from compiled_pinn_loss import compile_error_in_a_fresh_process

    return compile_error_in_a_fresh_process(setting.model, points) == ""


def test_r56g_4_a_compiled_torch_func_loss_raises_for_a_silu_network(real_claims):
    from compiled_pinn_loss import pinn_networks

    replay(real_claims, PINN_PAGE, "On torch 2.13 its compilation raises for a `SiLU`",
           lambda setting: compiled_torch_func_loss_trains_on_the_points(setting, setting.inputs.detach()),
           pinn_networks(features=st.integers(2, 3), activations=("SiLU", "Mish")), fails_on="SiLU MLP")


NON_CONTIGUOUS_POINTS = "and for non-contiguous points, such as"


def test_r56g_5_a_compiled_torch_func_loss_raises_on_a_column_slice(real_claims):
    from compiled_pinn_loss import NON_CONTIGUOUS, NON_CONTIGUOUS_WORDS, pinn_networks

    replay(real_claims, PINN_PAGE, NON_CONTIGUOUS_POINTS,
           lambda setting, layout: compiled_torch_func_loss_trains_on_the_points(
               setting, NON_CONTIGUOUS[layout](setting.inputs.detach())),
           pinn_networks(features=st.integers(2, 3), activations=PINN_TRAINING_ACTIVATIONS),
           labelled(st.sampled_from(sorted(NON_CONTIGUOUS)), NON_CONTIGUOUS_WORDS),
           fails_on=" MLP")


def only_a_column_slice_raises(setting, layout) -> bool:
    """n56e-2: "[its compilation raises] for points that are a column slice such as
    `data[:, :2]`", read as: other points train. Transposed, row-step and expanded
    points raise too."""
    from compiled_pinn_loss import NON_CONTIGUOUS

    trains = compiled_torch_func_loss_trains_on_the_points(setting, NON_CONTIGUOUS[layout](setting.inputs.detach()))
    return trains == (layout != "column slice")


def test_n56e_2_transposed_points_raise_too(real_claims):
    from compiled_pinn_loss import NON_CONTIGUOUS, NON_CONTIGUOUS_WORDS, pinn_networks

    replay(real_claims, PINN_PAGE, NON_CONTIGUOUS_POINTS, only_a_column_slice_raises,
           pinn_networks(features=st.integers(2, 3), activations=PINN_TRAINING_ACTIVATIONS),
           labelled(st.sampled_from(sorted(NON_CONTIGUOUS)), NON_CONTIGUOUS_WORDS),
           fails_on="expanded")


def separate_jacrev_call_differentiates_the_u_of_net(setting) -> bool:
    """s7 G1: beside `u = net(xt)`, "use `vmap(jacrev(net), randomness="different")`"
    read as giving that u's u_x; with Dropout in training mode it draws other masks."""
    from dropout_masks import one_mask_distance, with_dropout

    net, samples = with_dropout(setting), setting.inputs.detach()
    u_x = torch.func.vmap(torch.func.jacrev(net), randomness="different")(samples)
    return bool((one_mask_distance(net, samples, net(samples), u_x) < 1e-9).all())


def test_s7_g1_a_separate_jacrev_call_draws_other_masks(real_claims):
    replay(real_claims, PINN_PAGE, "That call draws its own masks",
           separate_jacrev_call_differentiates_the_u_of_net, multi_feature_inputs(), fails_on="tanh MLP")


def separate_calls_give_one_masks_u_x_and_u_xx(setting) -> bool:
    """s11 A2 (G): for per-sample second derivatives in training mode "use
    `vmap(jacfwd(jacrev(net), randomness="same"), randomness="different")`", read as
    fit for a residual beside u_x from `vmap(jacrev(net), randomness="different")`:
    the two calls draw different masks."""
    from dropout_masks import one_mask_distance, with_dropout

    vmap, jacfwd, jacrev = torch.func.vmap, torch.func.jacfwd, torch.func.jacrev
    net, samples = with_dropout(setting), setting.inputs.detach()
    u_x = vmap(jacrev(net), randomness="different")(samples)
    H = vmap(jacfwd(jacrev(net), randomness="same"), randomness="different")(samples)
    return bool((one_mask_distance(net, samples, None, u_x, H) < 1e-9).all())


def test_s11_a2_separate_calls_mix_the_residuals_masks(real_claims):
    replay(real_claims, PINN_PAGE, "That call, too, draws its own masks",
           separate_calls_give_one_masks_u_x_and_u_xx, multi_feature_inputs(), fails_on="tanh MLP")


def vmap_jacfwd_runs_without_a_layer_mixing_samples(setting) -> bool:
    """s7 G3: "You need: a network ... with no layer that mixes the samples of a
    batch (no `BatchNorm` in training mode)", read as enough for `vmap(jacfwd(net))`;
    BatchNorm1d in eval() mixes nothing yet refuses the 1-D sample."""
    first, activation, last = setting.model
    norm = torch.nn.BatchNorm1d(first.out_features).to(first.weight.dtype)
    net = torch.nn.Sequential(first, norm, activation, last).eval()
    torch.func.vmap(torch.func.jacfwd(net))(setting.inputs.detach())
    return True


def test_s7_g3_batch_norm_in_eval_refuses_the_one_d_sample(real_claims):
    replay(real_claims, PINN_PAGE, "A layer that checks its input's rank",
           vmap_jacfwd_runs_without_a_layer_mixing_samples, multi_feature_inputs(),
           fails_on="tanh MLP", because="expected 2D or 3D input (got 1D input)")


def vmap_hessian_keeps_one_mask_per_sample(setting) -> bool:
    """s7 I3: the Summary's "`vmap(hessian(net))`; with `Dropout` in training mode
    ... keep the masks with `randomness="different"` on `vmap`", read as working for
    `hessian`: it takes no randomness= and raises."""
    from dropout_masks import with_dropout

    H = torch.func.vmap(torch.func.hessian(with_dropout(setting)),
                        randomness="different")(setting.inputs.detach())
    return bool(torch.allclose(H, H.transpose(-1, -2)))


def test_s7_i3_vmap_of_hessian_raises_under_dropout(real_claims):
    replay(real_claims, PINN_PAGE, "`hessian` takes no `randomness=`", vmap_hessian_keeps_one_mask_per_sample,
           multi_feature_inputs(), fails_on="tanh MLP", because="randomness error mode")


def named_tensor_not_computed_from_keeps_its_grad_with_no_error(graph, requires_grad) -> bool:
    """s9 R1, differentiation-apis.md: "A tensor named in `inputs=` that `y` was not
    computed from through differentiable operations keeps its `.grad` (`None` if it had
    none), with no error", with no word on requires_grad. y is not computed
    differentiably from a tensor that does not require grad either, and naming one
    raises ("can't retain_grad on Tensor that has requires_grad=False")."""
    from seed_properties import leaves_naming_one, y_from_leaves

    map_f, _, uses, weights, seed, _, prefilled = graph
    for k, leaves in leaves_naming_one(graph, requires_grad):
        y_from_leaves(map_f, leaves, uses, weights).backward(seed, inputs=[leaves[k]])
        if (leaves[k].grad is None) == prefilled:
            return False
    return True


def test_s9_r1_a_named_tensor_that_does_not_require_grad_raises(real_claims):
    replay(real_claims, "reference/differentiation-apis",
           "A tensor named in `inputs=` that requires grad but that",
           named_tensor_not_computed_from_keeps_its_grad_with_no_error, leaf_graphs_with_cut_paths(),
           NAMED_REQUIRES_GRAD,
           fails_on="False", because="can't retain_grad on Tensor that has requires_grad=False")


# -- s9 howtoB: write-a-custom-autograd-function.md R2, R3/R4 and R5 --------------------

def exported_function_keeps_its_backward(name, before) -> bool:
    """s9 R2, write-a-custom-autograd-function.md: "already works under `torch.compile`
    and `torch.export`", read as the Function whole, its backward included. The
    exported program holds forward's operations only: exported Softplus has
    autograd's derivative of relu + log1p(exp(-|x|)), 0 at 0, not its backward's 0.5.
    (The page's check now also draws a Linear before the Function: ``before`` is not
    used here, the Function alone shows it.)"""

    class Sine(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.saved_tensors[0].cos()

    class Softplus(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return torch.relu(x) + torch.log1p(torch.exp(-x.abs()))

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * torch.sigmoid(ctx.saved_tensors[0])

    function = Sine if name == "MyFunction" else Softplus

    class Applying(torch.nn.Module):
        def forward(self, t):
            return function.apply(t)

    at = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64)
    through = at.clone().requires_grad_(True)
    torch.export.export(Applying(), (at,)).module()(through).sum().backward()
    leaf = at.clone().requires_grad_(True)
    function.apply(leaf).sum().backward()
    return torch.allclose(through.grad, leaf.grad)


def test_s9_r2_export_drops_the_custom_backward(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function", "`torch.export`, with its default `strict=False`",
           exported_function_keeps_its_backward,
           labelled(st.sampled_from(["MyFunction", "Softplus", "SoftplusWithVmapRule"]), "this page's Functions so far"),
           labelled(st.booleans(), "alone, or after a Linear(3, 3) whose weights require grad"), fails_on="Softplus")


def test_r64d_1_strict_export_drops_a_function_after_trained_weights():
    """r64d-1 (E), write-a-custom-autograd-function.md (dbe71ba:1203-1206): "`torch.export`,
    strict or not, keeps only the operations of `forward`, and the exported program
    differentiates them". Strict export runs forward with grad off: after a Linear whose
    weights require grad, the Function's output needs no grad and backward raises."""
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            return 2 * grad_output * ctx.saved_tensors[0]

    class Applying(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(3, 3)

        def forward(self, t):
            return Square.apply(self.layer(t))

    exported = torch.export.export(Applying(), (torch.randn(2, 3),), strict=True).module()
    with pytest.raises(RuntimeError, match="does not require grad"):
        exported(torch.randn(2, 3)).sum().backward()


def float32_backward_without_autocast_off(run, dtype) -> None:
    """s9 R3/R4, write-a-custom-autograd-function.md: "compute the backward in one dtype
    (`.float()` on `grad_output` and on each saved input)", read as a float32 backward.
    Under torch.func.grad or jacrev called inside autocast (or .backward() inside the
    with block) the backward runs in the autocast region, which casts its matmuls back
    to bfloat16 or float16: float32 gradients with low-precision values."""

    class MatMul(torch.autograd.Function):
        @staticmethod
        def forward(x, w):
            return x @ w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad_output):
            x, w = ctx.saved_tensors
            g = grad_output.float()
            gx, gw = g @ w.float().mT, x.float().flatten(0, -2).mT @ g.flatten(0, -2)
            return gx.to(x.dtype), gw.to(w.dtype)

    generator = torch.Generator().manual_seed(0)
    x, w = torch.randn(64, 3, generator=generator), torch.randn(3, 2, generator=generator)
    loss = lambda x, w: MatMul.apply(x, w).float().sum()  # noqa: E731
    with torch.autocast("cpu", dtype=dtype):
        if run == ".backward()":
            xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
            loss(xg, wg).backward()
            got = (xg.grad, wg.grad)
        else:
            got = getattr(torch.func, run)(loss, argnums=(0, 1))(x, w)
    check_close(got[0], torch.ones(64, 2) @ w.T, f"{run} in {dtype} autocast: x's gradient", atol=1e-5)
    check_close(got[1], x.T @ torch.ones(64, 2), f"{run} in {dtype} autocast: w's gradient", atol=1e-5)


@pytest.mark.parametrize("quote, runs", [
    ("with autocast off: a backward run inside `autocast`",
     labelled(st.sampled_from(["grad", "jacrev", ".backward()"]),
              "torch.func.grad, jacrev, or .backward() inside autocast")),
    ("To keep autocast and `grad` and `jacrev` together",
     labelled(st.sampled_from(["grad", "jacrev"]), "torch.func.grad or jacrev inside autocast"))])
def test_s9_r3_r4_a_float32_backward_inside_autocast_needs_autocast_off(real_claims, quote, runs):
    replay(real_claims, "how-to/write-a-custom-autograd-function", quote,
           float32_backward_without_autocast_off, runs, autocast_dtypes(), fails_on="grad",
           because="gradient")


def every_function_works_under_grad_and_jacrev(name_and_run) -> bool:
    """s9 R5, write-a-custom-autograd-function.md: "Under `torch.func`, `grad` and
    `jacrev` work as is", of every Function: the page's NumpyCube (NumPy in backward)
    works with .backward() but grad raises, its backward getting tensors without storage."""
    import numpy as np

    class NumpyCube(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.from_numpy(3 * np.asarray(x.detach().numpy()) ** 2)

    class Sine(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.cos()

    name, run = name_and_run
    function = NumpyCube if name == "NumpyCube" else Sine
    at = torch.tensor([-1.0, 0.0, 2.0])
    try:
        if run == "grad":
            torch.func.grad(lambda t: function.apply(t).sum())(at)
        else:
            torch.func.jacrev(function.apply)(at)
    except RuntimeError:
        return False
    return True


def test_s9_r5_grad_raises_on_a_numpy_backward(real_claims):
    pairs = labelled(st.sampled_from(  # NumpyCube under jacrev too since r60d-2
        [(name, run) for name in ("MyFunction", "Softplus", "NumpyCube") for run in ("grad", "jacrev")]),
        "MyFunction, Softplus and NumpyCube under grad or jacrev")
    replay(real_claims, "how-to/write-a-custom-autograd-function", "Under `torch.func`, `grad` and `jacrev` work as is",
           every_function_works_under_grad_and_jacrev, pairs, fails_on="NumpyCube")


# -- refB R9: materialize_grads after a second grad through torch.compile --------------

def second_call_raises_only_for_a_constant_u_x(net, seed) -> None:
    """refB R9, the questions page (PINN): "The second call raises ("appears to not
    have been used in the graph") when $u_x$ does not depend on the input [...];
    `materialize_grads=True` returns the zeros instead", naming no other cause:
    where it raises, the zeros are the second derivative."""
    eager = getattr(net, "_orig_mod", net)
    if eager is not net:
        torch._dynamo.reset()
    points = torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    points = points.unsqueeze(1).requires_grad_()
    u = net(points)[:, :1]
    (u_x,) = torch.autograd.grad(u, points, torch.ones_like(u), create_graph=True)
    (u_xx,) = torch.autograd.grad(u_x, points, torch.ones_like(u_x), materialize_grads=True)
    hess = torch.func.vmap(torch.func.hessian(lambda p: eager(p)[0]))(points.detach())
    check_close(u_xx, hess.reshape(5, 1), "u_xx is each sample's second derivative")


def test_refb_r9_materialize_grads_turns_the_compile_failure_into_zeros(real_claims):
    from compiled_double_backward import one_feature_networks

    replay(real_claims, "reference/look-up-the-questions-people-ask", "The second call raises (\"appears",
           second_call_raises_only_for_a_constant_u_x, one_feature_networks(compiled=True),
           st.integers(0, 2**16), fails_on="OptimizedModule", because="second derivative")

# -- refB R3: the retain_graph loop under autocast ------------------------------------

def retained_loop_with_a_step_fails_at_step_2(steps, with_optimizer_step, seed, autocast,
                                              optimizer_name="SGD") -> bool:
    """refB R3, misconceptions.md: "`optimizer.step()` changes the weight in place, so
    step 2 [...] fails", read for the loop as readers train it, under bfloat16 autocast
    too: with an optimizer step and three steps or more, it raises. ``optimizer_name``
    as the page's check draws it ("SGD", "SGD foreach", "Adam fused")."""
    import contextlib

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cell = torch.nn.Linear(2, 2)
    name, *how = optimizer_name.split()
    optimizer = getattr(torch.optim, name)(cell.parameters(), lr=0.1, **{way: True for way in how})
    state = torch.zeros(1, 2)
    around = torch.autocast("cpu", dtype=torch.bfloat16) if autocast != "off" else contextlib.nullcontext()
    try:
        with around:
            for _step in range(steps):
                state = torch.tanh(cell(state) + 1)
                optimizer.zero_grad()
                state.sum().backward(retain_graph=True)
                if with_optimizer_step:
                    optimizer.step()
    except RuntimeError as error:
        return "modified by an inplace operation" in str(error)
    return not with_optimizer_step or steps < 3


RETAINED_LOOP = (labelled(st.integers(2, 5), "loop steps from 2 to 5"),
                 labelled(st.booleans(), "with or without optimizer.step()"),
                 labelled(st.integers(0, 2**16), "seeds of the cell"),
                 labelled(st.sampled_from(["off", "around each forward", "around the loop"]),
                          "bfloat16 autocast: off, around each forward, around the whole loop"),
                 labelled(st.sampled_from(["SGD", "SGD foreach", "Adam", "SGD fused", "Adam fused",
                                           "AdamW fused"]),
                          "optimizers: SGD, SGD foreach, Adam (for-loop); fused SGD, Adam, AdamW"))


def sgd_loop_fails_at_step_2(steps, with_optimizer_step, seed, autocast, _optimizer) -> bool:
    """refB R3's old sentence was of the page's loop, plain SGD: whatever optimizer is drawn."""
    return retained_loop_with_a_step_fails_at_step_2(steps, with_optimizer_step, seed, autocast)


def test_refb_r3_autocast_saves_a_copy_and_the_loop_runs_silently(real_claims):
    replay(real_claims, "reference/misconceptions", "`retain_graph=True`\n  keeps them alive",
           sgd_loop_fails_at_step_2, *RETAINED_LOOP, fails_on="around")


def any_optimizer_fails_once_a_step_changed_a_saved_weight(steps, with_optimizer_step, seed, autocast,
                                                           optimizer_name) -> bool:
    """r57e-1, misconceptions.md's summary (57eca8f:1865-1868): "in a loop each
    `backward` runs back through every earlier step: it fails once an optimizer step
    has changed a weight an earlier step saved", of any optimizer: without autocast
    (whose saved copy no step changes), three steps or more with a step raise."""
    return autocast != "off" or retained_loop_with_a_step_fails_at_step_2(
        steps, with_optimizer_step, seed, autocast, optimizer_name)


def test_r57e_1_a_fused_step_changes_the_saved_weight_and_the_loop_runs_on(real_claims):
    replay(real_claims, "reference/misconceptions", "`retain_graph=True`\n  keeps them alive",
           any_optimizer_fails_once_a_step_changed_a_saved_weight, *RETAINED_LOOP, fails_on="fused")


# -- s10 howtoB: a Function inside a network, no_grad views, linearize, attention -----

def no_grad_view_term_reaches_its_base(chain, how) -> bool:
    """s10 B1, get-gradients-of-intermediate-tensors: "a view taken under
    `torch.no_grad()` never does [get a `.grad`], though it is one", read (it says
    `requires_grad=True`) as its loss term still reaching the base `w`: it does not."""
    from second_backward import MADE_WITHOUT_GRAD, NO_GRAD_VIEW, summed_chain

    if how != NO_GRAD_VIEW:
        return True
    leaf = torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True)
    t = MADE_WITHOUT_GRAD[how](chain, leaf)
    (summed_chain(chain, leaf) * t).sum().backward()
    through_t, leaf.grad = leaf.grad, None
    (summed_chain(chain, leaf) * t.detach()).sum().backward()
    return not torch.equal(through_t, leaf.grad)


def test_s10_b1_a_no_grad_view_sends_nothing_to_its_base(real_claims):
    from second_backward import NON_SCALAR_OPERATIONS, made_without_grad

    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "Of the two kinds of leaf, only the second, a leaf that requires grad, can get",
           no_grad_view_term_reaches_its_base, operation_chains(NON_SCALAR_OPERATIONS), made_without_grad(),
           fails_on="a view of the leaf under no_grad")


def only_a_leaf_requiring_grad_ever_gets_a_grad(chain, how) -> bool:
    """s37 r37h-3/r37h-5, get-gradients-of-intermediate-tensors.md: "Only the second kind,
    a leaf that requires grad, ever gets a `.grad` from `backward`", read as it stands
    under "Only leaves get `.grad`": no non-leaf ever gets one. The chain's result,
    retained with `retain_grad()`, does."""
    from second_backward import summed_chain

    h = summed_chain(chain, torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True))
    h.retain_grad()
    (h * 2).backward()
    return h.grad is None or (h.is_leaf and h.requires_grad)


def test_s37_r37h_3_a_retained_non_leaf_gets_a_grad(real_claims):
    from second_backward import NON_SCALAR_OPERATIONS, made_without_grad

    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "Of the two kinds of leaf, only the second, a leaf that requires grad, can get",
           only_a_leaf_requiring_grad_ever_gets_a_grad, operation_chains(NON_SCALAR_OPERATIONS),
           made_without_grad(), fails_on="['-x']")


def jvp_fn_is_the_same_every_call(seed) -> bool:
    """s10 B2, pass-options-to-torch-func-transforms: "`jvp_fn` ... computes $J u$
    for any tangent $u$ ... Calls of `jvp_fn` never run $f$ again", read as a fixed
    linear map, also for a net with Dropout in training mode: each call draws a mask."""
    import warnings

    torch.manual_seed(seed)
    linear = torch.nn.Linear
    net = torch.nn.Sequential(linear(4, 32), torch.nn.Dropout(0.5), linear(32, 3))
    at, tangent = torch.randn(4), torch.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _value, jvp_fn = torch.func.linearize(net.train(), at)
    return torch.equal(jvp_fn(tangent), jvp_fn(tangent))


def test_s10_b2_jvp_fn_draws_a_new_mask_each_call(real_claims):
    replay(real_claims, "how-to/pass-options-to-torch-func-transforms", "Calls also replay $f$'s random operations",
           jvp_fn_is_the_same_every_call, labelled(st.integers(0, 10**6), "seeds of a Linear-Dropout-Linear net"),
           fails_on="")


def _critic_penalty(setting, middle, last=None):
    """The recipe's penalty on Linear · Tanh · middle · Linear (``last``: middle after
    the critic instead), backward() to the weights."""
    model = setting.model
    x_hat = setting.inputs.detach().requires_grad_()
    scores = last(model(x_hat)) if last else model[2](middle(model[1](model[0](x_hat))))
    (slope,) = torch.autograd.grad(scores, x_hat, torch.ones_like(scores), create_graph=True)
    ((slope.norm(dim=1) - 1) ** 2).mean().backward()


def numpy_cube_in_a_penalty_raises_nothing(setting, place) -> bool:
    """s10 B3, write-a-custom-autograd-function: "With the usual seed of ones
    (`create_graph=True` on a scalar loss, a gradient penalty), the cotangent does not
    require grad and the decorator raises nothing": inside the critic it raises."""
    from torch.autograd.function import once_differentiable

    class NumpyCube(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * torch.from_numpy(3 * x.numpy() ** 2)

    cube = NumpyCube.apply
    _critic_penalty(setting, cube, last=cube if place.startswith("last") else None)
    return True


def test_s10_b3_once_differentiable_inside_a_critic_raises(real_claims):
    places = labelled(st.sampled_from(["last: cube(critic(x))", "inside: Linear · Tanh · cube · Linear"]),
                      "the cube last in the critic, or between its layers")
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Inside a network, the cotangent comes through",
           numpy_cube_in_a_penalty_raises_nothing, multi_feature_inputs(), places, fails_on="inside",
           because="trying to differentiate twice a function that was marked with @once_differentiable")


def bessel_penalty_raises_without_other_terms(setting) -> bool:
    """s10 B6, handle-operations-with-no-useful-derivative: a second derivative through
    BesselJ0 "in a gradient penalty, say ... raises "element 0 of tensors does not
    require grad" when [the loss] has [no other terms]": inside a critic the penalty
    has none, and runs, with a wrong gradient."""

    class BesselJ0(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return torch.special.bessel_j0(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return -grad_output * torch.special.bessel_j1(x)

    try:
        _critic_penalty(setting, BesselJ0.apply)
    except RuntimeError as error:
        return str(error).startswith("element 0 of tensors does not require grad")
    return False


def test_s10_b6_bessel_inside_a_critic_runs_silently(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "depending on the rest of the graph, it runs without an error or raises one",
           bessel_penalty_raises_without_other_terms, multi_feature_inputs(), fails_on="tanh MLP")


def attention_critics():
    """The page's ATTENTION_CRITICS (None: no dropout passed, the module's default)."""
    return labelled(st.sampled_from([
        ("TransformerEncoderLayer", "train()", None), ("TransformerEncoderLayer", "eval()", 0.1),
        ("TransformerEncoderLayer", "train()", 0.0), ("TransformerEncoderLayer", "eval()", 0.0),
        ("MultiheadAttention, need_weights=False", "train()", None),
        ("MultiheadAttention, need_weights=False", "train()", 0.1),
        ("MultiheadAttention, need_weights=False", "eval()", 0.1),
        ("TransformerDecoderLayer", "train()", 0.1), ("TransformerDecoderLayer", "eval()", 0.1),
        ("TransformerDecoderLayer", "train()", 0.0),
        ("Transformer", "train()", None), ("Transformer", "eval()", 0.1), ("Transformer", "train()", 0.0),
        ("TransformerEncoder", "eval()", 0.1), ("TransformerDecoder", "train()", 0.0)]),
        "attention critics: TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, "
        "Transformer, MultiheadAttention; train, eval; dropout 0.1, 0, or none passed (the module's default)")


def attention_penalty_raises(critic_kind, seed=0) -> bool:
    """The penalty's backward through an attention critic: True if it raises the fused
    kernel's missing double backward, False if it runs."""
    import warnings

    kind, mode, p = critic_kind
    torch.manual_seed(seed)
    nn = torch.nn
    dropout = {} if p is None else {"dropout": p}  # None: the module's default
    sizes = dict(d_model=4, nhead=2, dim_feedforward=8, batch_first=True, **dropout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        layer = {
            "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(**sizes),
            "TransformerDecoderLayer": lambda: nn.TransformerDecoderLayer(**sizes),
            "TransformerEncoder": lambda: nn.TransformerEncoder(
                nn.TransformerEncoderLayer(**sizes), 2, enable_nested_tensor=False),
            "TransformerDecoder": lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(**sizes), 2),
            "Transformer": lambda: nn.Transformer(**sizes, num_encoder_layers=1, num_decoder_layers=1),
        }.get(kind, lambda: nn.Identity())().double()
    attention = torch.nn.MultiheadAttention(4, 2, batch_first=True, **dropout).double()
    module = layer if kind.startswith("Transformer") else attention
    module.train() if mode == "train()" else module.eval()
    two_inputs = "Decoder" in kind or kind == "Transformer"
    critic = (lambda t: layer(t, t)) if two_inputs else layer if kind.startswith("Transformer") else (  # noqa: E731
        lambda t: attention(t, t, t, need_weights=False)[0])  # noqa: E731
    x_hat = torch.randn(3, 5, 4, dtype=torch.float64, requires_grad=True)
    s = critic(x_hat).sum((1, 2))
    (g,) = torch.autograd.grad(s, x_hat, torch.ones_like(s), create_graph=True)
    try:
        ((g.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
    except RuntimeError as error:
        assert "_scaled_dot_product_flash_attention_for_cpu_backward" in str(error), error
        return True
    return False


def attention_critic_takes_the_penalty(critic_kind) -> bool:
    """s10 B4, penalize-the-gradient-with-respect-to-the-inputs: "Four setups break a
    gradient penalty where a plain loss works", attention not among them: its fused
    kernels have no double backward."""
    return not attention_penalty_raises(critic_kind)


def test_s10_b4_attention_breaks_the_penalty(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs", "**Attention.**",
           attention_critic_takes_the_penalty, attention_critics(),
           fails_on="")


# -- s11 howtoB: when the attention penalty and the J0 second derivative raise -----------

def attention_penalty_raises_in_train_and_eval(critic_kind) -> bool:
    """s11 B2: "`nn.TransformerEncoderLayer` (in train and eval mode) and
    `nn.MultiheadAttention` with `need_weights=False` call `scaled_dot_product_attention`,
    whose fused kernels have no double backward, on CPU too: the penalty's backward raises"
    (the layer built as readers build it, with its default dropout 0.1)."""
    kind, _, p = critic_kind
    return attention_penalty_raises(critic_kind) if kind.startswith("Transformer") or p in (0.0, None) else True


def test_s11_b2_attention_raises_only_without_dropout(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs", "On CPU it takes the fused kernel",
           attention_penalty_raises_in_train_and_eval, attention_critics(), fails_on="'train()'")


def j0_raises_only_last_with_the_ones_seed(other_terms, values, follow_up, before="x",
                                           second="slope.sum()", how=J0_PASSES[0]) -> bool:
    """s11 B1: "It raises \"element 0 of tensors does not require grad\" only when the loss
    reaches `x` through the Function alone, last, with the seed of ones"."""
    got, _ = j0_second_derivatives(other_terms, values, follow_up, before)
    return (got is None) == (follow_up == ".sum()" and not other_terms.terms)


def test_s11_b1_j0_raises_whenever_only_constants_follow(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_raises_only_last_with_the_ones_seed, *j0_settings(),
           fails_on="no other term")


# -- s10 refA R1: first.requires_grad False is no proof of a zero second derivative --

ERRORS_PAGE_BACKWARDS_HERE = ("x³, its input kept in forward(ctx, x)",  # the page adds these to CUSTOM_BACKWARDS
                              "x³, NumPy on grad.detach(), no decorator",
                              "x³, NumPy on grad.numpy(force=True), no decorator",
                              "x³, NumPy coefficient times the gradient, no decorator",
                              "x³, PyTorch operations, @once_differentiable",
                              "x sin x, reads its input and sin(x) from setup_context")
# what the page puts before and after them
ERRORS_PAGE_BEFORE = ("x", "2 * x", "Linear", "sin", "x * x", "Linear -> tanh")
ERRORS_PAGE_AFTER = ("sum", "mean", "2 * sum", "Linear -> sum", "relu -> sum", "sin -> sum", "squared loss",
                     "Linear -> squared loss")


def requires_grad_false_means_a_zero_second_derivative(name, values, after=None) -> bool:
    """s10 refA R1, error-messages.md: "**Fix:** the second derivative of such a
    function is 0. Test `first.requires_grad` before differentiating again", read as
    readers act on it: where the first derivative does not require grad, the second
    derivative is 0."""
    from custom_backwards import CUSTOM_BACKWARDS

    if name not in CUSTOM_BACKWARDS:  # the page's recorded cube: its first derivative requires grad
        return True
    function, _ = CUSTOM_BACKWARDS[name]  # replayed with a sum after it, as the old sentence had
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(function.apply(at).sum(), at, create_graph=True)
    if first.requires_grad:
        return True

    def first_derivative_of(t):
        with torch.enable_grad():
            t = t.clone().requires_grad_()
            return torch.autograd.grad(function.apply(t).sum(), t)[0]

    return torch.allclose(finite_difference_jacobian(first_derivative_of, at),
                          torch.zeros(len(values), len(values), dtype=torch.float64), atol=1e-4)


def test_s10_refa_r1_an_unrecorded_backward_hides_a_nonzero_second_derivative(real_claims):
    from custom_backwards import CUSTOM_BACKWARDS, backward_points

    names = sorted([*CUSTOM_BACKWARDS, *ERRORS_PAGE_BACKWARDS_HERE[1:]])  # and the page's r27r4 cases
    before, after = ERRORS_PAGE_BEFORE, ERRORS_PAGE_AFTER

    def on_x_then_a_sum(name, values, before, after):  # the old sentence's setting; it said nothing else
        return before != "x" or after != "sum" or requires_grad_false_means_a_zero_second_derivative(name, values)

    replay(real_claims, "reference/error-messages", "`first.requires_grad` being False does not prove it",
           on_x_then_a_sum,
           labelled(st.sampled_from(names), "custom Functions whose backward reads tensors made "
                    "in setup_context or forward, bessel_j1, a detach, NumPy (on the gradient or a "
                    "coefficient, with or without @once_differentiable), torch under "
                    "@once_differentiable, or an input and an intermediate"),
           backward_points(),
           labelled(st.sampled_from(before), "x, 2 * x, Linear, sin, x * x or Linear -> tanh before"),
           labelled(st.sampled_from(after), "sum, mean, 2 * sum, Linear -> sum, relu -> sum, sin -> sum, "
                    "a squared loss or Linear -> squared loss after"),
           fails_on="backward calls bessel_j1")


# -- s10 refA R2: backward(inputs=[h]) fills a non-leaf's .grad -----------------------

def backward_fills_grad_only_for_leaves_whatever_inputs(chain, k) -> bool:
    """s10 refA R2, error-messages.md: "**Cause:** `backward` fills `.grad` only for
    leaf tensors", with no "by default": also under backward(inputs=[...])."""
    import warnings

    tensors = [torch.tensor([1., 2.], requires_grad=True)]
    for name in chain:
        tensors.append({"2 * x": lambda t: 2 * t, "exp": torch.exp, "x + 1": lambda t: t + 1,
                        "flip": lambda t: t.flip(0), "x.double()": lambda t: t.double(),
                        "x[:1]": lambda t: t[:1], "x.reshape(-1, 1)": lambda t: t.reshape(-1, 1)}[name](tensors[-1]))
    (tensors[-1] ** 2).sum().backward(inputs=[tensors[k % len(tensors)]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return all(t.grad is None for t in tensors if not t.is_leaf)


def test_s10_refa_r2_inputs_fills_a_non_leafs_grad(real_claims):
    replay(real_claims, "reference/error-messages", "Or name it in `backward(inputs=[h])`",
           backward_fills_grad_only_for_leaves_whatever_inputs,
           labelled(st.lists(st.sampled_from(sorted(["2 * x", "exp", "x + 1", "flip", "x.double()", "x[:1]",
                                                      "x.reshape(-1, 1)"])), min_size=1, max_size=3),
                    "chains of 1 to 3 of 2 * x, exp, x + 1, flip, double, x[:1], reshape"),
           labelled(st.integers(0, 3), "which tensor of the chain is named, 0 the leaf"),
           fails_on="['exp', 'exp', 'flip'], 2")  # the member r66b-1's quote draws first


# -- s10 refB: the glossary's per-sample gradients and version counter ----------------

def only_batchnorm_breaks_per_sample_gradients(member) -> bool:
    """s10 refB B2, glossary.md (per-sample gradient): "Computed with vmap over
    torch.func.grad [...]. BatchNorm raises on the bare sample vmap passes",
    naming no other layer: without BatchNorm, vmap(grad) of the loss on the bare
    sample gives each sample's gradient. An image classifier's Flatten breaks it."""
    kind, model, batch = member
    if "BatchNorm" in kind:
        return True
    params = {name: p.detach() for name, p in model.named_parameters()}
    out = model(batch)
    targets = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(len(batch)))

    def loss_bare(p, x, y):
        return torch.nn.functional.mse_loss(torch.func.functional_call(model, p, (x,)), y)

    def loss_back(p, x, y):
        return torch.nn.functional.mse_loss(torch.func.functional_call(model, p, (x[None],)), y[None])

    looped = [torch.func.grad(loss_back)(params, x, y) for x, y in zip(batch, targets)]
    try:
        bare = torch.func.vmap(torch.func.grad(loss_bare), in_dims=(None, 0, 0))(params, batch, targets)
    except (RuntimeError, ValueError, IndexError):
        return False
    return all(torch.allclose(bare[name], torch.stack([g[name] for g in looped])) for name in bare)


def test_s10_b2_per_sample_gradients_need_the_batch_dimension_for_flatten_too(real_claims):
    from per_sample_jacobians import batch_dimension_models

    replay(real_claims, "reference/glossary", "Computed with {term}`vmap` over",
           only_batchnorm_breaks_per_sample_gradients, batch_dimension_models(), fails_on="Flatten")


# glossary.md's version-counter check: operations that save their input or output, edits, hooks
GLOSSARY_SAVED_HOOKS = {
    "no hook": contextlib.nullcontext,
    "save_on_cpu (a CPU tensor: kept as it is)": torch.autograd.graph.save_on_cpu,
    "identity hook": lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    "hook packing a copy": lambda: torch.autograd.graph.saved_tensors_hooks(torch.clone, lambda t: t),
    "save_on_cpu(pin_memory=True) (packs a copy)": lambda: torch.autograd.graph.save_on_cpu(pin_memory=True)}
GLOSSARY_SAVING = {"x ** 2 (saves x)": (lambda t: t ** 2, "input"), "sin (saves x)": (torch.sin, "input"),
                   "exp (saves its output)": (torch.exp, "output"),
                   "sigmoid (saves its output)": (torch.sigmoid, "output")}
GLOSSARY_EDITS = {"add_(1)": lambda t: t.add_(1), "mul_(2)": lambda t: t.mul_(2), "zero_()": lambda t: t.zero_(),
                  "[0] = 5": lambda t: t.__setitem__(0, 5.0), "through a view": lambda t: t.view(-1)[1:].add_(1),
                  "+= 1": lambda t: t.__iadd__(1), "nn.ReLU(inplace=True)": torch.nn.ReLU(inplace=True)}


def _edited_after_saving(op_name, edit_name, hook):
    """The glossary check's setup: a leaf, op saved under the hook, then the edit; the leaf and op's output."""
    op, saves = GLOSSARY_SAVING[op_name]
    leaf = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    start = leaf * 1
    with GLOSSARY_SAVED_HOOKS[hook]():
        out = op(start)
    GLOSSARY_EDITS[edit_name](start if saves == "input" else out)
    return leaf, out


def backward_raises_whenever_a_saved_version_moved(op_name, edit_name, hook) -> bool:
    """s10 refB B7, glossary.md (version counter): "`backward` raises if the version
    has moved since", unconditionally. Under a saved-tensor hook nothing is checked."""
    _leaf, out = _edited_after_saving(op_name, edit_name, hook)
    try:
        out.sum().backward()
    except RuntimeError as error:
        return "is at version" in str(error)
    return False


def test_s10_b7_a_saved_tensor_hook_turns_the_version_check_off(real_claims):
    replay(real_claims, "reference/glossary", "An operation records the version of each",
           backward_raises_whenever_a_saved_version_moved, st.sampled_from(sorted(GLOSSARY_SAVING)),
           st.sampled_from(sorted(GLOSSARY_EDITS)), st.sampled_from(sorted(GLOSSARY_SAVED_HOOKS)), fails_on="hook")


def save_on_cpu_keeps_a_cpu_tensor_itself(op_name, edit_name, hook) -> bool:
    """r56d-1 I + C, glossary.md (68e5c17:2493): "under a hook that keeps the tensor itself
    (`save_on_cpu` on a CPU tensor) `backward` uses the new values", read for every
    save_on_cpu: it gives what the identity hook gives. With pin_memory=True it packs a
    copy, and backward uses the values saved."""
    grads = []
    for kept in (hook, "identity hook"):
        leaf, out = _edited_after_saving(op_name, edit_name, kept)
        out.sum().backward()
        grads.append(leaf.grad)
    return torch.allclose(*grads)


def test_r56d_1_save_on_cpu_with_pinned_memory_packs_a_copy(real_claims):
    replay(real_claims, "reference/glossary", "(`save_on_cpu()` on a CPU tensor",
           save_on_cpu_keeps_a_cpu_tensor_itself, st.sampled_from(sorted(GLOSSARY_SAVING)),
           st.sampled_from(sorted(GLOSSARY_EDITS)),
           labelled(st.sampled_from(["save_on_cpu (a CPU tensor: kept as it is)",
                                     "save_on_cpu(pin_memory=True) (packs a copy)"]),
                    "save_on_cpu() and save_on_cpu(pin_memory=True)"), fails_on="pin_memory=True")


GLOSSARY_JACOBIAN_FUNCTIONS = {"t.sum() * ones(y_shape)": lambda t, y_shape: t.sum() * torch.ones(y_shape, dtype=t.dtype),
                               "t * 2 (y shaped like x)": lambda t, y_shape: t * 2}


def _jacobian_shape_unless_empty(empty_side, x_shape, y_shape, mode, f_name) -> bool:
    """functional.jacobian(f) has shape y.shape + x.shape, and raises exactly where the
    shape ``empty_side(x_shape, y_shape, mode)`` has no element."""
    import math

    from torch.autograd import functional

    options = {"vectorize": True, "strategy": "forward-mode"} if "forward" in mode else {}
    y_shape = y_shape if "sum" in f_name else x_shape
    raises = math.prod(empty_side(x_shape, y_shape, mode)) == 0
    try:
        got = functional.jacobian(lambda t: GLOSSARY_JACOBIAN_FUNCTIONS[f_name](t, y_shape),
                                  torch.ones(x_shape, dtype=torch.float64), **options)
    except (RuntimeError, IndexError):
        return raises
    return not raises and tuple(got.shape) == y_shape + x_shape


def an_empty_output_raises_in_every_mode(x_shape, y_shape, mode, f_name) -> bool:
    """r56d-2 I + C, glossary.md (68e5c17:2306-2307): functional.jacobian "returns it with
    shape `y.shape + x.shape`, except that an output with no element raises", read for
    its every mode. In forward mode an empty output gives an empty J, an empty input raises."""
    return _jacobian_shape_unless_empty(lambda x, y, mode: y, x_shape, y_shape, mode, f_name)


def an_empty_input_raises_in_forward_mode(x_shape, y_shape, mode, f_name) -> bool:
    """n56a-1 E + n56a-2 C, glossary.md (53d2a84:2340): "(in its default reverse mode; in
    forward mode, an input with no element)" raises. An elementwise f (t * 2) runs on an
    empty input in forward mode; only an f that sums it, as the old check's, raises."""
    return _jacobian_shape_unless_empty(lambda x, y, mode: x if "forward" in mode else y,
                                        x_shape, y_shape, mode, f_name)


def _glossary_jacobian_families():
    shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
    return (labelled(shapes, "shapes of x, empty ones too"), labelled(shapes, "shapes of y, empty ones too"),
            labelled(st.sampled_from(sorted(["default (reverse mode)", "vectorize=True (reverse mode)",
                                             'strategy="forward-mode"'])),
                     'jacobian\'s default, vectorize=True and strategy="forward-mode"'),
            labelled(st.sampled_from(sorted(GLOSSARY_JACOBIAN_FUNCTIONS)), "f: t.sum() * ones(y_shape), or t * 2"))


def test_r56d_2_forward_mode_gives_an_empty_output_its_jacobian(real_claims):
    replay(real_claims, "reference/glossary", "(in its default reverse mode; in forward mode",
           an_empty_output_raises_in_every_mode, *_glossary_jacobian_families(), fails_on="forward-mode")


def test_n56a_1_forward_mode_runs_an_elementwise_f_on_an_empty_input(real_claims):
    replay(real_claims, "reference/glossary", "(in its default reverse mode; in forward mode",
           an_empty_input_raises_in_forward_mode, *_glossary_jacobian_families(), fails_on="t * 2")


def linearizing_the_forward_gives_the_module_s_output(setting) -> bool:
    """n56a-3 I, differentiation-apis.md (53d2a84:3132): "for `m.compile()`, linearize
    `m.forward`", read as linearizing m: m.forward skips m's forward hooks."""
    m = copy.deepcopy(setting.model._orig_mod)
    m.register_forward_hook(lambda module, args, output: 2 * output)
    m.compile(backend="inductor" if setting.name.startswith("inductor-") else "aot_eager")
    at = setting.inputs.detach()
    try:
        return torch.allclose(torch.func.linearize(m.forward, at)[0], m(at))
    finally:
        torch._dynamo.reset()


def test_n56a_3_linearizing_m_forward_skips_its_hooks(real_claims):
    replay(real_claims, "reference/differentiation-apis", "(`m.forward` skips m's forward hooks)",
           linearizing_the_forward_gives_the_module_s_output, compiled_modules_with_inductor(),
           fails_on="compiled")


# -- s12 refA R3: a fused optimizer's step between two backward passes raises nothing --

def step_between_passes_raises_whatever_the_optimizer(member, optimizer_choice) -> bool:
    """s12 refA R3, error-messages.md: "optimizer.step() between two backward passes
    through one graph updates the weights in place, so where the graph saved a weight,
    the second backward raises this error", for any optimizer. A fused one raises
    nothing, and the network's second Linear always saves its weight."""
    net, batch = member
    kind, options = optimizer_choice
    optimizer = getattr(torch.optim, kind)(net.parameters(), lr=0.1, **options)
    out = net(batch)
    saved_a_weight = len(net) > 1  # the second Linear saves its weight for its input's grad
    out.sum().backward(retain_graph=True)
    optimizer.step()
    try:
        (out ** 2).sum().backward()
    except RuntimeError:
        return saved_a_weight
    return not saved_a_weight


def test_s12_refA_r3_a_fused_step_between_passes_raises_nothing(real_claims):
    from families import Network

    @st.composite
    def networks_with_batches(draw):
        net = draw(small_networks())
        if draw(st.booleans()):
            net = Network(net[0])
        return net, draw(batches(features=net[0].in_features))

    stepped = networks_with_batches()
    stepped.family_name = ("networks with and without BatchNorm, and Linear layers alone, "
                           "each with a batch")
    optimizers = [(kind, options) for kind in ("SGD", "Adam", "AdamW", "Adagrad")
                  for options in ({"foreach": False}, {"foreach": True}, {"fused": True})]
    fused = [choice for choice in optimizers if choice[1].get("fused")]
    replay(real_claims, "reference/error-messages", "A fused optimizer (`fused=True`) is the exception",
           step_between_passes_raises_whatever_the_optimizer, stepped,
           labelled(st.sampled_from(fused), "fused SGD, Adam, AdamW, Adagrad"), fails_on="fused")


def float32_softmax_sum_gradient_below_1e_6(n, top, seed) -> bool:
    """s18 refB R1, misconceptions.md: the float32 gradient of softmax(x).sum() had
    "entries below 1e-6", on the check's members: n random logits (randn * 3), and n
    logits all equal but one, whose class has probability top."""
    import math

    random_logits = torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 3
    peaked = torch.zeros(n)
    peaked[0] = math.log(top * (n - 1) / (1 - top))
    largest = 0.0
    for logits in (random_logits, peaked):
        logits.requires_grad_()
        torch.softmax(logits, dim=0).sum().backward()
        largest = max(largest, logits.grad.abs().max().item())
    return largest < 1e-6


def test_s18_refb_r1_float32_softmax_sum_leaves_more_than_1e_6_with_many_classes(real_claims):
    replay(real_claims, "reference/misconceptions", "in float32, entries up to about $n$ times its epsilon",
           float32_softmax_sum_gradient_below_1e_6,
           labelled(st.one_of(st.integers(2, 10), st.sampled_from([1000, 10000, 50257])),
                    "numbers of classes: 2 to 10, 1,000, 10,000 and 50,257"),
           labelled(st.sampled_from([0.3, 0.5, 0.76, 0.9, 0.99]), "probabilities of the one unequal class"),
           labelled(st.integers(0, 2**16), "seeds of the random logits"), fails_on="")


OLD_MICRO_BATCH_RECIPE = '''
w = torch.zeros(3, requires_grad=True)
K = 4
chunks = list(zip(
    inputs.chunk(K), targets.chunk(K)
))
for chunk_x, chunk_t in chunks:
    loss = (
        (chunk_x @ w - chunk_t) ** 2
    ).mean() / len(chunks)
    loss.backward()
'''


def dividing_by_the_parts_chunk_returned_gives_the_mean(rows, K, seed) -> bool:
    """s20 howtoA A1, accumulate-zero-and-reuse-gradients.md (299ff66:578-579):
    "`chunk(K)` can return fewer than K parts (6 rows into 4 gives 3 of 2), so divide
    by the number of parts it returned", with the cell that did so, on the check's
    members: wrong where chunk returns parts of unequal sizes (5 rows into 4: 2, 2, 1)."""
    generator = torch.Generator().manual_seed(seed)
    space = {"torch": torch, "inputs": torch.randn(rows, 3, generator=generator),
             "targets": torch.randn(rows, generator=generator)}
    exec(OLD_MICRO_BATCH_RECIPE.replace("K = 4", f"K = {K}"), space)
    w_whole = torch.zeros(3, requires_grad=True)
    ((space["inputs"] @ w_whole - space["targets"]) ** 2).mean().backward()
    return torch.allclose(space["w"].grad, w_whole.grad, atol=1e-5)


def test_s20_howtoa_a1_dividing_by_the_number_of_parts_is_wrong_for_unequal_parts(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients", "so the cell below weights each part's",
           dividing_by_the_parts_chunk_returned_gives_the_mean,
           labelled(st.integers(2, 12), "batches of 2 to 12 rows"), labelled(st.integers(2, 5), "K from 2 to 5"),
           labelled(st.integers(0, 2**31 - 1), "seeds"), fails_on="")


def bare_weights_are_silent_only_when_the_last_dimension_is_b(layout, rows, seed) -> bool:
    """s20 howtoA B1, backpropagate-from-a-non-scalar-output.md (299ff66:951-952): bare
    (B,) weights "line up with the last dimension, silently when it too has size B",
    read as: an error whenever that size is not B. A (B, 1) loss (a regression head
    with MSELoss(reduction='none')) broadcasts them to (B, B) without one."""
    shape = {"(B,)": (rows,), "(B, 1)": (rows, 1), "(B, T)": (rows, rows + 1),
             "(B, C, H, W), W == B": (rows, 3, 2, rows),
             "(B, C, H, W), W != B": (rows, 3, 2, rows + 1)}[layout]
    generator = torch.Generator().manual_seed(seed)
    loss = torch.rand(shape, dtype=torch.float64, generator=generator)
    weights = torch.rand(rows, dtype=torch.float64, generator=generator)
    try:
        (loss * weights).sum()
    except RuntimeError:
        return shape[-1] != rows
    return shape[-1] == rows


def test_s20_howtoa_b1_bare_weights_are_silent_on_a_last_dimension_of_1(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "bare, they line up with the last dimension, silently when it has size B or 1",
           bare_weights_are_silent_only_when_the_last_dimension_is_b,
           labelled(st.sampled_from(["(B,)", "(B, 1)", "(B, T)", "(B, C, H, W), W == B", "(B, C, H, W), W != B"]),
                    "loss layouts"),
           labelled(st.integers(2, 5), "batch sizes B"), labelled(SEEDS, "seeds"), fails_on="(B, 1)")


# -- s20 fresh reading of how-to pages, part B: B1, B3 ---------------------------------------

class FloatRecipeMatMul(TransposedMatMul):
    """The MatMul recipe before s20 B1: `.float()` on grad_output and each saved input
    (its forward and saved inputs are F6's)."""

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        with torch.autocast(grad_output.device.type, enabled=False):
            g = grad_output.float()
            gx = g @ w.float().mT
            gw = x.float().flatten(0, -2).mT @ g.flatten(0, -2)
        return gx.to(x.dtype), gw.to(w.dtype)


def float_recipe_holds_in_float64_too(dtype, x_is, shape) -> bool:
    """s20 howtoB B1, write-a-custom-autograd-function.md: "compute the backward in
    float32 (`.float()` on `grad_output` and on each saved input ...)", pasted into a
    Function that also runs in float64 (the page says to gradgradcheck it in float64):
    float32-accurate gradients, and gradgradcheck fails. Under autocast it held."""
    if x_is != "a float64 leaf, autocast off":
        return True
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=generator, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 2, generator=generator, dtype=torch.float64, requires_grad=True)
    return bool(torch.autograd.gradgradcheck(FloatRecipeMatMul.apply, (x, w), raise_exception=False))


def test_s20_howtob_b1_the_float_recipe_fails_gradgradcheck_in_float64(real_claims):
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "With `setup_context`, compute the backward in at least float32",
           float_recipe_holds_in_float64_too, autocast_dtypes(), *matmul_settings(),
           fails_on="a float64 leaf")


@st.composite
def shared_activation_networks(draw):
    """As get-gradients-of-intermediate-tensors.md's family: one activation module called twice."""
    net = draw(small_networks(batchnorm=False))
    first, act, last = net
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        middle = torch.nn.Linear(first.out_features, first.out_features).double()
    shared = type(net)(first, act, middle, act, last)
    shared.in_features = net.in_features
    return shared


def intermediate_networks():
    """As get-gradients-of-intermediate-tensors.md's NETWORKS."""
    return labelled(small_networks() | shared_activation_networks(),
                    "a two-layer MLP, or one whose activation module runs twice")


def keep_holds_the_gradient_at_the_modules_output(net, data) -> None:
    """s20 howtoB B3, get-gradients-of-intermediate-tensors.md: the module hook recipe
    (`keep` overwrites caught["grad_output"]) holds what a tensor hook on the module's
    output receives, with no word on a module called more than once per forward."""
    batch = data.draw(batches(features=net.in_features))
    activation = net[-2]
    caught, output = {}, {}
    handles = [activation.register_full_backward_hook(
                   lambda m, grad_input, grad_output: caught.__setitem__("grad_output", grad_output[0])),
               activation.register_forward_hook(lambda m, inputs, out: output.__setitem__("out", out))]
    result = net(batch)
    at_output = []
    output["out"].register_hook(at_output.append)   # the module's output as the forward ends
    result.pow(2).sum().backward()
    for handle in handles:
        handle.remove()
    check_close(caught["grad_output"], at_output[0], f"{net}: keep = the tensor hook's gradient")


def test_s20_howtob_b3_keep_holds_the_first_calls_gradient_on_a_shared_activation(real_claims):
    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "`grad_output[0]` is what a tensor hook on the module's output would receive",
           keep_holds_the_gradient_at_the_modules_output, intermediate_networks(), st.data(),
           fails_on="Tanh · Linear", because="keep = the tensor hook's gradient")


def the_hook_runs_once_per_call_backward_reaches(net, data, frozen, unused_call, stop_at_output) -> bool:
    """s61c-2, get-gradients-of-intermediate-tensors.md (49e833d:1100): "The hook runs
    once per call of the module whose output `backward` reaches". With backward stopped
    at that output (`inputs=`), backward reaches it and the hook does not run."""
    if frozen:
        for layer in list(net)[:2]:
            layer.requires_grad_(False)
    batch = data.draw(batches(features=net.in_features))
    activation, hooked, outputs, reached = net[-2], [], [], []

    def on_output(m, args, out):
        outputs.append(out)
        if out.requires_grad:
            index = len(outputs) - 1
            out.register_hook(lambda g: reached.append(index))

    handles = [activation.register_full_backward_hook(lambda m, gi, go: hooked.append(go[0])),
               activation.register_forward_hook(on_output)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loss = net(batch).pow(2).sum()
        used = [out for out in outputs if out.requires_grad]
        if unused_call:
            activation(torch.randn(2, net[-1].in_features, dtype=net[-1].weight.dtype, requires_grad=True))
        if stop_at_output and used:
            loss.backward(inputs=[used[-1]])
        else:
            loss.backward()
    for handle in handles:
        handle.remove()
    return len(hooked) == len(set(reached))


def test_s61c_2_the_hook_runs_for_each_call_backward_reaches(real_claims):
    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "The hook runs at most once per call of the module in a backward pass",
           the_hook_runs_once_per_call_backward_reaches, intermediate_networks(), st.data(),
           labelled(st.booleans(), "the layers before the activation frozen (requires_grad_(False)) or not"),
           labelled(st.booleans(), "an extra call whose output requires grad and the loss does not use, or not"),
           labelled(st.booleans(), "backward(inputs=[the last used call's output]), or a plain backward()"),
           fails_on="· ReLU · Linear(5→1), data(...), True, True, True")


# -- s21 refA R1: functional.jvp's passes for a linear f ---------------------------------

def jvp_hvp_and_vhp_run_one_pass_each_for_a_linear_f(fn, scalar_kind) -> None:
    """s21 refA R1, differentiation-apis.md:2199: "`functional.jvp` runs two reverse
    passes, `hvp` three and `vhp` two (one each for a linear $f$, [...])": the
    parenthesis follows all three, so jvp too runs one for a linear f."""
    counted = passes_counted(fn, scalar_kind)
    stated = (2, 3, 2) if scalar_kind == "(fn(x) ** 2).sum()" else (1, 1, 1)
    if counted != stated:
        raise AssertionError(f"jvp, hvp and vhp ran {counted} reverse passes")


def test_s21_refa_r1_functional_jvp_runs_one_pass_for_a_linear_f(real_claims):
    replay(real_claims, "reference/differentiation-apis",
           "`functional.jvp` runs two reverse passes,\nfor a linear $f$ too",
           jvp_hvp_and_vhp_run_one_pass_each_for_a_linear_f, vector_maps(), scalar_kinds(),
           fails_on="'linear(x).sum(), a trainable nn.Linear'",
           because="jvp, hvp and vhp ran (2, 2, 2) reverse passes")


# -- s21 refB: glossary.md and look-up-the-questions-people-ask.md R1, R3, R4 -----------

def test_s21_refb_r1_glossary_a_named_tensor_that_does_not_require_grad_raises(real_claims):
    """s21 R1: "(a named tensor that $y$ was not computed from that way keeps its
    `.grad`, with no error)", with no word on requires_grad."""
    replay(real_claims, "reference/glossary", "(a named tensor that requires grad but that $y$",
           named_tensor_not_computed_from_keeps_its_grad_with_no_error, leaf_graphs_with_cut_paths(),
           NAMED_REQUIRES_GRAD,
           fails_on="False", because="RuntimeError")


def test_s21_refb_r1_lookup_a_named_tensor_that_does_not_require_grad_raises(real_claims):
    """s21 R1: "leaves a named one the output does not depend on as it was, with no error"."""
    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "leaves a named one that requires grad but that the output",
           named_tensor_not_computed_from_keeps_its_grad_with_no_error, leaf_graphs_with_cut_paths(),
           NAMED_REQUIRES_GRAD,
           fails_on="False", because="RuntimeError")


S21_EDIT_TARGETS = ["a plain intermediate", "a leaf that requires grad", "an output of `chunk`",
                    "an output of `split`", "an output of `unbind`", "a view made under no_grad"]
S21_OPERATIONS = {"exp(x)": torch.exp, "x ** 2": lambda t: t ** 2, "10 * x": lambda t: 10 * t,
                  "sin(x)": torch.sin, "sigmoid(x)": torch.sigmoid, "tanh(x)": torch.tanh,
                  "x + 1": lambda t: t + 1, "relu(x)": torch.relu, "x / 2": lambda t: t / 2,
                  "flip(x)": lambda t: t.flip(0)}


def s21_edit_target(kind, requires_grad=True, dtype=torch.float32):
    """The tensor the page's check edits in place, made the drawn way from a leaf (that
    requires grad, or not)."""
    leaf = torch.tensor([0.5, -1.0, 2.0, 1.0, -0.5, 3.0], dtype=dtype, requires_grad=requires_grad)
    if kind == "a leaf that requires grad":
        return leaf[:3].detach().requires_grad_()
    if kind == "a view made under no_grad":
        made = leaf * 2
        with torch.no_grad():
            return made[:3]
    if kind == "a plain intermediate":
        return leaf[:3] * 1
    method = kind.split("`")[1]
    return getattr(leaf * 1, method)(*{"unbind": (), "split": (3,), "chunk": (2,)}[method])[0]


def in_place_breaks_only_when_it_overwrites_a_saved_tensor(name, overwrite, kind) -> bool:
    """s21 R3, look-up-the-questions-people-ask.md: "Only when the operation overwrites a
    tensor that autograd saved", said of any tensor edited in place: y = op(a), then
    a.add_(1) or y.add_(1), and backward; an error only if the tensor overwritten was saved."""
    a = s21_edit_target(kind)
    y = S21_OPERATIONS[name](a)
    saved = [getattr(y.grad_fn, attr) for attr in dir(y.grad_fn) if attr.startswith("_saved_")]
    target = a if overwrite == "input" else y
    was_saved = any(isinstance(t, torch.Tensor) and t.data_ptr() == target.data_ptr() for t in saved)
    try:
        target.add_(1)
        y.sum().backward()
    except RuntimeError as error:
        return was_saved and "modified by an inplace operation" in str(error)
    return not was_saved


def test_s21_refb_r3_in_place_edits_refused_outright(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "For a plain (non-view) intermediate, only when the operation overwrites",
           in_place_breaks_only_when_it_overwrites_a_saved_tensor,
           st.sampled_from(sorted(S21_OPERATIONS)), st.sampled_from(["input", "output"]),
           labelled(st.sampled_from(S21_EDIT_TARGETS), "the tensor edited: " + ", ".join(S21_EDIT_TARGETS)),
           fails_on="'input'")


# -- s37 r37c-2: look-up-the-questions-people-ask.md, an in-place edit of a view ------------

S37_VIEW_EDITS = {"add_(value)": lambda t, v: t.add_(v), "mul_(value)": lambda t, v: t.mul_(v),
                  "copy_(value)": lambda t, v: t.copy_(v), "t[...] = value": lambda t, v: t.__setitem__(..., v)}
S37_WRITTEN = {"the number 2": lambda t: 2.0,
               "a tensor that requires grad": lambda t: torch.full_like(t, 2.0).requires_grad_(),
               "a tensor that does not": lambda t: torch.full_like(t, 2.0)}


def view_edit_refused_whatever_requires_grad(kind, base_requires_grad, written, edit, dtype) -> bool:
    """s37 r37c-2, look-up-the-questions-people-ask.md (1778e9b:843-845): "An in-place edit
    of a leaf that requires grad, of an output of `chunk`, `split` or `unbind`, or of a
    view made under `no_grad` is refused outright in grad mode", read for a view of a
    tensor that does not require grad: the edit runs when neither it nor the value written
    requires grad."""
    target = s21_edit_target(kind, base_requires_grad, dtype)
    try:
        S37_VIEW_EDITS[edit](target, S37_WRITTEN[written](target))
    except RuntimeError:
        return True
    return False


def test_s37_r37c_2_a_view_of_data_is_edited_in_place(real_claims):
    views = S21_EDIT_TARGETS[1:]
    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "An in-place edit of a leaf that requires grad is refused", view_edit_refused_whatever_requires_grad,
           labelled(st.sampled_from(views), "the tensor edited: " + ", ".join(views)),
           labelled(st.booleans(), "made from a tensor that requires grad, or from one that does not"),
           labelled(st.sampled_from(sorted(S37_WRITTEN)), "the value written: " + ", ".join(sorted(S37_WRITTEN))),
           labelled(st.sampled_from(sorted(S37_VIEW_EDITS)), "the edit: " + ", ".join(sorted(S37_VIEW_EDITS))),
           st.sampled_from([torch.float32, torch.float64, torch.float16]),
           fails_on="False, 'a tensor that does not'")


def implicit_seed_is_1_whatever_the_dtype(shape, dtype) -> bool:
    """s21 R4, glossary.md: "For an output with a single element it defaults to 1",
    with no word on the dtype: backward() on a single-element y runs, as backward(ones)."""
    leaf = torch.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
    (leaf ** 2).sum().reshape(shape).backward()
    return torch.equal(leaf.grad, 2 * leaf.detach())


def test_s21_refb_r4_glossary_a_complex_output_has_no_implicit_seed(real_claims):
    replay(real_claims, "reference/glossary", "For a real output with a single element it defaults to 1",
           implicit_seed_is_1_whatever_the_dtype,
           labelled(st.sampled_from([(), (1,), (1, 1)]), "single-element output shapes (), (1,), (1, 1)"),
           labelled(st.sampled_from([torch.float32, torch.float64, torch.complex64]),
                    "dtypes of x and y: float32, float64, complex64"),
           fails_on="torch.complex64", because="only for real scalar outputs")


def implicit_seed_for_every_single_element_output(shape, dtype) -> bool:
    """s21 R4, look-up-the-questions-people-ask.md: "Only an output with a single element
    gets the implicit seed 1", read as: every single-element output gets it."""
    leaf = torch.ones(shape, dtype=dtype, requires_grad=True)
    try:
        (2 * leaf).backward()
    except RuntimeError:
        return leaf.numel() != 1
    return leaf.numel() == 1


def test_s21_refb_r4_lookup_a_complex_output_has_no_implicit_seed(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "Only a real output with\na single element gets the implicit seed 1",
           implicit_seed_for_every_single_element_output,
           labelled(st.lists(st.integers(0, 3), max_size=3).map(tuple),
                    "shapes of y: 0 to 3 dimensions of 0 to 3 entries"),
           labelled(st.sampled_from([torch.float32, torch.complex64]), "dtypes of y: float32, complex64"),
           fails_on="torch.complex64")


# -- s22 refB R6: out= on composite ops --------------------------------------------

S22_OUT_CALLS = {"torch.add": lambda a, o: torch.add(a, 1.0, out=o), "torch.exp": lambda a, o: torch.exp(a, out=o),
                 "torch.mul": lambda a, o: torch.mul(a, 2.0, out=o), "torch.sin": lambda a, o: torch.sin(a, out=o),
                 "torch.tensordot": lambda a, o: torch.tensordot(a, a, dims=1, out=o),
                 "torch.inner": lambda a, o: torch.inner(a, a, out=o),
                 "torch.diag": lambda a, o: torch.diag(a.expand(2, 2), out=o),
                 "torch.softmax": lambda a, o: torch.softmax(a, 0, out=o),
                 "torch.linalg.norm": lambda a, o: torch.linalg.norm(a, out=o),
                 "torch.log_softmax": lambda a, o: torch.log_softmax(a, 0, out=o)}


def out_call_refused_whenever_anything_requires_grad(name, arg_requires, out_requires, under_no_grad) -> bool:
    """s22 R6, glossary.md: "An `out=` call is refused at once, outside `no_grad`,
    whenever an argument or the `out` tensor requires grad", of every out= call."""
    import contextlib
    arg = torch.tensor([0.5, -1.0]).requires_grad_(arg_requires)
    shape = S22_OUT_CALLS[name](torch.tensor([0.5, -1.0]), None).shape
    out = torch.ones(shape, requires_grad=True) * 2.0 if out_requires else torch.zeros(shape)
    with torch.no_grad() if under_no_grad else contextlib.nullcontext():
        try:
            S22_OUT_CALLS[name](arg, out)
        except RuntimeError as error:
            return ("out=... arguments don't support automatic differentiation" in str(error)
                    and not under_no_grad and (arg_requires or out_requires))
    return under_no_grad or not (arg_requires or out_requires)


OUT_CALL_SETTINGS = (labelled(st.booleans(), "the argument requires grad"),
                     labelled(st.booleans(), "the out tensor requires grad"),
                     labelled(st.booleans(), "under no_grad"))


def test_s22_refb_r6_composite_out_calls_are_not_refused(real_claims):
    replay(real_claims, "reference/glossary", "Most `out=` calls\nare refused at once",
           out_call_refused_whenever_anything_requires_grad, st.sampled_from(sorted(S22_OUT_CALLS)),
           *OUT_CALL_SETTINGS,
           fails_on="'torch.linalg.norm', True, False, False")


# -- s22 refB R7: a conversion that changes the memory format or copies ------------

S22_CONVERSIONS = {"float64": lambda t: t.to(torch.float64), "float16": lambda t: t.to(torch.float16),
                   "float32": lambda t: t.to(torch.float32), "meta": lambda t: t.to("meta"),
                   "cpu": lambda t: t.to("cpu"), ".double()": lambda t: t.double(),
                   "channels_last": lambda t: t.to(memory_format=torch.channels_last),
                   "contiguous_format": lambda t: t.to(memory_format=torch.contiguous_format),
                   "float32, copy=True": lambda t: t.to(torch.float32, copy=True)}


def conversion_is_a_leaf_unless_device_or_dtype_changes(start, target) -> bool:
    """s22 R7, look-up-the-questions-people-ask.md: a conversion is a non-leaf "when it
    changes the device or the dtype" (when it changes nothing, the leaf itself)."""
    leaf = torch.ones(1, 2, 2, 2, dtype=start, requires_grad=True)
    converted = S22_CONVERSIONS[target](leaf)
    if converted.dtype == leaf.dtype and converted.device == leaf.device:
        return converted is leaf
    return not converted.is_leaf


def test_s22_refb_r7_a_memory_format_change_makes_a_non_leaf(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "`.cuda()`, `.to(...)` or `.double()`",
           conversion_is_a_leaf_unless_device_or_dtype_changes,
           st.sampled_from([torch.float32, torch.float64]), st.sampled_from(sorted(S22_CONVERSIONS)),
           fails_on="channels_last")


# -- s22 howtoA A2, A3: accumulate-zero-and-reuse-gradients.md --------------------------

def adam_barely_notices_a_factor_k(name, factor, steps, seed, scale) -> bool:
    """s22 A2: "Adam and AdamW divide each step by a running size of the gradient, so a
    factor $K$ barely changes their steps", with no word on eps: the page's run_steps
    (goal and start from the seed, loss scaled) with grad x K moves like grad x 1."""
    def run(gradient_factor):
        generator = torch.Generator().manual_seed(seed)
        weight = torch.nn.Parameter(torch.randn(3, dtype=torch.float64, generator=generator))
        goal = torch.randn(3, dtype=torch.float64, generator=generator)
        optimizer = getattr(torch.optim, name)([weight], lr=0.01)
        for _step in range(steps):
            optimizer.zero_grad()
            (gradient_factor * scale * ((weight - goal) ** 2).sum()).backward()
            optimizer.step()
        return weight.detach()
    return torch.allclose(run(factor), run(1), atol=1e-4)


def test_s22_howtoa_a2_adam_ignores_k_only_far_above_eps(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "Adam and AdamW divide each step by a running size of the gradient",
           adam_barely_notices_a_factor_k, st.sampled_from(["Adam", "AdamW"]),
           labelled(st.integers(2, 8), "K from 2 to 8"),
           labelled(st.integers(1, 4), "optimizer steps from 1 to 4"),
           labelled(st.integers(0, 2**31 - 1), "seeds"),
           labelled(st.sampled_from([1.0, 1e-3, 1e-8, 1e-9]),
                    "loss scales 1, 1e-3 (gradients far above eps), 1e-8, 1e-9 (near eps)"),
           fails_on="e-0")


S22_DEFAULT_OPTIMIZERS = labelled(st.sampled_from([(name, options) for name in ("SGD", "Adam", "AdamW")
                                                    for options in ({}, {"foreach": True})]),
                                  "SGD, Adam, AdamW, with default options and with foreach=True")
S22_AUTOCAST_DTYPES = labelled(st.sampled_from([torch.bfloat16, torch.float16]),
                               "CPU autocast dtypes: bfloat16, float16")


def second_backward_after_a_step_raises(optimizer, dtype, seed) -> bool:
    """s22 A3: "the second backward after a step of a for-loop or `foreach` optimizer
    (the defaults) raises [...] modified by an inplace operation", with fused=True the
    only exception named: the page's two-loss cell, forward under CPU autocast."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    with torch.autocast("cpu", dtype=dtype):
        out = net(torch.ones(4, 2))
    out.sum().backward(retain_graph=True)
    name, options = optimizer
    getattr(torch.optim, name)(net.parameters(), lr=0.1, **options).step()
    try:
        (out ** 2).sum().backward()
    except RuntimeError as error:
        return "modified by an inplace operation" in str(error)
    return False


def test_s22_howtoa_a3_autocast_second_backward_does_not_raise(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "Under `torch.autocast`, a weight autocast casts (a `Linear`'s)",
           second_backward_after_a_step_raises, S22_DEFAULT_OPTIMIZERS, S22_AUTOCAST_DTYPES,
           labelled(st.integers(0, 2**16), "seeds of the page's two-layer net"),
           fails_on="torch.")


def retain_graph_loop_raises_at_step_2(dtype, optimizer, seed) -> bool:
    """s22 A3: "steps 0 and 1 pass, step 2 raises [...]" and the Summary's "fails once
    the optimizer has changed a saved weight": the page's retain_graph loop, under autocast."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cell = torch.nn.Linear(3, 3)
    name, options = optimizer
    optimizer = getattr(torch.optim, name)(cell.parameters(), lr=0.1, **options)
    h, finished = torch.zeros(1, 3), []
    try:
        for step in range(5):
            with torch.autocast("cpu", dtype=dtype):
                h = torch.tanh(cell(h) + 1)
            optimizer.zero_grad()
            h.float().sum().backward(retain_graph=True)
            optimizer.step()
            finished.append(step)
    except RuntimeError as error:
        return finished == [0, 1] and "modified by an inplace operation" in str(error)
    return False


def test_s22_howtoa_a3_autocast_retain_graph_loop_runs_on(real_claims):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "(under `torch.autocast` a cell of `Linear` weights runs on, stale)",
           retain_graph_loop_raises_at_step_2, S22_AUTOCAST_DTYPES, S22_DEFAULT_OPTIMIZERS,
           labelled(st.integers(0, 2**16), "seeds of the page's cell"),
           fails_on="torch.")



# -- r62e-1, r62e-2: a forward pass after the step, in an autocast block holding it ----

from autocast_blocks import AUTOCAST_BLOCKS, generator_gradient_after_d_step, rerun_after_step  # noqa: E402


def a_rerun_after_the_step_sees_the_new_weights(dtype, blocks, seed) -> bool:
    """r62e-1 M, accumulate (e6a1179:1748-1749): "if the second loss must see the new
    weights, run the forward pass again after the step", in one autocast block that
    holds the step: the re-run uses the block's casts of the old weights."""
    return rerun_after_step(dtype, blocks, seed)[1]


def stepping_d_first_gives_g_the_gradient_against_the_new_d(dtype, blocks, seed) -> bool:
    """r62e-2 M, accumulate (e6a1179:2074-2075): "so step `D` before it", the iteration
    in one autocast block: G's gradient is the one against D before its step."""
    return generator_gradient_after_d_step(dtype, blocks, seed)[1]


@pytest.mark.parametrize("quote, old_sentence, seeds", [
    pytest.param("run the forward pass again after the step, outside any autocast block",
                 a_rerun_after_the_step_sees_the_new_weights, "seeds of the page's two-layer net", id="r62e-1"),
    pytest.param("(outside the autocast block of the generator's `D(fake)`",
                 stepping_d_first_gives_g_the_gradient_against_the_new_d, "seeds of the page's G and D",
                 id="r62e-2"),
])
def test_r62e_1_2_a_forward_pass_after_the_step_in_the_step_s_autocast_block(real_claims, quote, old_sentence,
                                                                                 seeds):
    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients", quote, old_sentence,
           S22_AUTOCAST_DTYPES, AUTOCAST_BLOCKS, labelled(st.integers(0, 2**16), seeds), fails_on="'one block")


# -- s22 howtoB B1: linearize reads x and the weights at jvp_fn's first call ----------

S22_MOVED = labelled(st.sampled_from(["x", "weights", "buffers", "both"]),
                    "x, the weights (and buffers), the buffers alone, or x and the weights changed in place")


def linearized_then_moved(net, moved):
    """linearize net in eval() at a seeded x, then change x, the weights (a training
    step, which moves the buffers too), BatchNorm's running variance alone, or x and
    the weights in place: (jvp_fn, u, the new x, x as linearize saw it, net then)."""
    gen = torch.Generator().manual_seed(0)
    at = torch.randn(3, net.in_features, dtype=torch.double, generator=gen)
    tangent = torch.randn(at.shape, dtype=torch.double, generator=gen)
    before, x0 = copy.deepcopy(net.eval()), at.clone()  # eval(), as the check linearizes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _value, jvp_fn = torch.func.linearize(net, at)
    if moved in ("x", "both"):
        at.add_(0.5)
    if moved in ("weights", "both"):
        net.train()(at).pow(2).sum().backward()
        torch.optim.SGD(net.parameters(), lr=0.1).step()
    if moved == "buffers":
        for norm in [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm1d)]:
            norm.running_var.mul_(1.5)
    return jvp_fn, tangent, at, x0, before


def jvp_fn_gives_J_at_the_linearized_point(net, moved) -> bool:
    """s22 B1, pass-options-to-torch-func-transforms: "`jvp_fn` ... computes $J u$ ...
    Calls of `jvp_fn` never run $f$ again", read as: `jvp_fn(u)` is $J u$ at the x and
    weights `linearize` saw, even if x or the weights change in place (an SGD step)
    before its first call. It is J at the new point: the first call evaluates f's ops."""
    jvp_fn, tangent, _at, x0, before = linearized_then_moved(net, moved)
    return torch.allclose(jvp_fn(tangent), torch.func.jvp(before, (x0,), (tangent,))[1], atol=1e-9)


def first_call_reads_x_and_the_weights_alone(net, moved) -> bool:
    """n56b-4/5, pass-options-to-torch-func-transforms.md (53d2a84:336-337): "the first
    call evaluates $f$'s operations on $x$ and the weights as they are then", read as
    all it reads: J at the new x and weights with the running statistics linearize saw.
    A BatchNorm's moved statistics are read too."""
    jvp_fn, tangent, at, _x0, before = linearized_then_moved(net, moved)
    unmoved = copy.deepcopy(net.eval())
    unmoved.load_state_dict({**net.state_dict(), **dict(before.named_buffers())})
    return torch.allclose(jvp_fn(tangent), torch.func.jvp(unmoved, (at,), (tangent,))[1], atol=1e-9)


@pytest.mark.parametrize("old_sentence, fails_on", [
    pytest.param(jvp_fn_gives_J_at_the_linearized_point, "'x'", id="s22 B1: J at linearize's point"),
    pytest.param(first_call_reads_x_and_the_weights_alone, "BatchNorm1d", id="n56b-4: buffers as linearize saw them"),
])
def test_s22_b1_n56b_4_jvp_fn_reads_x_weights_and_buffers_at_its_first_call(real_claims, old_sentence, fails_on):
    replay(real_claims, "how-to/pass-options-to-torch-func-transforms",
           "but the first call evaluates $f$'s operations on $x$", old_sentence,
           labelled(small_networks(batchnorm=True), "small networks with BatchNorm1d"), S22_MOVED, fails_on=fails_on)


# -- s25 reveal #27: a family's label and member count say what the check ran over ----

def test_s25_one_feature_family_is_labelled_and_counted_as_drawn(real_claims):
    """#27, differentiate-a-network-output-with-respect-to-its-input: the check of
    "The samples do not interact ..." draws one-feature nets only, yet its reveal read
    "Checked over 1 member of inputs with several features (x, t)": the family was
    labelled for several features, and its six draws (six seeds, six networks) printed
    one name. The label must name one feature, and every draw count as a member."""
    page = "how-to/differentiate-a-network-output-with-respect-to-its-input"
    [record] = [r for r in real_claims[page] if r["check"] == "check_property"
                and r["quote"].startswith("The samples do not interact")]
    assert record["families"] == ["tanh MLPs on inputs with one feature x"], record["families"]
    assert record["members"] == record["examples"] == 6, (record["members"], record["drawn"])
    from families import members
    from reader_settings import multi_feature_inputs

    drawn = members(multi_feature_inputs(features=st.just(1)), 6)
    networks = {tuple(m.model[0].weight.detach().flatten().tolist()) for m in drawn}
    assert len({repr(m) for m in drawn}) == len(networks) == 6, drawn



# -- s23 refB B1: the out= exceptions read as a complete list ---------------------------

S23_OLD_EXCEPTIONS = ("torch.tensordot", "torch.inner", "torch.diag", "torch.softmax")


def out_call_refused_unless_one_of_the_four_named(name, arg_requires, out_requires, under_no_grad) -> bool:
    """s23 refB B1, glossary.md (in-place operation), before s25: "a few composite
    ones are not: `tensordot` and `inner` record a copy ..., and `diag` and `softmax`
    ... raise only at `backward`", read as the complete list: any other out= call is
    refused at once outside no_grad when anything requires grad. `linalg.norm` and
    `log_softmax` are not."""
    arg = torch.tensor([0.5, -1.0]).requires_grad_(arg_requires)
    shape = S22_OUT_CALLS[name](torch.tensor([0.5, -1.0]), None).shape
    out = torch.ones(shape, requires_grad=True) * 2.0 if out_requires else torch.zeros(shape)
    if under_no_grad or not (arg_requires or out_requires) or name in S23_OLD_EXCEPTIONS:
        return True
    try:
        S22_OUT_CALLS[name](arg, out)
    except RuntimeError as error:
        return "out=... arguments don't support automatic differentiation" in str(error)
    return False


def test_s23_refb_b1_out_exceptions_are_not_only_the_four_named(real_claims):
    replay(real_claims, "reference/glossary", "Most `out=` calls\nare refused at once",
           out_call_refused_unless_one_of_the_four_named, st.sampled_from(sorted(S22_OUT_CALLS)),
           *OUT_CALL_SETTINGS,
           fails_on="'torch.l")


# -- s23 refB B4: an in-place edit under no_grad keeps grad_fn and the flag --------------

S23_NO_GRAD_EDITS = {"mul_": lambda t: t.mul_(2.0), "zero_": lambda t: t.zero_(),
                     "[0] = 5": lambda t: t.__setitem__(0, 5.0), "+= 1": lambda t: t.__iadd__(1.0),
                     "relu(inplace=True)": lambda t: torch.nn.functional.relu(t, inplace=True),
                     "mul(ones, 3, out=)": lambda t: torch.mul(torch.ones_like(t), 3.0, out=t)}
S23_NO_GRAD_EDITED = {"the leaf x": lambda t: t, "x * 2": lambda t: t * 2, "sin(x)": torch.sin,
                      "(x * 2)[1:]": lambda t: (t * 2)[1:], "x[1:]": lambda t: t[1:],
                      "(x * 2).view(3, 1)": lambda t: (t * 2).view(3, 1), "exp(x) (saved)": torch.exp,
                      "(x * 2).tensor_split(3)[0]": lambda t: (t * 2).tensor_split(3)[0]}
# since s26 the page's check draws these too (a copy of NO_GRAD_RAISING): views from
# chunk, split or unbind, and views taken under no_grad (the second function)
S26_NO_GRAD_RAISING = {"(x * 2).chunk(3)[0]": (lambda t: (t * 2).chunk(3)[0], None),
                       "x.chunk(3)[1]": (lambda t: t.chunk(3)[1], None),
                       "x.split([1, 2])[1][1:]": (lambda t: t.split([1, 2])[1][1:], None),
                       "list((x * 2).view(3, 1))[0]": (lambda t: list((t * 2).view(3, 1))[0], None),
                       "x.view(3, 1).unbind(1)[0]": (lambda t: t.view(3, 1).unbind(1)[0], None),
                       "x[1:] taken under no_grad": (lambda t: t, lambda t: t[1:]),
                       "(x * 2).view(3, 1) taken under no_grad": (lambda t: t * 2, lambda t: t.view(3, 1))}
S26_NO_GRAD_FAMILIES = (st.sampled_from(sorted(S23_NO_GRAD_EDITS)),
                        st.sampled_from(sorted({**S23_NO_GRAD_EDITED, **S26_NO_GRAD_RAISING})),
                        st.sampled_from([torch.float32, torch.float64]))


def edited_under_no_grad(edit, edited, x):
    """The drawn tensor made from x, then edited under no_grad, as the page's check does."""
    outside, inside = S26_NO_GRAD_RAISING.get(edited, (S23_NO_GRAD_EDITED.get(edited), None))
    tensor = outside(x)
    with torch.no_grad():
        tensor = inside(tensor) if inside else tensor
        result = S23_NO_GRAD_EDITS[edit](tensor)
    return tensor, result


def results_under_no_grad_have_no_grad_fn(edit, edited, dtype) -> bool:
    """s23 refB B4, glossary.md (no_grad), before s25: "results have no grad_fn and do
    not require grad", of the result of an in-place edit too (a leaf aside: the entry
    lets it be updated in place). The edited tensor is returned, and keeps both."""
    if edited in S26_NO_GRAD_RAISING:  # since s26, the parenthesis's views: not this sentence's
        return True
    x = torch.tensor([0.5, -1.0, 2.0], dtype=dtype, requires_grad=True)
    tensor, result = edited_under_no_grad(edit, edited, x)
    result = tensor if result is None else result
    return result is x or (result.grad_fn is None and not result.requires_grad)


def test_s23_refb_b4_an_in_place_edit_under_no_grad_keeps_its_grad_fn(real_claims):
    replay(real_claims, "reference/glossary", "an in-place edit there is not recorded either",
           results_under_no_grad_have_no_grad_fn, *S26_NO_GRAD_FAMILIES,
           fails_on="'[0] = 5', 'exp(x) (saved)', torch.float32")


# -- s25 refB B2: a node that reads an empty list of saved tensors raises too ---------

def second_pass_raises_exactly_when_a_saved_tensor_is_read(name, form) -> bool:
    """s25 B2, misconceptions.md (s24 wording): "raises exactly when the second pass
    reads a tensor saved through autograd's saved-tensor mechanism": only the Function
    that saved a tensor and reads it raises. One that saved nothing and reads
    ctx.saved_tensors raises too."""
    global OLD_SENTENCE_RAISES_FOR
    before, OLD_SENTENCE_RAISES_FOR = OLD_SENTENCE_RAISES_FOR, ("saves and reads",)
    try:
        return second_pass_raises_exactly_when_saved_for_backward(name, form)
    finally:
        OLD_SENTENCE_RAISES_FOR = before


def test_s25_b2_a_function_reading_an_empty_list_raises(real_claims):
    replay(real_claims, "reference/misconceptions", "For a custom Function, that is when its `backward` reads",
           second_pass_raises_exactly_when_a_saved_tensor_is_read, *CUSTOM_FUNCTIONS,
           fails_on="saves nothing, reads")


def compiled_second_pass_raises_only_if_a_tensor_was_saved(chain, dtype) -> bool:
    """s25 B2, the same sentence on torch.compile: CompiledFunctionBackward of
    (x + 1).sum() saved no tensor, so the old sentence says the second pass runs."""
    from second_backward import summed_chain

    torch._dynamo.reset()
    leaf = torch.ones(4, dtype=dtype, requires_grad=True)
    out = torch.compile(lambda t: summed_chain(chain, t))(leaf)
    saved = len(out.grad_fn.saved_tensors)
    out.backward()
    try:
        out.backward()
    except RuntimeError:
        return saved > 0
    return saved == 0


def test_s25_b2_a_compiled_region_raises_though_it_saved_nothing(real_claims):
    from families import dtypes

    replay(real_claims, "reference/misconceptions", "a region compiled by `torch.compile`'s default backend or",
           compiled_second_pass_raises_only_if_a_tensor_was_saved,
           labelled(operation_chains(SIMPLE_OPERATIONS), "(x + 1).sum() and chains of 1 to 3 simple operations, compiled"),
           dtypes(complex=False), fails_on="")


# -- s25 refB B3: the row[None] recipe with the default batch_first=False -------------

def row_none_gives_each_samples_jacobian_for_default_attention(models) -> bool:
    """s25 B3, both pages (s24 wording): "which works for ... `nn.MultiheadAttention`",
    with no word on batch_first: built with the default batch_first=False and fed
    (steps, batch, features), the recipe runs and maps over the steps instead."""
    from per_sample_jacobians import StepsFirstLastStep, each_samples_jacobian

    [(model, batch)] = [(m, b) for kind, m, b in models if kind == "MultiheadAttention"]
    typed = StepsFirstLastStep(model)
    own = each_samples_jacobian(lambda b: typed(b.transpose(0, 1)), batch)
    mapped = torch.func.vmap(torch.func.jacrev(lambda row: typed(row[None])[0]))(batch.transpose(0, 1))
    return mapped.shape == own.shape and torch.allclose(mapped, own)


@pytest.mark.parametrize("page", ["reference/misconceptions", "reference/look-up-the-questions-people-ask"])
def test_s25_b3_row_none_with_the_default_batch_first(real_claims, page):
    from per_sample_jacobians import sequence_models

    replay(real_claims, page, "With the default `batch_first=False` the batch is dimension 1",
           row_none_gives_each_samples_jacobian_for_default_attention, sequence_models(),
           fails_on="MultiheadAttention")


# -- s25 audit #35: create_graph=True is needed for the penalty to reach the weights ------

def penalty_reaches_the_weights_without_create_graph(setting) -> bool:
    """s25 audit #35, look-up.md (a surviving edit): "`create_graph=True` is optional:
    the penalty reaches the critic's weights either way". Without it the gradient has
    no graph, and the penalty's backward raises element 0."""
    critic, real = setting.model, setting.inputs.detach()
    eps = torch.rand(real.shape[0], *[1] * (real.dim() - 1), dtype=real.dtype,
                     generator=torch.Generator().manual_seed(0))
    x_hat = (eps * real + (1 - eps) * real.flip(0)).requires_grad_()
    scores = critic(x_hat)
    (gradients,) = torch.autograd.grad(scores, x_hat, grad_outputs=torch.ones_like(scores))
    ((gradients.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
    return all(p.grad is not None for p in critic.parameters() if p.dim() >= 2)


def test_s25_audit_35_create_graph_is_needed(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "Make `x_hat` require grad first",
           penalty_reaches_the_weights_without_create_graph, sample_batches(), fails_on="",
           because="element 0 of tensors does not require grad")


# -- s25 audit #23: 0 x inf in a backward formula leaks as nan too ----------------------

S25_LEAKS = {  # as where-derivatives-do-not-exist.md's LEAKS: the op and where it is safe
    "acos": (torch.acos, lambda t: t.abs() < 1), "log": (torch.log, lambda t: t > 0),
    "sqrt": (torch.sqrt, lambda t: t > 0), "x ** 0.5": (lambda t: t**0.5, lambda t: t > 0),
    "x * log(x)": (lambda t: t * torch.log(t), lambda t: t > 0)}
S25_SELECTIONS = {"mask": lambda safe, out: out[safe].sum(),
                  "where": lambda safe, out: torch.where(safe, out, 0.0).sum()}


def zero_times_inf_in_a_backward_stays_zero(name, way, drawn) -> bool:
    """s25 audit #23, where-derivatives-do-not-exist.md (a surviving edit): "0/0 leaks
    through as `nan`, while 0 x inf in a backward formula stays 0": pow's backward
    multiplies the zero cotangent by 0.5 * x ** -0.5, infinite at 0."""
    op, is_safe = S25_LEAKS[name]
    leaf, safe = drawn.clone().requires_grad_(), is_safe(drawn)
    S25_SELECTIONS[way](safe, op(leaf)).backward()
    return name != "x ** 0.5" or not bool(torch.isnan(leaf.grad[~safe]).any())


def test_s25_audit_23_zero_times_inf_leaks_as_nan(real_claims):
    replay(real_claims, "explanation/where-derivatives-do-not-exist", "`torch.where` and masks select values",
           zero_times_inf_in_a_backward_stays_zero, st.sampled_from(sorted(S25_LEAKS)),
           st.sampled_from(sorted(S25_SELECTIONS)), points(), fails_on="'x ** 0.5'")




# -- r25h3 R1: a linear term beside BesselJ0 leaves the second derivative raising --

def j0_runs_beside_any_other_term(other_terms, values, follow_up, before="x",
                                  second="slope.sum()", how=J0_PASSES[0]) -> bool:
    """r25h3 R1, handle-operations...md: "It raises ... when the loss reaches `x` through
    the Function alone, followed only by linear operations with constant coefficients
    (...); after a nonlinear operation such as `** 2` or `tanh`, or beside another term,
    it runs, wrong": it raises exactly when a linear follow-up has no other term beside it."""
    got, _ = j0_second_derivatives(other_terms, values, follow_up, before)
    return (got is None) == (J0_FOLLOW_UPS[follow_up][1] and not other_terms.terms)


def test_r25h3_r1_j0_raises_beside_a_linear_term(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_runs_beside_any_other_term, *j0_settings(),
           fails_on="3 * x.mean()")


# -- r25h1 R4: the diagonal of J has x's own shape for a square x too ----------------------

def the_diagonal_has_x_own_shape_only_for_a_longer_1d_y(case) -> bool | None:
    """R4, differentiate-elementwise-functions-at-many-points.md (3f013b3, Summary): "of
    another shape than `x` or of `x`'s own: always when `x` and `y` are 1-D and `y` is the
    longer", as its check read it: x's own shape only then. A square (2, 2) x with a 1-D
    y of 2 or 3 entries gives a (2, 2) diagonal too, a (2, 2, 2) x with 3 a (2, 2, 2) one."""
    f, shape = DIAGONAL_SHAPE_CASES[case]
    x = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = f(x)
    if y.numel() == x.numel() or sorted((x.dim(), y.dim())) == [0, 1]:
        return None
    same = torch.diagonal(torch.func.jacrev(f)(x)).shape == x.shape
    return same == (x.dim() == y.dim() == 1 and y.numel() > x.numel())


def test_r25h1_r4_a_square_x_gives_a_diagonal_of_its_own_shape(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "When the counts differ, $\\partial y_i / \\partial x_i$ means nothing, yet",
           the_diagonal_has_x_own_shape_only_for_a_longer_1d_y, diagonal_shape_cases(),
           fails_on=", (2, 2")  # a square (2, 2) or a cube (2, 2, 2) x


# -- s26 r25r1 R1: views from chunk, split or unbind, or taken under no_grad ---------

def an_edited_tensor_keeps_a_grad_fn_of_its_old_value(edit, edited, dtype) -> bool:
    """s26 R1, glossary.md (no_grad), before s26: after an in-place edit under no_grad
    "its grad_fn differentiates the value it had before the edit (unless the edit
    overwrote a saved tensor)", with no word on views from chunk, split or unbind
    (q, k, v = qkv.chunk(3); the rows of list(x)) or views taken under no_grad: for
    them reading grad_fn raises, and so does backward."""
    x = torch.tensor([0.5, -1.0, 2.0], dtype=dtype, requires_grad=True)
    tensor, _ = edited_under_no_grad(edit, edited, x)
    unedited = torch.tensor([0.5, -1.0, 2.0], dtype=dtype, requires_grad=True)
    outside, inside = S26_NO_GRAD_RAISING.get(edited, (S23_NO_GRAD_EDITED.get(edited), None))
    (inside or (lambda t: t))(outside(unedited)).sum().backward()
    try:
        if tensor.grad_fn is None:
            return tensor is x
        tensor.sum().backward()
    except RuntimeError as error:
        return edited == "exp(x) (saved)" and "modified by an inplace operation" in str(error)
    return torch.equal(x.grad, unedited.grad)


def test_s26_r1_an_edited_view_from_chunk_or_taken_under_no_grad_raises(real_claims):
    replay(real_claims, "reference/glossary", "an in-place edit there is not recorded either",
           an_edited_tensor_keeps_a_grad_fn_of_its_old_value, *S26_NO_GRAD_FAMILIES,
           fails_on="'(x * 2).chunk(3)[0]'")


# -- r25h5: check-gradients.md's compile sentences --------------------------------

def gradgradcheck_always_raises_under_aot_eager(case) -> bool:
    """r25h5 R5, check-gradients.md (14ca9fc:496): "With `backend="aot_eager"`,
    `gradgradcheck` always raises", of a function returning only views of its input."""
    compiled, inputs = compiled_mlp_after(case)
    try:
        torch.autograd.gradgradcheck(compiled, (inputs,))
    except RuntimeError:
        return True
    return False


def test_r25h5_r5_gradgradcheck_passes_on_views_only(real_claims):
    replay(real_claims, "how-to/check-gradients", "With `backend=\"aot_eager\"`, `gradgradcheck` raises on a",
           gradgradcheck_always_raises_under_aot_eager, GRADCHECK_ALL_CASES, fails_on="'an expand, freshly compiled'")


def gradgradcheck_raises_the_double_backward_error(case) -> bool:
    """r25h5 R1, check-gradients.md (14ca9fc:497-500): after a fresh compile,
    "`gradgradcheck` then raises "torch.compile with aot_autograd does not currently
    support double backward"", with no word on how the compiled module is passed."""
    if not case.removesuffix(", in a loss").endswith("freshly compiled") or case.split(", ")[0] in GRADCHECK_VIEWS:
        return True
    compiled, inputs = compiled_mlp_after(case)
    try:
        torch.autograd.gradgradcheck(compiled, (inputs,))
    except RuntimeError as error:
        return "does not currently support double backward" in str(error)
    return False


def test_r25h5_r1_a_loss_outside_the_compiled_module_raises_another_error(real_claims):
    replay(real_claims, "how-to/check-gradients", "With `backend=\"aot_eager\"`, `gradgradcheck` raises on a",
           gradgradcheck_raises_the_double_backward_error, GRADCHECK_ALL_CASES, fails_on="in a loss")


def gradgradcheck_passes_on_a_single_view_only(case) -> bool:
    """r37g-1, check-gradients.md (1778e9b:702-703): under aot_eager, `gradgradcheck`
    "passes on one that returns a single view of its input (...; not the several views
    of `split` or `chunk`)": read as one view passes, several raise. Two plain views
    as a tuple pass."""
    function = case.removesuffix(", in a loss").split(", ")[0]
    if function not in GRADCHECK_VIEWS or "sine" in function:
        return True
    compiled, inputs = compiled_mlp_after(case)
    outputs = compiled(inputs)
    try:
        passed = torch.autograd.gradgradcheck(compiled, (inputs,))
    except RuntimeError:
        passed = False
    return passed == (not isinstance(outputs, tuple))


def test_r37g_1_two_plain_views_pass_gradgradcheck(real_claims):
    replay(real_claims, "how-to/check-gradients", "With `backend=\"aot_eager\"`, `gradgradcheck` raises on a",
           gradgradcheck_passes_on_a_single_view_only, GRADCHECK_ALL_CASES, fails_on="two views")


from reader_settings import batch_norm_models_with_one_value as rs_one_value  # noqa: E402

# -- n26c F2: differentiation-apis.md, strict=True around a backward that cuts grad ------

def strict_raises_where_only_linear_maps_surround(g, built, bypass, around) -> bool:
    """n26c F2, differentiation-apis.md (fc9e3cf:2000-2004): a `backward` on detached
    saved tensors loses the second derivative "with no error unless only linear maps
    (a sum, a mean, a linear layer) surround the Function and nothing bypasses it: then
    zeros, and `strict=True` raises"; read as the learner does, strict=True raises there
    and only there. A ReLU before or after the Function gives zeros too, and hvp's
    strict=True raises."""
    from torch.autograd import functional

    def slope_of_a_detached_input(t, grad):
        with torch.enable_grad():
            at = t.detach().requires_grad_()
            return grad * torch.autograd.grad(g(at), at, torch.ones_like(at))[0]

    DetachedSaved = function_saving_its_input(g, slope_of_a_detached_input)
    if built != "PyTorch on detached saved tensors" or bypass or around not in ("sum", "mean", "relu", "relu before"):
        return True
    before, after = (torch.relu, torch.relu) if around.startswith("relu") else ((lambda t: t), (lambda t: t))
    before, after = (before, (lambda c: c)) if around == "relu before" else ((lambda t: t), after)
    reduce = torch.mean if around == "mean" else torch.sum
    at, direction = g.point(0), g.point(1)
    try:
        functional.hvp(lambda t: reduce(after(DetachedSaved.apply(before(t)))), at, direction, strict=True)
    except RuntimeError:
        return not around.startswith("relu")
    return around.startswith("relu")


def function_saving_its_input(g, backward, once=False) -> type[torch.autograd.Function]:
    """A Function computing g that saves its input t, its backward ``backward(t, grad)``
    (with ``once``, marked @once_differentiable)."""
    from torch.autograd.function import once_differentiable

    class SavingItsInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return g(t)

    def on_saved(ctx, grad):
        return backward(ctx.saved_tensors[0], grad)

    SavingItsInput.backward = staticmethod(once_differentiable(on_saved) if once else on_saved)
    return SavingItsInput


# What the page's check of its custom-Function passage draws (as the page builds them).
APIS_FUNCTION_PASSAGE = ("A custom {py:class}`torch.autograd.Function` with a `forward` and a "
                         "`backward` but no")
APIS_BACKWARDS = labelled(
    st.sampled_from(["PyTorch operations", "PyTorch on detached saved tensors", "@once_differentiable",
                     "NumPy on detached values", "PyTorch on a tensor computed in forward",
                     "PyTorch on its saved output"]),
    "backwards built from PyTorch operations, from PyTorch operations on detached saved tensors, "
    "marked @once_differentiable, in NumPy on detached values, or from PyTorch operations on a "
    "tensor computed in forward (not an output) or on its saved output")
APIS_BYPASS = labelled(st.booleans(), "the Function the only path, or + t**2 (a second path from input to output)")
APIS_AROUND = labelled(
    st.sampled_from(["sum", "mean", "sin", "relu", "linear, relu", "sin before", "relu before",
                     "linear before", "linear layers", "layers"]),
    "the Function followed by a sum, a mean, .sin(), a ReLU or Linear -> ReLU and a sum; after "
    ".sin(), a ReLU or a Linear and followed by a sum; or Linear -> Function -> Linear -> sum or "
    "squared loss")


def test_n26c_f2_strict_raises_after_a_relu_too(real_claims):
    from families import elementwise_maps

    replay(real_claims, "reference/differentiation-apis", APIS_FUNCTION_PASSAGE,
           strict_raises_where_only_linear_maps_surround, elementwise_maps(), APIS_BACKWARDS,
           APIS_BYPASS, APIS_AROUND, fails_on="relu")


# -- r32g-1: differentiation-apis.md, a backward on the output forward saved -------------

def a_tensor_forward_computed_loses_the_second_derivative(g, built, bypass, around) -> bool:
    """r32g-1, differentiation-apis.md (2c2b508:2006-2008): "A `backward` that reads its
    saved tensors detached, or a tensor `forward` computed (`forward` records no history),
    keeps `functional.jvp` right, but `hvp`, `vhp` and `hessian` lose the Function's own
    second derivative". Read on the torch.autograd.Function docstring's Exp pattern (the
    output saved with save_for_backward): where nothing else around the Function has a
    second derivative (a sum, a mean, a ReLU), hvp would be zeros. The saved output
    keeps the Function's node as its history, so hvp is the true g'' u."""
    from torch.autograd import functional

    if (built != "PyTorch on its saved output" or g.slope_from_output is None or bypass
            or around not in ("sum", "mean", "relu", "relu before")):
        return True

    class SavesOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            output = g(t)
            ctx.save_for_backward(output)
            return output

        @staticmethod
        def backward(ctx, grad):
            (output,) = ctx.saved_tensors
            return grad * g.slope_from_output(output)

    before = torch.relu if around == "relu before" else (lambda t: t)
    after = torch.relu if around == "relu" else (lambda t: t)
    reduce = torch.mean if around == "mean" else torch.sum
    at, direction = g.point(0), g.point(1)
    hvp = functional.hvp(lambda t: reduce(after(SavesOutput.apply(before(t)))), at, direction)[1]
    return bool((hvp == 0).all())


def test_r32g_1_a_saved_output_keeps_the_second_derivative(real_claims):
    from families import elementwise_maps

    replay(real_claims, "reference/differentiation-apis", APIS_FUNCTION_PASSAGE,
           a_tensor_forward_computed_loses_the_second_derivative, elementwise_maps(), APIS_BACKWARDS,
           APIS_BYPASS, APIS_AROUND, fails_on="'PyTorch on its saved output'")


# -- r27h3 R1, R6: what x goes through before BesselJ0 matters too -------------------------

def j0_raises_whenever_only_linear_operations_follow(other_terms, values, follow_up, before="x",
                                                     second="slope.sum()", how=J0_PASSES[0]) -> bool:
    """r27h3 R1, handle-operations...md: "It raises ... when only linear operations with
    constant coefficients follow the Function (...) and any other term is linear in `x`
    with constant coefficients too": whatever the Function's input. J0(x ** 2).sum()
    runs, silently wrong."""
    from reader_settings import LINEAR_LOSS_TERMS

    got, _ = j0_second_derivatives(other_terms, values, follow_up, before)
    linear = J0_FOLLOW_UPS[follow_up][1] and all(term in LINEAR_LOSS_TERMS for term in other_terms.terms)
    return (got is None) == linear


def test_r27h3_r1_j0_runs_after_a_nonlinear_input(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_raises_whenever_only_linear_operations_follow, *j0_settings(),
           fails_on="x ** 2")


def j0_keeps_only_what_flows_through_grad_output(other_terms, values, follow_up, before="x",
                                                 second="slope.sum()", how=J0_PASSES[0]) -> bool:
    """r27h3 R6: the second derivative "keeps only what flows through `grad_output`": with
    a linear follow-up (a constant grad_output) the J0 path adds nothing to it, whatever
    comes before the Function. J0(x ** 2).sum() adds -2 J1(x ** 2) from pow's backward."""
    got, _ = j0_second_derivatives(other_terms, values, follow_up, before)
    if got is None or not J0_FOLLOW_UPS[follow_up][1]:
        return True
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(other_terms(at) + 0 * at.sum(), at, create_graph=True)
    if not slope.requires_grad:
        return bool(torch.equal(got, torch.zeros_like(got)))
    (other,) = torch.autograd.grad(slope.sum(), at)
    return torch.allclose(got, other)


def test_r27h3_r6_j0_keeps_what_the_input_side_contributes(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_keeps_only_what_flows_through_grad_output, *j0_settings(),
           fails_on="x ** 2")


# -- r27h3 R5: the Transformer layers default to batch_first=False too --------------------

SEQUENCE_KINDS = ("LSTM", "GRU", "RNN", "MultiheadAttention", "TransformerEncoderLayer",
                  "TransformerDecoderLayer", "TransformerEncoder", "Transformer")  # as the page has them


def unlisted_layers_take_dim_0_as_the_batch(kind_first_sizes) -> bool:
    """r27h3 R5, penalize-the-gradient...md: "build `nn.LSTM`, `nn.GRU`, `nn.RNN` and
    `nn.MultiheadAttention` with `batch_first=True`", read as readers act on it: the layers
    it leaves out (the Transformer ones the page recommends) take dim 0 as the batch as
    built by default. They default to batch_first=False."""
    import warnings

    kind = kind_first_sizes[0]
    if kind in SEQUENCE_KINDS[:4]:
        return True
    small = dict(d_model=3, nhead=1, dim_feedforward=8, dropout=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if kind == "Transformer":
            return torch.nn.Transformer(**small, num_encoder_layers=1, num_decoder_layers=1).batch_first
        layer = getattr(torch.nn, kind.replace("Encoder", "EncoderLayer") if kind == "TransformerEncoder" else kind)(**small)
    return layer.self_attn.batch_first


def sequence_critics():
    """The penalize page's sequence critics, as its check draws them."""
    return labelled(st.tuples(st.sampled_from(sorted(SEQUENCE_KINDS)), st.booleans(),
                              st.integers(2, 4), st.integers(3, 5), st.integers(0, 3)),
                    "critics " + ", ".join(SEQUENCE_KINDS) + " -> last step -> Linear, "
                    "batch_first True and False, 2-4 sequences of 3-5 steps")


def test_r27h3_r5_transformer_layers_default_to_time_first(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
           "Both lines take dim 0 as the batch", unlisted_layers_take_dim_0_as_the_batch, sequence_critics(),
           fails_on="Transformer")


# -- r27h4: write-a-custom-autograd-function.md R1, R2, R3 ------------------------

def an_unrecorded_backward_is_silently_wrong_at_second_order(name, values, other_terms) -> bool:
    """r27h4 R2, write-a-custom-autograd-function.md (fc9e3cf:473-477): a backward reading
    a constant "the first derivative is right, the second silently wrong", in every
    setting. With the Function alone, or beside terms linear in x, the second pass raises
    "element 0 of tensors does not require grad"."""
    from custom_backwards import CUSTOM_BACKWARDS

    function, differentiable = CUSTOM_BACKWARDS[name]
    if differentiable:
        return True
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(function.apply(at).sum() + other_terms(at), at, create_graph=True)
    try:
        torch.autograd.grad(slope.sum(), at)
    except RuntimeError:
        return False
    return True


def test_r27h4_r2_a_constant_backward_raises_when_alone(real_claims):
    from custom_backwards import Around, around_the_function, backward_points, custom_backwards

    def straight_on_x(name, values, around, other_terms):  # the old sentence's setting
        if (around.before, around.after) != ("x", "sum"):
            return True
        return an_unrecorded_backward_is_silently_wrong_at_second_order(name, values, other_terms)

    assert repr(Around("x", "sum")) == "x -> Function -> sum"
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "and the second misses every term through that constant.",
           straight_on_x, custom_backwards(), backward_points(), around_the_function(),
           losses_with_linear_terms(), fails_on="x -> Function -> sum")


def autograd_grad_is_a_workaround_for_once_differentiable(setting, place) -> bool:
    """r27h4 R1, write-a-custom-autograd-function.md (fc9e3cf:1476-1482, 2146-2149):
    "`autograd.grad` skips the error", read as a way past it: in a gradient penalty,
    autograd.grad(penalty, params, allow_unused=True) would give the gradients of the
    same critic with a recorded cube. It gives None or wrong ones."""
    from custom_backwards import CUSTOM_BACKWARDS

    cube, _ = CUSTOM_BACKWARDS["x³, backward through NumPy, @once_differentiable"]
    m = setting.model
    params = list(m.parameters())
    found = []
    for apply in (cube.apply, lambda t: t**3):
        x_hat = setting.inputs.detach().requires_grad_()
        scores = apply(m(x_hat)) if place.startswith("last") else m[2](apply(m[1](m[0](x_hat))))
        (slope,) = torch.autograd.grad(scores, x_hat, torch.ones_like(scores), create_graph=True)
        penalty = ((slope.norm(dim=1) - 1) ** 2).mean()
        found.append(torch.autograd.grad(penalty, params, allow_unused=True))
    return all((a is None) == (b is None) and (a is None or torch.allclose(a, b)) for a, b in zip(*found))


def test_r27h4_r1_autograd_grad_drops_the_cube_in_a_penalty(real_claims):
    places = labelled(st.sampled_from(["last: cube(critic(x))", "inside: Linear · Tanh · cube · Linear"]),
                      "the cube last in the critic, or between its layers")
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "in a gradient penalty, `backward(inputs=...)` or",
           autograd_grad_is_a_workaround_for_once_differentiable, multi_feature_inputs(), places,
           fails_on="tanh MLP")


def softplus_backward_is_exactly_sigmoid(value, dtype) -> bool:
    """r27h4 R3, write-a-custom-autograd-function.md (fc9e3cf:244-247): F.softplus has "the
    backward sigma(x)", read as exact in the dtype the page gradchecks in. Above
    threshold=20 it is 1, which float64's sigma(x) is not up to about 36.7."""
    import torch.nn.functional as F

    x = torch.tensor([value], dtype=dtype, requires_grad=True)
    F.softplus(x).sum().backward()
    return bool((x.grad == torch.sigmoid(x.detach().double()).to(dtype)).all())


def test_r27h4_r3_softplus_is_one_above_its_threshold(real_claims):
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "(above its `threshold=20`, `F.softplus` returns",
           softplus_backward_is_exactly_sigmoid,
           labelled(st.floats(20.01, 45.0), "points above softplus's threshold 20, to 45"),
           labelled(st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64]),
                    "float16, bfloat16, float32, float64"), fails_on="torch.float64")


# -- n28b-1: the penalty's backward through the Transformer layers raises at dropout 0 ----

def the_recipe_runs_on_every_listed_layer(kind_first_sizes) -> bool:
    """n28b-1, penalize-the-gradient...md (2e3f21d:204-208): "build `nn.LSTM`, ...,
    `nn.Transformer` and its encoder and decoder layers with `batch_first=True`" and then
    the recipe "with no error", read as readers act on it: the penalty's backward runs.
    Built with dropout=0 (as the check builds them), the Transformer layers take the
    fused CPU attention kernel, whose backward raises at second order."""
    import warnings

    kind, first, batch, steps, seed = kind_first_sizes
    if kind in SEQUENCE_KINDS[:4]:
        return True
    torch.manual_seed(seed)
    small = dict(d_model=3, nhead=1, dim_feedforward=8, dropout=0.0, batch_first=first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        layer = {
            "TransformerEncoderLayer": lambda: torch.nn.TransformerEncoderLayer(**small),
            "TransformerDecoderLayer": lambda: torch.nn.TransformerDecoderLayer(**small),
            "TransformerEncoder": lambda: torch.nn.TransformerEncoder(
                torch.nn.TransformerEncoderLayer(**small), 2, enable_nested_tensor=False),
            "Transformer": lambda: torch.nn.Transformer(**small, num_encoder_layers=1, num_decoder_layers=1),
        }[kind]().double()
    x = torch.randn((batch, steps, 3) if first else (steps, batch, 3), dtype=torch.float64, requires_grad=True)
    out = layer(x, x) if kind in ("TransformerDecoderLayer", "Transformer") else layer(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    try:
        ((g.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
    except RuntimeError:
        return False
    return True


def test_n28b_1_the_penalty_through_a_transformer_layer_raises(real_claims):
    replay(real_claims, "how-to/penalize-the-gradient-with-respect-to-the-inputs",
           "Through the Transformer layers the penalty's backward can raise",
           the_recipe_runs_on_every_listed_layer, sequence_critics(), fails_on="Transformer")


# -- n28f-1/2: under inference_mode views, in-place edits and calls with nothing to do keep the tangent --

N28F_OPS = {"x[0:2]": lambda t: t[0:2], "x.unsqueeze(0)": lambda t: t.unsqueeze(0),
            "x.view(-1)": lambda t: t.view(-1), "x.transpose(0, -1)": lambda t: t.transpose(0, -1),
            "x.mul_(2)": lambda t: t.mul_(2), "x.sin_()": lambda t: t.sin_(),
            "x.double()": lambda t: t.double(), "x.contiguous()": lambda t: t.contiguous(),
            "sin": torch.sin, "2 * x": lambda t: 2 * t, "x.clone()": lambda t: t.clone(),
            "x.float()": lambda t: t.float(), "flip": lambda t: t.flip(0)}
N28F_CHAINS = labelled(st.lists(st.sampled_from(sorted(N28F_OPS)), min_size=1, max_size=3),
                       "chains of views, in-place edits, calls with nothing to do and other operations")


def inference_mode_drops_every_tangent(chain, n, seed) -> bool:
    """n28f-1/2, glossary.md (2e3f21d:2183-2186, 1985-1986): inference_mode "turns
    forward-mode AD off": "an operation run there on a dual made outside returns none",
    and of the intermediates "none does" carry a tangent. Views, in-place edits and calls
    with nothing to do still carry one, seen once the block ends."""
    import torch.autograd.forward_ad as forward_ad

    generator = torch.Generator().manual_seed(seed)
    at = torch.randn(n, dtype=torch.float64, generator=generator)
    u = torch.randn(n, dtype=torch.float64, generator=generator)
    with forward_ad.dual_level():
        current = forward_ad.make_dual(at.clone(), u)
        with torch.inference_mode():
            for name in chain:
                current = N28F_OPS[name](current)
        return forward_ad.unpack_dual(current).tangent is None


def test_n28f_inference_mode_keeps_tangents_of_views(real_claims):
    replay(real_claims, "reference/glossary", "unlike {term}`no_grad`, it breaks `forward_ad`",
           inference_mode_drops_every_tangent,
           N28F_CHAINS, labelled(SIZES, "sizes n of x from 2 to 6"),
           labelled(SEEDS, "seeds of x and of what the check draws with it"), fails_on="x")


# -- n28e: get-a-full-jacobian-or-hessian.md, differentiate-elementwise...md ----------

def eval_mode_normalizes_with_running_statistics(setting, how, mode) -> bool:
    """n28e-1 G, get-a-full-jacobian-or-hessian.md (2e3f21d:1265-1268): "take per-sample
    gradients with the model in `eval()` mode. They are then gradients of ... the network
    normalized with its running statistics", read for BatchNorm without running
    statistics too (built untracked, or after replace_all_batch_norm_modules_): there
    eval() still normalizes with the batch's own statistics, or raises on rows."""
    import copy

    if mode != "eval":
        return True
    model = copy.deepcopy(setting.model)
    torch.func.replace_all_batch_norm_modules_(model)
    try:
        alone = per_sample_gradients(model.eval(), setting.inputs)
    except ValueError:
        return False
    with_running = per_sample_gradients(copy.deepcopy(setting.model).eval(), setting.inputs)
    return all(torch.allclose(alone[n], with_running[n]) for n in alone)


def test_n28e_1_eval_needs_running_statistics(real_claims):
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "`replace_all_batch_norm_modules_`, or BatchNorm built with",
           eval_mode_normalizes_with_running_statistics, rs_one_value(), REPLACED_OR_UNTRACKED, TRAIN_OR_EVAL,
           fails_on="BatchNorm")


def batch_first_keys_the_batch_sum(kind, batch_first, batch, steps, seed, which, layers,
                                    bidirectional) -> bool:
    """n28e-2 I, differentiate-elementwise-functions-at-many-points.md (2e3f21d:518-522):
    "`model(x).sum(0)` when the batch comes first; `.sum(1)` on the `(T, B, ...)` output
    of a module left at `batch_first=False`", read for every output of the module: an
    LSTM's or GRU's h_n is (layers, B, H) whatever batch_first, and .sum(0) at
    batch_first=True sums the layers, not the batch."""
    if kind == "TransformerEncoderLayer" or which != "h_n":
        return True
    torch.manual_seed(seed)
    module = getattr(torch.nn, kind)(4, 3, num_layers=layers, batch_first=batch_first,
                                     bidirectional=bidirectional).double().eval()
    h_n = (lambda b: module(b)[1][0]) if kind == "LSTM" else (lambda b: module(b)[1])
    dim = 0 if batch_first else 1
    seq = torch.randn((batch, steps, 4) if batch_first else (steps, batch, 4), dtype=torch.float64)
    by_sum = torch.func.jacrev(lambda b: h_n(b).sum(dim))(seq)
    for b in range(batch):
        one = seq.select(dim, b).unsqueeze(dim)
        own = torch.func.jacrev(lambda s: h_n(s).sum(1))(one).select(2 + dim, 0)  # (layers, H, ...)
        mine = by_sum.select(by_sum.dim() - 3 + dim, b)
        if mine.shape != own.shape or not torch.allclose(mine, own):
            return False
    return True


def test_n28e_2_h_n_sums_over_dim_1_whatever_batch_first(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           "(`model(x).sum(0)` when the batch comes first;", batch_first_keys_the_batch_sum,
           labelled(st.sampled_from(["GRU", "LSTM", "TransformerEncoderLayer"]), "LSTM, GRU, TransformerEncoderLayer"),
           labelled(st.booleans(), "batch_first=False (the default) and True"),
           labelled(st.integers(2, 4), "batch sizes 2 to 4"), labelled(st.integers(1, 4), "lengths T 1 to 4"),
           SEEDS, labelled(st.sampled_from(("output", "h_n")), "the output, or an LSTM's or GRU's h_n"),
           labelled(st.integers(1, 2), "1 or 2 layers"),
           labelled(st.booleans(), "one direction, or bidirectional=True"), fails_on="True")


WHERE_STEPS = {"-u": lambda u: -u, "u**2": lambda u: u**2, "u*u": lambda u: u * u,
               "1000*u": lambda u: 1000 * u, "1+u": lambda u: 1 + u, "u.sqrt()": torch.sqrt,
               "u.log()": torch.log, "1 / u": lambda u: 1 / u, "u.exp()": torch.exp,
    "u.relu()": torch.relu, "u.clamp(min=0)": lambda u: u.clamp(min=0),
    "where(u > 0, u, 0)": lambda u: torch.where(u > 0, u, 0.0)}
WHERE_CUTTING = ("u.relu()", "u.clamp(min=0)", "where(u > 0, u, 0)")  # pass no gradient where u < 0
WHERE_SIDES = {"t**2": ["u**2"], "t.sqrt()": ["u.sqrt()"], "t.log()": ["u.log()"],
               "1 / t": ["1 / u"], "t.exp()": ["u.exp()"], "(-t).exp()": ["-u", "u.exp()"],
               "(t*t).exp()": ["u*u", "u.exp()"], "1000*t**2": ["u**2", "1000*u"],
               "(1+(-t).exp()).log()": ["-u", "u.exp()", "1+u", "u.log()"],
    "t.relu().sqrt()": ["u.relu()", "u.sqrt()"], "t.clamp(min=0).log()": ["u.clamp(min=0)", "u.log()"],
    "where(t > 0, t, 0).sqrt()": ["where(u > 0, u, 0)", "u.sqrt()"]}
WHERE_FAMILIES = (
    labelled(st.sampled_from(sorted(WHERE_SIDES)),
             "sides t**2, sqrt, log, 1/t, exp(t), exp(-t), exp(t*t), 1000*t**2, log(1+exp(-t)), "
                        "relu then sqrt, clamp(min=0) then log, where(t > 0, t, 0) then sqrt"),
    labelled(st.sampled_from([-100.0, -3.0, -1.0, 0.0]),
             "points from -100, -3, -1 or 0 to 3, and -89, -88.73, -88.72, -40, -9.4, -0.001, 0.001"),
    labelled(st.sampled_from([torch.float64, torch.float32, torch.float16, torch.bfloat16]),
             "float64, float32, float16, bfloat16"))


def where_side(side):
    def fn(t):
        for step in WHERE_SIDES[side]:
            t = WHERE_STEPS[step](t)
        return t
    return fn


def where_nan_against(side, start, dtype, derivative) -> bool:
    from torch.func import grad, vmap

    fn = where_side(side)
    near = torch.tensor([-89.0, -88.73, -88.72, -40.0, -9.4, -1e-3, 1e-3])
    pts = torch.cat([torch.linspace(start, 3.0, 9), near]).to(dtype)
    by_where = vmap(grad(lambda t: torch.where(t > 0, fn(t), torch.zeros_like(t))))(pts)
    unpicked = pts <= 0
    expect = unpicked & ~torch.isfinite(derivative(fn, pts))
    return torch.equal(torch.isnan(by_where)[unpicked], expect[unpicked])


def where_gives_nan_only_where_the_derivative_is_infinite(side, start, dtype) -> bool:
    """n28e-3 C, differentiate-elementwise-functions-at-many-points.md (2e3f21d:1151-1155):
    "a side whose derivative is not finite where it is not picked ... puts nan in the
    gradient there", read with the derivative of mathematics (computed in float64): a
    finite derivative that overflows the dtype (exp(-t) at t <= -89 in float32, 1 / t
    near 0 in float16) puts nan there too."""
    from torch.func import grad, vmap

    return where_nan_against(side, start, dtype, lambda fn, pts: vmap(grad(fn))(pts.double()))


def test_n28e_3_an_overflowing_derivative_puts_nan_too(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points", "Where a side is\nnot picked",
           where_gives_nan_only_where_the_derivative_is_infinite, *WHERE_FAMILIES, fails_on="torch.")


# -- n28c-1: write-a-custom-autograd-function.md, a map or layer before the Function --

def the_function_alone_raises_element_0(name, values, around, other_terms) -> bool:
    """n28c-1, write-a-custom-autograd-function.md (2e3f21d:547-551): a backward reading a
    constant misses its term silently only beside a term nonlinear in x; "with the
    Function alone, or beside terms linear in x", a second autograd.grad raises "element 0
    of tensors does not require grad". A reader's "alone" includes sin(x) or a Linear
    layer before it: there it is silently wrong, or raises another error."""
    from custom_backwards import CUSTOM_BACKWARDS
    from reader_settings import LOSS_TERMS

    function, differentiable = CUSTOM_BACKWARDS[name]
    if differentiable or name.endswith("@once_differentiable"):
        return True
    if any(term in LOSS_TERMS for term in other_terms.terms) or around.after != "sum":
        return True  # the old sentence said nothing of a map after the Function
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(around.loss(function.apply, at) + other_terms(at), at, create_graph=True)
    try:
        torch.autograd.grad(slope.sum(), at)
    except RuntimeError as error:
        return str(error).startswith("element 0 of tensors does not require grad")
    return False


def test_n28c_1_a_map_before_the_function_is_not_the_function_alone(real_claims):
    from custom_backwards import around_the_function, backward_points, custom_backwards

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "or raise an error that may not name the cause",
           the_function_alone_raises_element_0, custom_backwards(), backward_points(),
           around_the_function(), losses_with_linear_terms(), fails_on="-> Function -> sum")


# -- n29d F1/F2: differentiate-elementwise-functions-at-many-points.md, where's nan --

def where_gives_nan_where_the_sides_derivative_overflows(side, start, dtype) -> bool:
    """n29d F1 E, differentiate-elementwise-functions-at-many-points.md (9eb16e6:1161-1165):
    "a side whose derivative is not finite, or overflows the dtype, where it is not
    picked ... puts nan in the gradient there", with the side's whole derivative computed
    in the dtype (the old check's expectation). where sends the unpicked side a zero that
    turns nan only at an operation whose own derivative is not finite: (t*t).exp() at
    -9.4 in float32 and bfloat16, 1000*t**2 at -40 in float16 give 0."""
    from torch.func import grad, vmap

    return where_nan_against(side, start, dtype, lambda fn, pts: vmap(grad(fn))(pts))


def test_n29d_f1_an_overflowing_whole_derivative_need_not_put_nan(real_claims):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points", "Where a side is\nnot picked",
           where_gives_nan_where_the_sides_derivative_overflows, *WHERE_FAMILIES, fails_on="t*t")


# -- n29h-1, n29h-2: write-a-custom-autograd-function.md, once_differentiable, backward() --

def no_silent_loss_with_once_differentiable_or_a_trained_layer(name, values, around, other_terms) -> bool:
    """n29h-1/-2, write-a-custom-autograd-function.md (9eb16e6:572-581): "Unless `backward`
    is marked `@once_differentiable`, it does so silently when ...", and with a trained
    Linear and nothing else nonlinear "the second pass fails" (`backward()` leaving x.grad
    None). Read: a @once_differentiable Function never loses its terms silently, and with
    a Linear the reader gets no number to train on. Here a second autograd.grad or
    backward() that raises nothing fails the old sentence for either setting."""
    from custom_backwards import CUSTOM_BACKWARDS

    function, differentiable = CUSTOM_BACKWARDS[name]
    once = name.endswith("@once_differentiable")
    if differentiable or not (once or around.trained_layer):
        return True
    leaf = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(around.loss(function.apply, leaf) + other_terms(leaf), leaf,
                                   create_graph=True)
    try:
        slope.sum().backward()
    except RuntimeError:
        return True
    return not once and all(p.grad is None for layer in around.layers for p in layer.parameters())


def test_n29h_1_2_the_silent_loss_is_not_stopped_by_once_differentiable(real_claims):
    from custom_backwards import around_the_function, backward_points, custom_backwards

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Depending on the rest of the graph",
           no_silent_loss_with_once_differentiable_or_a_trained_layer, custom_backwards(),
           backward_points(vanishing=True), around_the_function(), losses_with_linear_terms(),
           fails_on="-> Function")


# -- r32f-1: stop-gradients.md, a NumPy write into a detached tensor is not counted --------

def a_numpy_write_into_a_saved_tensor_raises(case) -> bool:
    """r32f-1, stop-gradients.md (2c2b508:51, 226-228): a write into `t.detach()`
    "raises in `backward` if the graph saved `t`", and a write through `t.data` "is the
    exception". A NumPy write into `t.detach().cpu().numpy()` (`arr *= 255`, as when
    logging or plotting) changes the input sin saved, uncounted: backward runs on it."""
    out = torch.sin(case.tensor)
    arr = case.tensor.detach().cpu().numpy()
    arr *= 255
    return backward_raises_the_version_error(out)


@pytest.mark.parametrize("quote", ["| `t.detach()` | one tensor |", "A write through `t.data`"])
def test_r32f_1_a_numpy_write_into_a_detached_tensor_goes_unnoticed(real_claims, quote):
    replay(real_claims, "how-to/stop-gradients", quote, a_numpy_write_into_a_saved_tensor_raises,
           non_leaf_inputs(), fails_on="randn(3, 2")


# -- r32f-2: write-a-custom-autograd-function.md, gradgradcheck within its tolerance -------

def gradgradcheck_fails_where_the_missed_terms_are_not_small_next_to_the_kept(name, values, scale,
                                                                             seed) -> bool:
    """r32f-2, write-a-custom-autograd-function.md (2c2b508:585-587): gradgradcheck "fails
    on such a backward where the terms it misses are not small next to the second
    derivative it keeps". The backwards here that miss terms keep none of their second
    derivative, so the old sentence has them fail; scaled by 1e-5 they pass (atol=1e-5).
    Where the terms vanish as written (x = 0, say) it said nothing."""
    from custom_backwards import CUSTOM_BACKWARDS, gradgradcheck_against_what_it_misses

    function, differentiable = CUSTOM_BACKWARDS[name]
    if differentiable or gradgradcheck_against_what_it_misses(function, values, seed)[1] < 0.5:
        return True
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return not torch.autograd.gradgradcheck(lambda t: scale * function.apply(t), (at,), raise_exception=False)


GRADGRADCHECK_SCALES = labelled(st.sampled_from([1.0, 1e-5]), "the Function as written, or scaled by 1e-5")


def test_r32f_2_gradgradcheck_passes_a_small_function_missing_its_second_derivative(real_claims):
    from custom_backwards import backward_points, custom_backwards, grad_outputs

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "To test a backward, run `gradgradcheck`",
           gradgradcheck_fails_where_the_missed_terms_are_not_small_next_to_the_kept,
           custom_backwards(), backward_points(vanishing=True), GRADGRADCHECK_SCALES, grad_outputs(),
           fails_on="1e-05")

# -- r32e: handle-operations...md, when the J0 second derivative raises, and J1' at 0 ------

def j0_second_outcome(other_terms, values, follow_up, before, second, how) -> str:
    """What a second derivative through the page's BesselJ0 does in one setting of its
    J0_SETTINGS: "runs", or the first sentence of the error it raises."""
    from custom_backwards import CUSTOM_BACKWARDS

    j0_function, _ = CUSTOM_BACKWARDS["J0, backward calls bessel_j1"]
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(len(values))
    into = torch.nn.Linear(len(values), len(values)).double() if before == "Linear(x)" else J0_BEFORE[before]
    (slope,) = torch.autograd.grad(J0_FOLLOW_UPS[follow_up][0](j0_function.apply(into(at))) + other_terms(at),
                                   at, create_graph=True)
    penalty = ((slope - 1) ** 2).sum()
    second_term = {"slope.sum()": slope.sum(), "penalty": penalty, "penalty + x.sum()": penalty + at.sum(),
                   "penalty + x.tanh().sum()": penalty + at.tanh().sum(),
                   "penalty + w ** 2": penalty + torch.tensor(2.0, requires_grad=True) ** 2}[second]
    try:
        if how == J0_PASSES[0]:
            torch.autograd.grad(second_term, at)
        else:
            second_term.backward()
    except RuntimeError as error:
        return str(error).split(".")[0]
    return "runs"


def j0_raises_as_the_enumeration_said(other_terms, values, follow_up, before="x", second="slope.sum()",
                                      how=J0_PASSES[0]) -> bool:
    """r32e-1, -2, handle-operations...md (2c2b508:954-961): "It raises "element 0 ..." when
    the first derivative (or a penalty on it) is differentiated on its own, the Function's
    input is `x` or `2 * x`, only [linear operations] follow it, and any other term is
    [linear in x]. Added to a recorded term in `x`, even `x.sum()`, such a penalty runs,
    wrong. When that input is a `Linear` layer's output instead, the same setting raises
    "appears to not have been used in the graph" for the one with respect to `x`". Its check
    took the second derivative with autograd.grad only; a reader's penalty.backward() after
    a Linear layer runs, x.grad None. (A term without x, w ** 2, the sentence left open.)"""
    from reader_settings import LINEAR_LOSS_TERMS

    if second == "penalty + w ** 2":
        return True
    linear = (before in ("x", "2 * x", "Linear(x)") and J0_FOLLOW_UPS[follow_up][1]
              and all(term in LINEAR_LOSS_TERMS for term in other_terms.terms))
    said = "runs"
    if linear and second in ("slope.sum()", "penalty"):
        said = ("The differentiated Tensor at index 0 appears to not have been used in the graph"
                if before == "Linear(x)" else "element 0 of tensors does not require grad and does not have a grad_fn")
    return j0_second_outcome(other_terms, values, follow_up, before, second, how) == said


def test_r32e_1_2_the_enumerated_errors_held_for_autograd_grad_only(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_raises_as_the_enumeration_said, *j0_settings(), fails_on="second.backward()")


def j0_second_derivative_raises_nothing(other_terms, values, follow_up, before="x", second="slope.sum()",
                                        how=J0_PASSES[0]) -> bool:
    """r32e-5, handle-operations...md (2c2b508:950-951): "A second derivative through it
    (...) is wrong without an error", its check passing on settings that raise."""
    return j0_second_outcome(other_terms, values, follow_up, before, second, how) == "runs"


def test_r32e_5_the_second_derivative_can_raise(real_claims):
    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "A second derivative through it (with `create_graph=True`",
           j0_second_derivative_raises_nothing, *j0_settings(), fails_on="penalty")


def literal_j1_gives_the_second_derivative(values) -> bool:
    """r32e-3, -4, handle-operations...md (2c2b508:965-967): "write $J_1$ as a custom
    Function too, with $J_1' = J_0 - J_1/x$ (whose limit at $x = 0$ is $1/2$), and call it
    in this backward", written as it stands: 0/0, NaN, at x = 0. Its check drew [0.25, 3]."""
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return torch.autograd.gradgradcheck(TrueJ0.apply, (at,), raise_exception=False)


def test_r32e_3_4_j1_prime_needs_its_limit_at_0(real_claims):
    from custom_backwards import points_through_0

    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative",
           "For a second derivative, make the backward differentiable", literal_j1_gives_the_second_derivative,
           points_through_0(), fails_on="0.0")

# -- r32h-1/2: error-messages.md, gradgradcheck and the x sin x backward ---------------

def gradgradcheck_tells_whether_the_backward_is_recorded(name, values, seed) -> bool:
    """r32h-1/2, error-messages.md (2c2b508:749): "test the Function with gradgradcheck
    on float64 inputs that require grad", read: it passes exactly for a recorded
    backward. Replayed on the backwards of custom_backwards (the page's own others
    pass); at 0 or where J1 turns a backward that misses terms passes."""
    from custom_backwards import CUSTOM_BACKWARDS

    if name not in CUSTOM_BACKWARDS:
        return True
    function, recorded = CUSTOM_BACKWARDS[name]
    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return torch.autograd.gradgradcheck(function.apply, (at,), raise_exception=False) == recorded


def test_r32h_1_2_gradgradcheck_passes_where_the_missed_terms_vanish(real_claims):
    from custom_backwards import CUSTOM_BACKWARDS, backward_points, grad_outputs

    names = sorted([*CUSTOM_BACKWARDS, *ERRORS_PAGE_BACKWARDS_HERE])
    replay(real_claims, "reference/error-messages", "{py:func}`torch.autograd.gradgradcheck` on the Function",
           gradgradcheck_tells_whether_the_backward_is_recorded,
           labelled(st.sampled_from(names), "every custom Function above, recorded or not"),
           backward_points(vanishing=True), grad_outputs(), fails_on="[0.0]")


def x_sin_x_mixed_is_wrong(values, _before, _after) -> bool:
    """r32h-2, error-messages.md (2c2b508:753-755): a backward that "computes from its
    input with recorded operations and also reads such an intermediate raises nothing,
    yet its second derivative is wrong" (checked on x sin x, straight into a sum). At
    x = pi/2 the cos x it misses is 0: right."""
    from custom_backwards import XSinXMixed

    at = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(XSinXMixed.apply(at).sum(), at, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), at)
    x = at.detach()
    return not torch.allclose(second, 2 * x.cos() - x * x.sin(), atol=1e-5)


def test_r32h_2_the_mixed_backward_is_right_where_cos_vanishes(real_claims):
    from custom_backwards import backward_points

    replay(real_claims, "reference/error-messages", "one that computes from its\ninput with recorded operations",
           x_sin_x_mixed_is_wrong, backward_points(vanishing=True), st.sampled_from(ERRORS_PAGE_BEFORE),
           st.sampled_from(ERRORS_PAGE_AFTER), fails_on="[1.5707963267948966]")


# -- r32h-3/4: error-messages.md, torch.compiler.disable with linear work around the call --

LINEAR_AROUND_THE_CALL = ("2 * E(t)", "E(t) - E(t) / 3", "E(2 * t)", "E(t / 255)", "E(Linear(t))", "Linear(E(t))")


def disable_inside_fixes_linear_work_around_the_call(g, seed, around) -> bool:
    """r32h-3/4, error-messages.md (2c2b508:2857-2861): disable on the inner function
    works "provided the rest of the compiled function is linear (a scale, a sum)".
    A scale or a Linear layer before the call raises."""
    return around not in LINEAR_AROUND_THE_CALL or disable_inside_fixes_whatever_is_around_it(g, seed, around)


def test_r32h_3_4_linear_work_before_the_call_still_raises(real_claims):
    from compiled_double_backward import around_the_call, curved_sums, point_seeds

    replay(real_claims, "reference/error-messages", "**Fix:** take the derivatives that are differentiated",
           disable_inside_fixes_linear_work_around_the_call, curved_sums(), point_seeds(),
           around_the_call(), fails_on="'E(t / 255)'")


# -- r32h-5: error-messages.md, one grad per order needs create_graph on all but the last --

def one_grad_per_order_without_create_graph(g, seed, order, _dropped) -> bool:
    """r32h-5, error-messages.md (2c2b508:1072): "For derivatives of any order, ask
    torch.autograd.grad for each one", done as written: the second call raises
    "element 0 of tensors does not require grad"."""
    return every_call_returns(g, seed, order, lambda k: False)


def every_call_returns(g, seed, order, create_graph) -> bool:
    """Whether one torch.autograd.grad per order, call k with create_graph(k), returns
    every derivative of g up to order (at g's point from seed)."""
    at = g.point(seed).requires_grad_(True)
    current = g(at)
    try:
        for k in range(order):
            (current,) = torch.autograd.grad(current.sum(), at, create_graph=create_graph(k))
    except RuntimeError:
        return False
    return True


def one_grad_per_order_families():
    """What error-messages.md's check of "For second and higher derivatives" draws."""
    from compiled_double_backward import curved_sums, point_seeds

    return (curved_sums(turning_constant=True), point_seeds(), labelled(st.integers(2, 4), "orders 2 to 4"),
            labelled(st.integers(0, 2), "the call before the last without it (0 to 2, modulo order - 1)"))


def test_r32h_5_one_grad_per_order_needs_create_graph(real_claims):
    replay(real_claims, "reference/error-messages", "For second and higher derivatives",
           one_grad_per_order_without_create_graph, *one_grad_per_order_families(), fails_on="summed")

# -- r32a-2: get-gradients-of-intermediate-tensors.md, a .to() that keeps dtype and device --

def a_move_copies_when_it_changes_the_dtype_or_device(case) -> bool:
    """r32a-2, get-gradients-of-intermediate-tensors.md (2c2b508:49-50 and 1431-1432):
    ".to() ... after requires_grad=True, when it changed the device or dtype: you hold a
    non-leaf copy", read as: a move that keeps both returns the leaf. x.to(memory_format=
    channels_last) and x.to('cpu', copy=True) keep both and return a non-leaf copy."""
    changed = (case.tensor.dtype, case.tensor.device) != (case.leaf.dtype, case.leaf.device)
    return case.tensor.is_leaf != changed


@pytest.mark.parametrize("quote", ["**`.to()`, `.cuda()` or `.double()` after `requires_grad=True`**",
                                   "leaves you a non-leaf when it returns a new tensor"])
def test_r32a_2_a_move_in_dtype_and_device_can_still_copy(real_claims, quote):
    from reader_settings import moved_leaves

    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors", quote,
           a_move_copies_when_it_changes_the_dtype_or_device, moved_leaves(formats=True),
           fails_on={"**`.to()`, `.cuda()` or `.double()` after `requires_grad=True`**": "x.to('cpu', copy=True)",
                     "leaves you a non-leaf when it returns a new tensor": "memory_format=channels_last"}[quote])

# -- r32c-1/2, r32c-3/4: debug-nan-and-wrong-gradients.md, differentiate-a-network-output... --

def outside_autocast_runs_the_operation_in_float32(dtype, later=None) -> bool:
    """r32c-1/2, debug-nan-and-wrong-gradients.md (2c2b508:849): "that operation in float32
    (outside `autocast`)", read on the activation a reader has: the overflowing Linear
    (weights 350), run under autocast(enabled=False) on the float16 activation of 100s an
    earlier autocast operation made, gives a finite float32 output (it raises: the
    activation is still float16). Read on the Linear alone, whatever the check draws after it."""
    if dtype != torch.float16:
        return True  # no overflow to fix
    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.fill_(350.0)
    with torch.autocast("cpu", dtype=dtype):
        h = torch.nn.functional.linear(torch.full((1, 2), 100.0), torch.eye(2))
        with torch.autocast("cpu", enabled=False):
            try:
                out = layer(h)
            except RuntimeError:
                return False
    return out.dtype == torch.float32 and bool(out.isfinite().all())


def test_r32c_1_outside_autocast_leaves_the_activation_float16(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "run that operation, and each later one",
           outside_autocast_runs_the_operation_in_float32, autocast_dtypes(), later_layers(),
           fails_on="torch.float16")


def that_operation_alone_outside_autocast_fixes_the_overflow(dtype, later) -> bool:
    """s33b-1, debug-nan-and-wrong-gradients.md (c2af9da:922): "run that operation under
    `torch.autocast(device_type, enabled=False)` on inputs cast with `.float()`", read
    in a model where layers follow it: the overflowing Linear (weights 350) alone outside
    autocast, on the float16 activation of 100s, and the layers after it as written,
    give a finite loss. A later Linear under float16 autocast casts 70000 back: inf."""
    with torch.autocast("cpu", dtype=dtype):
        h = torch.nn.functional.linear(torch.full((1, 2), 100.0), torch.eye(2))
        with torch.autocast("cpu", enabled=False):
            out = torch.nn.functional.linear(h.float(), torch.full((2, 2), 350.0))
        for operation in LATER_LAYERS[later]():
            out = operation(out)
    return bool(out.float().mean().isfinite())


def test_s33b_1_a_later_linear_under_autocast_overflows_again(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "run that operation, and each later one",
           that_operation_alone_outside_autocast_fixes_the_overflow, autocast_dtypes(), later_layers(),
           fails_on="torch.float16, '`* 2`, then a Linear'")


# The page's family of SGD learning rates for the GradScaler check, by its name.
LEARNING_RATES = labelled(st.sampled_from([1e-2, 1e-1, 1e-6]), "SGD learning rates 1e-2, 1e-1, 1e-6")


def the_loss_stays_non_finite_at_every_step(dtype, later, loss, lr) -> bool:
    """s34a-1, debug-nan-and-wrong-gradients.md (6f416dc:937): "`GradScaler` does not fix
    it: the loss stays `inf` or `nan` at every step", read over eight SGD steps under a
    GradScaler on the float16 overflow (100s times weights of 350). A loss linear in the
    overflowed output has finite gradients: the scaler takes steps, and at lr 1e-2 SGD
    brings the output back under 65504."""
    if dtype != torch.float16:
        return True
    nn = torch.nn
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    with torch.no_grad():
        for linear, weight in zip(model, (100 * torch.eye(2), torch.full((2, 2), 350.0))):
            linear.weight.copy_(weight)
            linear.bias.zero_()
    later_ops = LATER_LAYERS[later]()
    params = [*model.parameters(), *(p for op in later_ops if isinstance(op, nn.Module) for p in op.parameters())]
    sgd, scaler, values = torch.optim.SGD(params, lr=lr), torch.amp.GradScaler("cpu", init_scale=1024.0), []
    for _ in range(8):
        sgd.zero_grad()
        with torch.autocast("cpu", dtype=dtype):
            y = model(torch.ones(1, 2))
            for op in later_ops:
                y = op(y)
        values.append(loss(y.float()))
        scaler.scale(values[-1]).backward()
        scaler.step(sgd)
        scaler.update()
    return not any(bool(value.isfinite()) for value in values)


def test_s34a_1_a_loss_linear_in_the_overflow_is_finite_after_a_few_steps(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "`GradScaler` does not fix it",
           the_loss_stays_non_finite_at_every_step, autocast_dtypes(), later_layers(), losses_with_linear_terms(),
           LEARNING_RATES, fails_on="torch.float16, 'the loss', 3 * x.mean(), 0.01")


def the_scaler_off_shows_the_same_gradients(model_name, loss_name, dtype, features, seed) -> bool:
    """r60g-1 M, debug-nan-and-wrong-gradients.md (f68f664:1008-1011): "hooks, anomaly mode
    and `clip_grad_norm_(..., error_if_nonfinite=True)` can then report an `inf` or `nan`
    that is no bug, so debug with `GradScaler(enabled=False)`", read where it stands, in
    the section that prints each parameter's gradient norm: on step 0, the norms with the
    scaler off are those the default scaler gives after unscale_ (where it took the step).
    Without a loss scale, small gradients round to 0 in float16: a small loss reads as
    vanishing gradients."""
    norms = {}
    for enabled in (True, False):
        torch.manual_seed(seed)
        model, inputs, targets = AMP_MODELS[model_name](features), torch.randn(16, features), torch.randn(16, 3)
        optimizer, scaler = torch.optim.SGD(model.parameters(), lr=0.0), torch.amp.GradScaler("cpu", enabled=enabled)
        with torch.autocast("cpu", dtype=dtype):
            out = model(inputs)
        scaler.scale(AMP_LOSSES[loss_name](out.float(), targets)).backward()
        scaler.unscale_(optimizer)
        norms[enabled] = torch.stack([p.grad.norm() for p in model.parameters()])
    if not bool(norms[True].isfinite().all()):  # a step the scaler skips: nothing to compare
        return True
    return bool(norms[False].isfinite().all()) and torch.allclose(norms[False], norms[True], rtol=0.05)


def test_r60g_1_debugging_with_the_scaler_off_hides_small_float16_gradients(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "hooks, anomaly mode and",
           the_scaler_off_shows_the_same_gradients, amp_models(), amp_losses(), autocast_dtypes(),
           labelled(st.integers(1, 4), "input features, 1 to 4"), labelled(SEEDS, "seeds of the weights and batch"),
           fails_on="'1e-6 * F.mse_loss', torch.float16")

def zeros_when_u_x_does_not_require_grad(setting, first_grad, custom=None) -> bool:
    """r32c-3/4, differentiate-a-network-output-with-respect-to-its-input.md (2c2b508:754):
    "Test `u_x.requires_grad` and use zeros when it is `False`", whatever the first
    grad: a u_x that does not require grad comes with a zero Hessian. A first grad
    without create_graph=True gives a Tanh MLP's u_x, which does not require grad (read
    on the MLP, whatever custom Function the check draws beside it)."""
    from torch.func import hessian, vmap

    x = setting.inputs.detach().clone().requires_grad_()
    u = setting.model(x)
    (u_x,) = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=first_grad == "create_graph=True")
    hessians = vmap(hessian(lambda row: setting.model(row[None]).sum()))(x.detach())
    return u_x.requires_grad or bool((hessians == 0).all())


# The page's family of first grads, by its name.
FIRST_GRADS = labelled(st.sampled_from(["create_graph=True", "create_graph forgotten"]),
                       "a first grad with create_graph=True, or without it")


def test_r32c_3_requires_grad_is_false_too_when_create_graph_was_forgotten(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "If the first `grad` had `create_graph=True`", zeros_when_u_x_does_not_require_grad,
           multi_feature_inputs(), FIRST_GRADS, custom_backwards(),
           fails_on="create_graph forgotten")


def zeros_when_requires_grad_is_false_after_create_graph(setting, first_grad, custom) -> bool:
    """s33b-6, differentiate-a-network-output-with-respect-to-its-input.md (c2af9da:797):
    "If the first `grad` had `create_graph=True`, test `u_x.requires_grad` and use zeros
    when it is `False`", read on the drawn custom Function applied to x: a u_x that does
    not require grad after create_graph=True comes with u_xx = 0. A backward that leaves
    autograd (NumPy, a detach, a constant saved in forward) gives one that does not
    require grad, and u_xx (by differences of u_x) is not 0."""
    function = CUSTOM_BACKWARDS[custom][0]
    x = setting.inputs.detach().clone().requires_grad_()
    u = function.apply(x).sum(-1)
    (u_x,) = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=first_grad == "create_graph=True")
    if first_grad != "create_graph=True" or u_x.requires_grad:
        return True

    def u_x_at(at):
        with torch.enable_grad():
            at = at.clone().requires_grad_()
            return torch.autograd.grad(function.apply(at).sum(), at)[0]
    return bool(finite_difference_jacobian(u_x_at, x).abs().max() < 1e-6)


def test_s33b_6_a_backward_autograd_cannot_differentiate_leaves_u_x_without_grad(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "If the first `grad` had `create_graph=True`", zeros_when_requires_grad_is_false_after_create_graph,
           multi_feature_inputs(), FIRST_GRADS, custom_backwards(),
           fails_on="'create_graph=True', 'J0, backward calls bessel_j1'")


def vmap_hessian_of_the_pages_network_returns_zeros(setting) -> bool:
    """s34 audit #5, differentiate-a-network-output-with-respect-to-its-input.md
    (c2af9da:797 and 838-839): "or use `vmap(hessian(...))`, which returns the zeros
    itself", and "`vmap(hessian(net))` gives the zeros to compare with", with `net`
    the page's Tanh MLP: its u_xx is not 0."""
    from torch.func import hessian, vmap

    model = setting.model
    return bool((vmap(hessian(lambda row: model(row[None]).sum()))(setting.inputs.detach()) == 0).all())


def test_s34_5_vmap_hessian_returns_zeros_for_a_network_linear_in_x_only(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "or take $u_{xx}$ from `vmap(hessian(...))`", vmap_hessian_of_the_pages_network_returns_zeros,
           multi_feature_inputs(), fails_on="tanh MLP")

def vmap_hessian_is_a_way_out_for_that_function(setting, custom, jvp_factor) -> bool:
    """s34a-3, differentiate-a-network-output-with-respect-to-its-input.md (6f416dc:862-866):
    "(a custom `autograd.Function` whose `backward` is not itself differentiable can leave
    it `False` where $u_{xx}$ is not 0), or take $u_{xx}$ from `vmap(hessian(...))`", read
    as a way out for that Function: vmap(hessian) of it on x gives u_xx (central
    differences of u_x). It raises: the Function has no vmap support."""
    from torch.func import hessian, vmap

    function, differentiable = CUSTOM_BACKWARDS[custom]
    if differentiable:
        return True
    x, h = setting.inputs.detach(), 1e-6

    def u_x_at(at):
        with torch.enable_grad():
            at = at.clone().requires_grad_()
            return torch.autograd.grad(function.apply(at).sum(), at)[0]
    try:
        H = vmap(hessian(lambda row: function.apply(row).sum()))(x)
    except RuntimeError:
        return False
    return torch.allclose(H.diagonal(dim1=-2, dim2=-1), (u_x_at(x + h) - u_x_at(x - h)) / (2 * h), atol=1e-5)


def test_s34a_3_vmap_hessian_raises_on_a_custom_function(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, vmap_hessian_is_a_way_out_for_that_function,
           multi_feature_inputs(), custom_backwards(), jvp_factors(), fails_on="'J0, backward calls bessel_j1'")


VMAP_HESSIAN_OF_A_FUNCTION = "`vmap(hessian(...))` through a custom\nFunction needs `forward` and `setup_context`"


def vmap_hessian_runs_once_the_function_supports_vmap(setting, custom, jvp_factor) -> bool:
    """s35a-2, differentiate-a-network-output-with-respect-to-its-input.md (cb4a0c8:903-906):
    "`vmap(hessian(...))` raises, or, once the Function supports `vmap`, can be wrong
    too", read as: with `generate_vmap_rule = True`, it runs. It still raises "You must
    implement the jvp function": hessian is forward mode over reverse mode."""
    function = with_vmap_support(CUSTOM_BACKWARDS[custom][0], None)
    return vmap_hessian_runs(lambda row: function.apply(row).sum(), setting.inputs.detach())


def vmap_hessian_runs(loss, inputs) -> bool:
    from torch.func import hessian, vmap

    try:
        vmap(hessian(loss))(inputs)
    except (RuntimeError, NotImplementedError):
        return False
    return True


def test_s35a_2_vmap_hessian_needs_a_jvp_as_well_as_vmap_support(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, vmap_hessian_runs_once_the_function_supports_vmap,
           multi_feature_inputs(), custom_backwards(), jvp_factors(), fails_on="tanh MLP")


def gradgradcheck_passes_only_where_vmap_hessian_is_right(setting, custom, jvp_factor) -> bool:
    """s35a-1, differentiate-a-network-output-with-respect-to-its-input.md (cb4a0c8:903-906):
    "once the Function supports `vmap`, [vmap(hessian)] can be wrong too: test the
    Function with gradgradcheck": a default gradgradcheck passes, so vmap(hessian) is
    right. It checks reverse over reverse only: a sin or sigmoid with a wrong `jvp` passes
    it, and vmap(hessian) of its tanh differs from the one with the right `jvp`."""
    from custom_backwards import passes_gradgradcheck
    from torch.func import hessian, vmap

    function, _ = CUSTOM_BACKWARDS[custom]
    x = setting.inputs.detach()
    if not passes_gradgradcheck(custom, x.flatten().tolist()):
        return True
    drawn, right = (with_vmap_support(function, factor) for factor in (jvp_factor, 1.0))
    return torch.allclose(*(vmap(hessian(lambda row, f=f: f.apply(row).tanh().sum()))(x) for f in (drawn, right)))


def test_s35a_1_a_wrong_jvp_passes_a_default_gradgradcheck(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, gradgradcheck_passes_only_where_vmap_hessian_is_right,
           multi_feature_inputs(), custom_backwards(), jvp_factors(),
           fails_on="backward from the saved")


def the_forward_mode_checks_test_any_vmap_support(setting, custom, jvp_factor) -> bool:
    """s35c-1, differentiate-a-network-output-with-respect-to-its-input.md (5a509ab:906-910):
    "needs a `jvp` and vmap support (such as `generate_vmap_rule = True`), and a wrong
    `jvp` or a `backward` that is not differentiable can make it wrong: test the Function
    with `gradcheck(..., check_forward_ad=True)` and `gradgradcheck(...,
    check_fwd_over_rev=True)`", read as: a Function that passes both is right under
    vmap(hessian), whatever its vmap support. Neither runs an own `vmap` staticmethod:
    one that flips the batch passes both, and vmap(hessian) differs from hessian on
    each row."""
    from custom_backwards import passes_forward_mode_checks
    from torch.func import hessian, vmap

    function = with_vmap_support(CUSTOM_BACKWARDS[custom][0], jvp_factor, "own vmap rule, batch flipped")
    x = setting.inputs.detach()
    if not passes_forward_mode_checks(function, x.flatten().tolist()):
        return True
    row_hessian = hessian(lambda row: function.apply(row).tanh().sum())
    return torch.allclose(vmap(row_hessian)(x), torch.stack([row_hessian(row) for row in x]))


def test_s35c_1_an_own_vmap_rule_passes_the_forward_mode_checks(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, the_forward_mode_checks_test_any_vmap_support,
           multi_feature_inputs(), custom_backwards(), jvp_factors(), fails_on="backward from the saved")


def every_custom_function_needs_a_jvp(setting, custom, jvp_factor) -> bool:
    """s35c-3, differentiate-a-network-output-with-respect-to-its-input.md (5a509ab:906-907):
    "`vmap(hessian(...))` of a custom Function needs a `jvp` and vmap support", read
    generally: with `generate_vmap_rule = True` alone it raises. On a weight that `x`
    does not pass through, it runs."""
    function = with_vmap_support(CUSTOM_BACKWARDS[custom][0], None)
    weight = torch.linspace(0.5, 1.5, setting.inputs.shape[1], dtype=setting.inputs.dtype)
    return not vmap_hessian_runs(lambda row: (row * function.apply(weight)).tanh().sum(), setting.inputs.detach())


def test_s35c_3_a_function_x_does_not_pass_through_needs_no_jvp(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, every_custom_function_needs_a_jvp,
           multi_feature_inputs(), custom_backwards(), jvp_factors(), fails_on="tanh MLP")


def a_function_x_does_not_pass_through_needs_nothing(setting, custom, jvp_factor) -> bool:
    """s35d-3, differentiate-a-network-output-with-respect-to-its-input.md (5147d29:931-933):
    "`vmap(hessian(...))` of a custom Function that `x` passes through needs a `jvp` and
    vmap support", read as: one applied to a weight, as it is, needs neither. It raises
    "does not have vmap support"."""
    function = CUSTOM_BACKWARDS[custom][0]
    weight = torch.linspace(0.5, 1.5, setting.inputs.shape[1], dtype=setting.inputs.dtype)
    return vmap_hessian_runs(lambda row: (row * function.apply(weight)).tanh().sum(), setting.inputs.detach())


def test_s35d_3_a_function_on_a_weight_needs_vmap_support(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           VMAP_HESSIAN_OF_A_FUNCTION, a_function_x_does_not_pass_through_needs_nothing,
           multi_feature_inputs(), custom_backwards(), jvp_factors(), fails_on="tanh MLP")


# -- r32i-6, r32i-7: how-this-site-is-built.md, the words a quote must cover ----------

def every_word_outside_the_quotes_leaves_it_partly(scopes, gap) -> bool:
    """r32i-6, how-this-site-is-built.md (2c2b508:228-233): "*proven over a family*
    when the quotes ... cover all of its words; ... *partly checked* when some of its
    words lie outside every quote", read literally: a connective ("or") or a TeX command
    (`\\le`) left between two quotes leaves the sentence partly checked. The engine
    leaves those out of the words it counts."""
    from autograd_docs import claim_sentences as cs

    if gap is None or not all(scopes):
        return True
    shown = f"${gap}$" if gap.startswith("\\") else gap
    sentence = cs.Sentence("p.md", 1, f"It leaves the sum {shown} in `x.grad`, always.", None)
    quotes = ("It leaves the sum", "in `x.grad`, always.")
    return cs.verdict(sentence, [{"quote": quote, "check": "check_close", "scope": scope}
                                 for quote, scope in zip(quotes, scopes)]) == cs.PARTLY


def test_r32i_6_7_connectives_and_tex_commands_can_lie_outside_every_quote(real_claims):
    scopes = labelled(st.tuples(*[st.sampled_from([None, "example", "family"])] * 2),
                      "two clauses, each quoted by no check, an example or a family")
    replay(real_claims, "reference/how-this-site-is-built", "A counted\n  sentence is *proven over a family*",
           every_word_outside_the_quotes_leaves_it_partly, scopes, site_gaps(), fails_on=r"('family', 'example'), '\\lVert'")

# -- r32d-1/2: differentiate-elementwise-functions-at-many-points.md, grad and captures --

def grad_refuses_any_captured_change(change) -> bool:
    """r32d-1 E / r32d-2 C, differentiate-elementwise-functions-at-many-points.md
    (2c2b508:971-973): "`grad` refuses any in-place change of a captured tensor", checked
    on four plain changes (add_, mul_, fill_). grad runs the running-statistics update
    made inside the batch-norm kernel (F.batch_norm, InstanceNorm1d with tracked
    statistics, BatchNorm1d without its counter) and changes the statistics silently."""
    from batchnorm_under_vmap import run_captured_change

    error, _ = run_captured_change(change, "grad")
    return error is not None


GRAD_REFUSES_QUOTE = "`grad` refuses an in-place operation such as `c.add_(1)`"


def test_r32d_1_2_grad_runs_the_batch_norm_kernels_update(real_claims):
    from batchnorm_under_vmap import in_place_changes

    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points",
           GRAD_REFUSES_QUOTE, grad_refuses_any_captured_change, in_place_changes,
           fails_on="'InstanceNorm1d(track_running_stats=True) in training mode'")


# -- s33b-3: grad and the derivative transforms let a write through out= run ---------

def refused_unless_in_the_batch_norm_kernel(change, transform="grad") -> bool:
    """s33b-3 I/C, differentiate-elementwise-functions-at-many-points.md (c2af9da:1025-1027):
    "`grad` refuses an in-place operation on a captured tensor, such as `c.add_(1)`,
    though not the update of running statistics inside the batch-norm kernel"; and
    get-a-full-jacobian-or-hessian.md (c2af9da:586-588): "The derivative transforms of
    `torch.func` (...) refuse functions that call an in-place operation on a captured
    tensor", the kernel's update excepted by the sentences after it. Both families held
    no write through out=, which these transforms run (torch.add(c, 1, out=c)). The
    torch._foreach_*_ writes, added for s35a-3, are let through: out= is this replay's subject."""
    from batchnorm_under_vmap import IN_KERNEL, OUT_WRITES, run_captured_change

    if transform == "vmap":  # the Jacobian page's vmap sentence, unchanged
        return True
    error, _ = run_captured_change(change, transform)
    return (error is not None) != (change in IN_KERNEL or (change in OUT_WRITES and "out=" not in change))


def replay_on_the_captured_change_sentences(real_claims, old_sentence, fails_on: str,
                                            fails_on_the_jacobian_page: str | None = None) -> None:
    """Replay ``old_sentence`` on the elementwise page's `grad` sentence (grad alone) and
    on the Jacobian page's sentence on the derivative transforms (each transform)."""
    from batchnorm_under_vmap import func_transforms, in_place_changes

    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points", GRAD_REFUSES_QUOTE,
           old_sentence, in_place_changes, fails_on=fails_on)
    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "The derivative transforms of `torch.func`",
           old_sentence, in_place_changes, func_transforms, fails_on=fails_on_the_jacobian_page or fails_on)


def test_s33b_3_the_transforms_run_a_write_through_out(real_claims):
    replay_on_the_captured_change_sentences(real_claims, refused_unless_in_the_batch_norm_kernel, "out=b")


# -- s34b-1: the transforms refuse an in-place function as they do an in-place method --

IN_PLACE_FUNCTIONS = {"torch.relu_(b)", "F.relu(b, inplace=True)", "torch.nn.init.ones_(b)"}


def refused_as_an_in_place_method(change, transform="grad") -> bool:
    """s34b-1 I, differentiate-elementwise-functions-at-many-points.md (5551068:1025-1028):
    "`grad` refuses an in-place method such as `c.add_(1)` on a captured tensor (other
    writes can run, such as `torch.add(c, 1, out=c)` ...)"; get-a-full-jacobian-or-hessian.md
    (5551068:586-588): the transforms "refuse functions that call an in-place method such
    as `c.add_(1)`". Read as drawn between methods and other calls, an in-place function
    (torch.relu_, F.relu(inplace=True), nn.init.ones_) would run; the family held methods,
    item assignment and out= writes only. The transforms refuse those functions too."""
    from batchnorm_under_vmap import captured_change_refused_unless_vmap, run_captured_change

    if change in IN_PLACE_FUNCTIONS and transform != "vmap":
        return run_captured_change(change, transform)[0] is None
    return captured_change_refused_unless_vmap(change, transform)


def test_s34b_1_the_transforms_refuse_an_in_place_function(real_claims):
    replay_on_the_captured_change_sentences(real_claims, refused_as_an_in_place_method,
                                            "torch.nn.init.ones_(b)", "F.relu(b, inplace=True)")


# -- s35a-3: the transforms run a torch._foreach_*_ write too, not only one through out= --

def refused_unless_through_out_or_in_the_batch_norm_kernel(change, transform="grad") -> bool:
    """s35a-3 I, get-a-full-jacobian-or-hessian.md (1ab0f32:586-590): the transforms refuse
    an in-place operation on a captured tensor, "though a write through `out=`, such as
    `torch.add(c, 1, out=c)`, can run"; differentiate-elementwise-functions-at-many-points.md
    (1ab0f32:1025-1029) alike, with the batch-norm kernel's update. Read as out= being the
    writes that run, it passed: the family held no torch._foreach_*_ write, which these
    transforms run too (torch._foreach_add_, SGD's step with foreach=True)."""
    from batchnorm_under_vmap import IN_KERNEL, run_captured_change

    if transform == "vmap":  # the Jacobian page's vmap sentence, unchanged
        return True
    error, _ = run_captured_change(change, transform)
    return (error is not None) != (change in IN_KERNEL or "out=" in change)


def test_s35a_3_the_transforms_run_a_foreach_write(real_claims):
    replay_on_the_captured_change_sentences(real_claims, refused_unless_through_out_or_in_the_batch_norm_kernel,
                                            "foreach")


# -- s35c-5: the transforms run a stateful optimizer's foreach step, not only SGD's --

def refused_unless_sgds_foreach_step(change, transform="grad") -> bool:
    """s35c-5 C, get-a-full-jacobian-or-hessian.md (ece0a04:589-591): "some writes can run,
    such as ... and `optimizer.step()` with `foreach=True`". The family held one optimizer,
    SGD([b], foreach=True) on a plain tensor, and passed a reading where a stateful
    optimizer on nn.Parameters is refused; Adam(foreach=True) runs too (its CPU default,
    a for loop, is refused)."""
    from batchnorm_under_vmap import captured_change_refused_unless_vmap, run_captured_change

    if "Adam" in change and transform != "vmap":
        return run_captured_change(change, transform)[0] is not None
    return captured_change_refused_unless_vmap(change, transform)


def test_s35c_5_the_transforms_run_a_stateful_optimizers_foreach_step(real_claims):
    from batchnorm_under_vmap import func_transforms, in_place_changes

    replay(real_claims, "how-to/get-a-full-jacobian-or-hessian", "though some\nwrites can run",
           refused_unless_sgds_foreach_step, in_place_changes, func_transforms,
           fails_on="torch.optim.Adam(linear.parameters(), foreach=True).step()")


# -- r32d-4: differentiate-elementwise-functions-at-many-points.md, the ones seed's 1^T J --

def ones_seed_gives_row_sums(fmap) -> bool:
    """r32d-4 C, differentiate-elementwise-functions-at-many-points.md (2c2b508:198-199):
    "The seed 1 gives 1^T J, the column sums of the Jacobian", checked on elementwise maps
    only. J is diagonal there, and its column sums are also its row sums J 1 and its
    diagonal: the check passed the sentence read as the row sums."""
    J = jacobian(fmap, fmap.point())
    return torch.allclose(backward_with(fmap, fmap.point()), J.sum(1), atol=1e-6)


def ones_seed_gives_the_diagonal(fmap) -> bool:
    """r32d-4 C, as above, with the sentence read as diag(J)."""
    return torch.allclose(backward_with(fmap, fmap.point()), torch.diagonal(jacobian(fmap, fmap.point())),
                          atol=1e-6)


@pytest.mark.parametrize("old_sentence", [ones_seed_gives_row_sums, ones_seed_gives_the_diagonal])
@pytest.mark.parametrize("quote", ["The {term}`seed` $\\mathbf{1}$ gives $\\mathbf{1}^\\top J$, the column sums",
                                   "**Why it works.** The {term}`seed`"])
def test_r32d_4_the_ones_seed_is_told_from_row_sums_and_the_diagonal(real_claims, quote, old_sentence):
    replay(real_claims, "how-to/differentiate-elementwise-functions-at-many-points", quote, old_sentence,
           st.one_of(mixing_maps(), vector_maps()), fails_on="cumprod(x)")


# -- r32 custom2 (C, from the error-messages fix): write-a-custom-autograd-function.md, -----
# -- gradgradcheck passes where the terms a backward misses vanish ---------------------------

def gradgradcheck_fails_exactly_on_a_backward_that_reads_a_constant(name, values, _seed) -> bool:
    """write-a-custom-autograd-function.md (9240fe4:474): the check of "A tensor computed in
    `forward` or `setup_context` ... is a constant to the second derivative ...: the first
    derivative is right," read it as gradgradcheck failing on every such backward. At x = 0
    (sin, sigmoid, the cube), pi (sin) or where J1 turns (J0) the missed term vanishes: it passes."""
    from custom_backwards import CUSTOM_BACKWARDS, passes_gradgradcheck

    return passes_gradgradcheck(name, values) == CUSTOM_BACKWARDS[name][1]


def test_r32_custom2_a_constant_backward_passes_gradgradcheck_where_its_term_vanishes(real_claims):
    from custom_backwards import backward_points, custom_backwards, grad_outputs

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "A tensor computed in `forward` or `setup_context`",
           gradgradcheck_fails_exactly_on_a_backward_that_reads_a_constant, custom_backwards(),
           backward_points(vanishing=True), grad_outputs(), fails_on="[0.0]")


def gradgradcheck_catches_such_a_backward_as_written(name, values, scale, _seed) -> bool:
    """write-a-custom-autograd-function.md (9240fe4:626-629): gradgradcheck "usually catches
    such a backward, but can pass where the terms it misses are small (in a function scaled
    by `1e-5`, say)", as its check read it: as written (not scaled) it always fails."""
    from custom_backwards import CUSTOM_BACKWARDS, passes_gradgradcheck

    return scale != 1.0 or CUSTOM_BACKWARDS[name][1] or not passes_gradgradcheck(name, values)


def test_r32_custom2_gradgradcheck_passes_as_written_where_the_terms_vanish(real_claims):
    from custom_backwards import backward_points, custom_backwards, grad_outputs

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "To test a backward, run `gradgradcheck`",
           gradgradcheck_catches_such_a_backward_as_written, custom_backwards(),
           backward_points(vanishing=True), GRADGRADCHECK_SCALES, grad_outputs(),
           fails_on="'J0, backward calls bessel_j1', [1.8411837813406593], 1.0")


def gradgradcheck_fails_on_numpy_cube(values, _seed) -> bool:
    """write-a-custom-autograd-function.md (9240fe4:1943-1952, 2350-2354): "run
    `gradgradcheck` (it fails on `NumpyCube`)", and the summary's "run `gradgradcheck`"
    for a backward that silently drops its path. At x = 0, 3x² and 6x v vanish: it passes."""
    from custom_backwards import passes_gradgradcheck

    return not passes_gradgradcheck("x³, backward through NumPy, @once_differentiable", values)


@pytest.mark.parametrize("quote", ["drop its path: run `gradgradcheck`",
                                   "run `gradgradcheck` (it usually fails on `NumpyCube`"])
def test_r32_custom2_gradgradcheck_passes_numpy_cube_at_0(real_claims, quote):
    from custom_backwards import backward_points, grad_outputs

    replay(real_claims, CUSTOM_FUNCTION_PAGE, quote, gradgradcheck_fails_on_numpy_cube,
           backward_points(vanishing=True), grad_outputs(), fails_on="[0.0]")


def float_recipe_fails_gradgradcheck_in_float64(shape, seed, scale) -> bool:
    """write-a-custom-autograd-function.md (9240fe4:1975-1976): "`.float()` in place of `up`
    would cut float64 inputs to float32: float32-accurate gradients, and `gradgradcheck`
    fails". On 1e-5 * randn float32's rounding stays within its atol: it passes."""
    generator = torch.Generator().manual_seed(seed)
    x = (scale * torch.randn(*shape, generator=generator, dtype=torch.float64)).requires_grad_()
    w = (scale * torch.randn(3, 2, generator=generator, dtype=torch.float64)).requires_grad_()
    return not torch.autograd.gradgradcheck(FloatRecipeMatMul.apply, (x, w), raise_exception=False)


def test_r32_custom2_the_float_recipe_passes_gradgradcheck_on_small_inputs(real_claims):
    _, shapes = matmul_settings()
    replay(real_claims, CUSTOM_FUNCTION_PAGE, "`.float()` in place of `up` would cut float64",
           float_recipe_fails_gradgradcheck_in_float64, shapes, labelled(SEEDS, "seeds of x, w and the seed"),
           labelled(st.sampled_from([1.0, 1e-2, 1e-5]), "x and w randn, or scaled by 1e-2 or 1e-5"),
           fails_on="1e-05")

# -- r32b: backpropagate-from-a-non-scalar-output.md and check-gradients.md ----------

def grad_leaves_x_grad_untouched(made, held, retained) -> bool:
    """r32b-1 I, backpropagate-from-a-non-scalar-output.md (2c2b508:739-741, 1358-1359):
    autograd.grad "returns vᵀJ ... instead of adding it to `x.grad`, which stays
    untouched", of any x. After `x.retain_grad()` on a non-leaf, as the page's own line 43
    advises, autograd.grad adds to x.grad."""
    import warnings

    x = made.tensor
    if x.device.type == "meta":
        return True
    if held:
        x.grad = torch.full_like(x, 7.0)
    if retained:
        x.retain_grad()
    with warnings.catch_warnings():  # reading a non-leaf's .grad warns
        warnings.simplefilter("ignore")
        before = None if x.grad is None else x.grad.clone()
        torch.autograd.grad(torch.sin(x), x, torch.ones_like(x))
        after = x.grad
    return (after is None) if before is None else (after is not None and torch.equal(after, before))


def test_r32b_1_grad_adds_to_a_retained_non_leafs_grad(real_claims):
    from reader_settings import moved_leaves

    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "instead of adding it to a leaf's `.grad`, which stays untouched", grad_leaves_x_grad_untouched,
           st.one_of(moved_leaves(), non_leaf_inputs()), labelled(st.booleans(), ".grad holding a value or None"),
           labelled(st.booleans(), "retain_grad() called or not"), fails_on=", True")


def a_seed_of_any_shape_is_taken(y_shape, seed_shape) -> bool:
    """r32b-5 C, backpropagate-from-a-non-scalar-output.md (2c2b508:353-354): "so it asks
    you for the seed v, a tensor shaped like `y`" was checked by y.shape alone, which holds
    whatever seeds backward takes. Its check now tries seeds: read as "a seed of any shape
    will do", the sentence fails."""
    y = torch.ones(y_shape, requires_grad=True) * 2
    y.backward(torch.ones(seed_shape))
    return True


def test_r32b_5_the_seed_clause_is_checked_with_seeds(real_claims):
    shapes = labelled(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
                      "shapes of rank 1 to 3, sides 1 to 3")
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "so it asks you for the seed $v$, a tensor shaped like `y`", a_seed_of_any_shape_is_taken, shapes,
           labelled(st.one_of(shapes, st.just(())), "seed shapes of rank 0 to 3, sides 1 to 3"),
           fails_on="", because="Mismatch in shape")


def gradgradcheck_passes_where_the_backward_is_differentiable(name, values) -> bool:
    """r32b-7 C, check-gradients.md (2c2b508:458-459, 1492-1493): "`gradgradcheck` does
    the same one order higher" was checked by a Hessian and finite differences, without
    gradgradcheck. Read as "gradgradcheck checks that the backward can be differentiated"
    (not what its derivative is), it fails on x³ whose backward calls a 3x² with a wrong
    derivative."""
    from custom_backwards import function_named

    point = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(function_named(name).apply(point).sum(), point, create_graph=True)
    return torch.autograd.gradgradcheck(function_named(name).apply, (point,),
                                        raise_exception=False) == first.requires_grad


def test_r32b_7_gradgradcheck_compares_second_derivatives(real_claims):
    from custom_backwards import backward_points, second_derivative_cases

    replay(real_claims, "how-to/check-gradients", "`gradgradcheck` does the same one order higher",
           gradgradcheck_passes_where_the_backward_is_differentiable, second_derivative_cases(),
           backward_points(), fails_on="x³, backward through 3x² whose derivative is")

# -- r32j: misconceptions.md and look-up-the-questions-people-ask.md --------------------

def a_gradient_only_for_one_element_and_the_seed_1(fn, seed_kind, shape, other_elements) -> bool:
    """r32j-2, misconceptions.md (2c2b508:175): "It is the gradient only when `y` has a
    single element and $v = 1$", read as readers act on it: for any other y or v,
    x.grad is no gradient, neither of one of y's elements nor of y.sum(). A one-hot
    seed leaves that element's gradient, and the seed of ones that of y.sum()."""
    from seed_properties import multiples_of_one_scalar

    x, y_of, seed = multiples_of_one_scalar(fn, seed_kind, shape, other_elements)
    y_of(x).backward(seed)
    scalars = [lambda t, k=k: y_of(t).reshape(-1)[k] for k in range(seed.numel())]
    scalars.append(lambda t: y_of(t).sum())
    a_gradient = any(torch.allclose(x.grad, torch.func.grad(g)(x.detach())) for g in scalars)
    return a_gradient == (seed.numel() == 1 and torch.equal(seed, torch.ones_like(seed)))


def test_r32j_2_a_several_element_output_leaves_a_gradient(real_claims):
    replay(real_claims, "reference/misconceptions", "That is the gradient of $\\sum_i v_i y_i$",
           a_gradient_only_for_one_element_and_the_seed_1, vector_maps(),
           labelled(st.sampled_from(["1.0", "2.0", "-1.0", "0.5", "one-hot"]), "seeds: v · ones, or one-hot"),
           labelled(st.sampled_from([(), (1,), (1, 1), (2,), (2, 3)]), "shapes of y, single-element and not"),
           labelled(st.sampled_from(["multiples", "constant"]), "y's other elements: multiples of s, or constant"),
           fails_on="(2")


def frozen_attention_raises_under_jacfwd_however_called(models) -> bool:
    """r32j-4, both pages (2c2b508): "an `nn.MultiheadAttention` called with
    `need_weights=False` or with its parameters frozen (`requires_grad_(False)`) still
    raise[s] under `jacfwd`". Frozen, it takes the raising fast path only when query,
    key and value are one tensor: given separate ones it runs."""
    import copy

    for kind, model, batch in models:
        if kind.startswith("MultiheadAttention"):
            frozen = copy.deepcopy(model).requires_grad_(False)
            try:
                torch.func.vmap(torch.func.jacfwd(lambda row, m=frozen: m(row[None])[0]))(batch)
            except (RuntimeError, NotImplementedError):
                continue
            return False
    return True


@pytest.mark.parametrize("page", ["reference/misconceptions", "reference/look-up-the-questions-people-ask"])
def test_r32j_4_frozen_attention_on_separate_tensors_runs(real_claims, page):
    from per_sample_jacobians import sequence_models

    replay(real_claims, page, "`Linear`, `Conv2d`, activations and `nn.MultiheadAttention`",
           frozen_attention_raises_under_jacfwd_however_called, sequence_models(), fails_on="RNN, GRU")


def derivative_times_z_at_each_z_only_for_a_diagonal_J(f_x) -> bool:
    """r32j-5, misconceptions.md (2c2b508:363): "It equals "derivative times $z$" only
    when $J$ is diagonal", read at one z, as a reader checks it: at a one-hot z whose
    row of J holds only its diagonal entry it matches for a J that is not diagonal."""
    f, x = f_x
    J = jacobian(f, x)
    for z in torch.eye(f.n, dtype=x.dtype):
        if torch.allclose(backward_with(f, x, seed=z), z * torch.diagonal(J), **TOL) and not is_diagonal(J):
            return False
    return True


def test_r32j_5_one_z_can_match_a_J_that_is_not_diagonal(real_claims):
    from seed_properties import maps_at_points

    replay(real_claims, "reference/misconceptions", 'It\nequals "derivative times $z$" for every $z$',
           derivative_times_z_at_each_z_only_for_a_diagonal_J, maps_at_points(), fails_on="A @ x")

# -- r32g-2, r32g-3: differentiation-apis.md, hvp through a compiled function ---------------

def compiled_hvp_raises_the_double_backward_error_or_gives_zeros(case) -> bool:
    """r32g-2, differentiation-apis.md (2c2b508:274-283): "Of a function just compiled with
    `torch.compile`, `functional.hvp` and `functional.vhp` raise the double-backward error
    ... or return zeros with no error" and "`functional.hessian` returns zeros for the
    compiled part instead of raising". A model that has trained has run a backward through
    the compiled function: then all three raise another error (donated buffers)."""
    from compiled_double_backward import functional_through_compile

    outcome = functional_through_compile(*case)
    return outcome == "zeros" if case[2] == "hessian" else outcome in ("raises", "zeros")


def test_r32g_2_after_a_backward_hvp_and_hessian_raise_another_error(real_claims):
    from compiled_double_backward import functional_cases

    replay(real_claims, "reference/differentiation-apis", "Through a function compiled with `torch.compile`",
           compiled_hvp_raises_the_double_backward_error_or_gives_zeros, functional_cases(history=True),
           fails_on="'a forward and backward'")


def test_r32g_3_a_tanh_network_on_a_batch_raises(real_claims):
    """r32g-3, differentiation-apis.md (2c2b508:277-278): "For `tanh(t).sum()` or a Tanh
    network under `backend="aot_eager"` they return zeros", checked on one unbatched t.
    On a batch, as a reader feeds a network, hvp raises the double-backward error. The
    page names its condition (one unbatched input) and checks the batch."""
    from compiled_double_backward import functional_through_compile

    assert not _records_quoting(real_claims, "reference/differentiation-apis", "or a Tanh network")
    assert [functional_through_compile("a Tanh network", "aot_eager", "hvp", batch=batch)
            for batch in (False, True)] == ["zeros", "raises"]
    assert _records_quoting(real_claims, "reference/differentiation-apis",
                            """Compiled afresh with `backend="aot_eager"` and called first, on one unbatched input""")


# -- r32g-5: differentiation-apis.md, the options change J only up to rounding ------------

def options_change_J_only_up_to_rounding(fn, chunk) -> bool:
    """r32g-5, differentiation-apis.md (2c2b508:3111-3112): "Two options change how $J$ is
    computed, and its value only up to rounding". At an operation with an infinite
    derivative (sqrt at 0, even in sqrt(relu(x)) at x < 0, where f is constant) the
    forward-mode J puts NaN in other entries than the reverse-mode one."""
    from torch.autograd import functional

    f, at = ((torch.sqrt, [0.0, 1.0, 4.0]) if fn == "sqrt at a zero entry" else
             (lambda t: t.clamp(min=torch.zeros_like(t)), [0.0, 1.0, -1.0]) if fn == CLAMP_AT_BOUND else
             (lambda t: t.relu().sqrt(), [-1.0, 1.0, 4.0])) if isinstance(fn, str) else (fn, None)
    at = fn.point() if at is None else torch.tensor(at, dtype=torch.float64)
    forward = functional.jacobian(f, at, vectorize=True, strategy="forward-mode")
    return torch.allclose(forward, functional.jacobian(f, at), atol=1e-10, equal_nan=True)


CLAMP_AT_BOUND = "clamp(x, min=m) with a tensor m, at entries x == m"
OPTIONS_OUTSIDE = labelled(st.sampled_from(["sqrt at a zero entry", "sqrt(relu(x)) at a negative entry", CLAMP_AT_BOUND]),
                           "sqrt at a zero entry, sqrt(relu(x)) at a negative entry, clamp(x, min=m) at m")


def test_r32g_5_an_infinite_derivative_changes_J_by_more_than_rounding(real_claims):
    replay(real_claims, "reference/differentiation-apis", "Two options change how $J$ is computed, and, where",
           options_change_J_only_up_to_rounding, st.one_of(vector_maps(), OPTIONS_OUTSIDE),
           labelled(st.integers(1, 3), "chunk sizes 1 to 3"), fails_on="sqrt")


def options_change_J_only_up_to_rounding_where_derivatives_are_finite(fn, chunk) -> bool:
    """r56a-3 I + C, differentiation-apis.md (68e5c17:3531-3532): "where every operation `f`
    runs has a finite derivative, its value only up to rounding": a kink has finite
    one-sided derivatives, yet at clamp's tensor bound the forward-mode J gives 0 where the
    reverse-mode one gives 1. sqrt at 0 has an infinite one: the old sentence left it out."""
    return fn in ("sqrt at a zero entry", "sqrt(relu(x)) at a negative entry") or (
        options_change_J_only_up_to_rounding(fn, chunk))


def test_r56a_3_a_kink_changes_J_by_more_than_rounding(real_claims):
    replay(real_claims, "reference/differentiation-apis", "Two options change how $J$ is computed, and, where",
           options_change_J_only_up_to_rounding_where_derivatives_are_finite,
           st.one_of(vector_maps(), OPTIONS_OUTSIDE), labelled(st.integers(1, 3), "chunk sizes 1 to 3"),
           fails_on="clamp")


def test_r32g_5_jacfwd_and_jacrev_differ_where_f_is_differentiable(real_claims):
    """Found settling r32g-5, differentiation-apis.md (2c2b508:2581-2582): "Where both run
    and `f` is differentiable at `x`, the answer is the same up to rounding". sqrt(relu(x))
    is 0 near x = -1, differentiable there, yet jacfwd gives NaN where jacrev gives 0 (0
    times sqrt's infinite slope at 0). The page now asks that every operation `f` runs
    have a finite derivative, and its check draws sqrt(relu(x)) at a negative entry."""
    at = torch.tensor([-1.0, 1.0, 4.0], dtype=torch.float64)
    f = lambda t: t.relu().sqrt()  # noqa: E731
    assert torch.equal(torch.func.jacrev(f)(at)[0], torch.zeros(3, dtype=torch.float64))
    assert bool(torch.func.jacfwd(f)(at)[0].isnan().all())
    assert not _records_quoting(real_claims, "reference/differentiation-apis", "and `f` is differentiable at `x`")
    [record] = [r for r in _records_quoting(real_claims, "reference/differentiation-apis",
                                            "Where both run and every operation `f` runs is differentiable with a finite derivative")
                if r["check"] == "check_property"]
    assert any("sqrt(relu(x))" in family for family in record["families"]), record["families"]


# -- r32g-6: differentiation-apis.md, linearize runs f twice in every mode ------------------

def linearize_runs_f_twice_in_training_mode_only(kind, train, seed) -> bool:
    """r32g-6, differentiation-apis.md (2c2b508:159 and 2668-2669): "in training mode
    `linearize` itself runs `f` twice": read by a reader who cares about cost, eval()
    halves it. It runs f twice in eval() mode too."""
    nn = torch.nn
    middle = nn.Dropout(0.5) if kind == "Dropout" else nn.BatchNorm1d(6)
    model = nn.Sequential(nn.Linear(4, 6), middle, nn.Linear(6, 3)).double().train(train)
    runs = []
    model.register_forward_pre_hook(lambda module, args: runs.append(1))
    torch.func.linearize(model, torch.randn(5, 4, dtype=torch.double,
                                            generator=torch.Generator().manual_seed(seed)))
    return len(runs) == (2 if train else 1)


# The families differentiation-apis.md's linearize check draws (kinds, mode, seed).
LINEARIZED_MODELS = (
    labelled(st.sampled_from(["Dropout", "BatchNorm", "BatchNorm, momentum=None", "BatchNorm, track_running_stats=False",
                              "Conv2d, BatchNorm2d, Dropout", "ELU(inplace=True)",
                              "ELU(inplace=True), first Linear frozen"]),
             "a model with Dropout, BatchNorm1d (default momentum or None, or without "
             "running statistics), Conv2d, BatchNorm2d and Dropout, or an in-place ELU "
             "(the Linear before it frozen or not)"),
    labelled(st.booleans(), "training or eval() mode"),
    labelled(st.integers(0, 2**16), "seeds of the model, point, u and masks"))


def test_r32g_6_linearize_runs_f_twice_in_eval_mode_too(real_claims):
    replay(real_claims, "reference/differentiation-apis", "{py:func}`torch.func.linearize` returns $f(x)$\nand a",
           linearize_runs_f_twice_in_training_mode_only, *LINEARIZED_MODELS, fails_on="False")


# -- r37a-1, r37a-2: differentiation-apis.md, linearize of an f with an in-place step -------

def jvp_fn_is_j_u_if_f_draws_nothing_and_writes_no_buffers(kind, train, seed) -> bool:
    """r37a-1, differentiation-apis.md (1778e9b:2849-2851): `linearize` gives "a function
    for $J u$ that you can call with many $u$, if `f` draws no random numbers and writes
    no buffers". An in-place ELU after a Linear draws nothing and writes no buffer: the
    first call of jvp_fn raises, or (the Linear frozen) later calls replay the step on its
    own result. The Dropout and BatchNorm kinds the page's check proves; they pass here."""
    if "ELU" not in kind:
        return True
    nn = torch.nn
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 6), nn.ELU(inplace=True), nn.Linear(6, 3)).double().train(train)
    model[0].requires_grad_("frozen" not in kind)
    at, u = torch.randn(5, 4, dtype=torch.double), torch.randn(5, 4, dtype=torch.double)
    wanted = torch.func.jvp(model, (at,), (u,))[1]
    _value, jvp_fn = torch.func.linearize(model, at)
    try:
        return all(torch.allclose(jvp_fn(u), wanted) for _ in range(2))
    except RuntimeError:
        return False


def test_r37a_1_linearize_needs_no_in_place_step_too(real_claims):
    replay(real_claims, "reference/differentiation-apis", "{py:func}`torch.func.linearize` returns $f(x)$\nand a",
           jvp_fn_is_j_u_if_f_draws_nothing_and_writes_no_buffers, *LINEARIZED_MODELS, fails_on="ELU")


# -- n39a-3, r41c-1: differentiation-apis.md, linearize row with an in-place step ------------

class _TwiceThenReluInPlace(torch.nn.Module):
    def forward(self, h):
        return torch.relu_(h * 2)


class _Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(6, 6)

    def forward(self, h):
        out = self.inner(h)
        out += h
        return out


def in_place_model(kind, train, seed):
    """The row's check's models: an in-place step on a tensor computed from trainable
    parameters, and the point x."""
    nn = torch.nn
    torch.manual_seed(seed)
    if kind.startswith("Conv2d"):
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.Dropout(0.5),
                              nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
        at = torch.randn(5, 3, 6, 6, dtype=torch.double)
    else:
        middle = {"ELU": nn.ELU, "ReLU": nn.ReLU, "LeakyReLU": nn.LeakyReLU,
                  "LayerNorm, ReLU": lambda inplace: nn.Sequential(nn.LayerNorm(6), nn.ReLU(inplace=inplace)),
                  "relu_": lambda inplace: _TwiceThenReluInPlace(),
                  "residual": lambda inplace: _Residual()}[kind.split("(")[0]]
        model = nn.Sequential(nn.Linear(4, 6), middle(inplace=True), nn.Linear(6, 3))
        at = torch.randn(5, 4, dtype=torch.double)
    return model.double().train(train), at


def only_the_first_call_raises(kind, train, seed) -> bool:
    """n39a-3, differentiation-apis.md (a3dfc08:159), the linearize row: "an in-place step
    again (on a trainable layer's output, the first call can raise)", read as readers do:
    a call after the one that raised runs. Every call raises while grad mode is on."""
    model, at = in_place_model(kind, train, seed)
    u = torch.randn(at.shape, dtype=torch.double)
    _value, jvp_fn = torch.func.linearize(model, at)
    try:
        jvp_fn(u)
    except RuntimeError:
        pass
    try:
        return jvp_fn(u).shape == _value.shape
    except RuntimeError:
        return False


def calls_with_grad_mode_off_give_j_u(kind, train, seed) -> bool:
    """r41c-1, differentiation-apis.md (c3ad7be:159), the linearize row: "every call raises
    unless grad mode is off, as under `torch.no_grad()`", read as a workaround: under
    no_grad each call gives J u. The calls run but replay the in-place step: from the
    second call an in-place ELU's J u is wrong."""
    model, at = in_place_model(kind, False, seed)
    u = torch.randn(at.shape, dtype=torch.double)
    wanted = torch.func.jvp(model, (at,), (u,))[1]
    _value, jvp_fn = torch.func.linearize(model, at)
    with torch.no_grad():
        return all(torch.allclose(jvp_fn(u), wanted, atol=1e-8) for _ in range(2))


# The families the linearize row's check draws (kinds, mode, seed); it quotes no prose.
IN_PLACE_MODELS = (
    labelled(st.sampled_from(["ELU(inplace=True)", "ReLU(inplace=True)", "LeakyReLU(inplace=True)",
                              "LayerNorm, ReLU(inplace=True)", "relu_", "residual",
                              "Conv2d, BatchNorm2d, ReLU(inplace=True), Dropout"]),
             "an in-place ELU, ReLU or LeakyReLU after a trainable Linear, a ReLU after "
             "LayerNorm, relu_ of twice its output, a residual `out += h`, or an "
             "in-place ReLU after Conv2d and BatchNorm2d (images)"),
    labelled(st.booleans(), "training or eval() mode"),
    labelled(st.integers(0, 2**16), "seeds of the model, point, u and masks"))
IN_PLACE_KINDS = ["ELU(inplace=True)", "ReLU(inplace=True)", "LeakyReLU(inplace=True)",
                  "LayerNorm, ReLU(inplace=True)", "relu_", "residual",
                  "Conv2d, BatchNorm2d, ReLU(inplace=True), Dropout"]
IN_PLACE_ROW = "on a tensor that requires grad, a first call made with grad mode on raises"


def _the_row_source() -> str:
    source = (Path(__file__).resolve().parent.parent / "docs/reference/differentiation-apis.md").read_text()
    assert "check_property(every_in_place_kind_raises," in source and "examples=3," in (
        source.split("check_property(every_in_place_kind_raises,", 1)[1][:200]) and (
        IN_PLACE_ROW in source.split("TABLE = [", 1)[1].split("]\n", 1)[0]), "the linearize row changed: revisit this replay"
    return source


@pytest.mark.parametrize("old_sentence, fails_on", [(only_the_first_call_raises, ""),
                                                    (calls_with_grad_mode_off_give_j_u, "")])
def test_n39a_3_r41c_1_linearize_row_every_call_raises(old_sentence, fails_on):
    """The row's check is not recorded (it quotes no prose): run the old reading with the
    claim the page's check_property has (its seed) and its count, over every kind in
    both modes, as the page's every_in_place_kind_raises runs them."""
    _the_row_source()
    with pytest.raises(ClaimFailed, match="counterexample") as failure:
        check_property(lambda seed: all(old_sentence(kind, train, seed) for kind in IN_PLACE_KINDS
                                        for train in (False, True)),
                       IN_PLACE_MODELS[2], examples=3, claim=f"the torch.func.linearize row: {IN_PLACE_ROW}")
    assert fails_on in failure.value.shown, str(failure.value)


def every_grad_mode_call_raises(kind, train, seed) -> bool:
    """r44a-1, differentiation-apis.md (b71fc9d:159), the linearize row: "on a tensor that
    requires grad, every call raises in grad mode". A first call made under
    torch.no_grad() runs, and the calls after it run in grad mode too."""
    model, at = in_place_model(kind, train, seed)
    u = torch.randn(at.shape, dtype=torch.double)
    _value, jvp_fn = torch.func.linearize(model, at)
    with torch.no_grad():
        jvp_fn(u)
    try:
        jvp_fn(u)
    except RuntimeError:
        return True
    return False


def test_r44a_1_linearize_row_every_grad_mode_call_raises():
    """As test_n39a_3_r41c_1_linearize_row_every_call_raises: the page's check, with its
    claim and count, over every kind in both modes."""
    _the_row_source()
    with pytest.raises(ClaimFailed, match="counterexample"):
        check_property(lambda seed: all(every_grad_mode_call_raises(kind, train, seed)
                                        for kind in IN_PLACE_KINDS for train in (False, True)),
                       IN_PLACE_MODELS[2], examples=3, claim=f"the torch.func.linearize row: {IN_PLACE_ROW}")


def test_r42a_1_the_old_row_check_never_ran_relu_in_place():
    """r42a-1, differentiation-apis.md (77c7be3:159): the row's check drew 12 of the 14
    (kind, mode) pairs at random, seeded by its claim, and never drew relu_ nor
    ReLU(inplace=True); the page's check now runs every pair for each seed."""
    drawn = set()
    check_property(lambda kind, train, seed: drawn.add(kind) or True, *IN_PLACE_MODELS, examples=12,
                   claim="the torch.func.linearize row: on a tensor computed from trainable parameters, "
                         "every call raises in grad mode")
    assert not {"relu_", "ReLU(inplace=True)"} & drawn, drawn
    assert "assert len(in_place_runs) == 2 * len(IN_PLACE_KINDS)" in _the_row_source()


class _DetachThenReluInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 6)

    def forward(self, h):
        return self.linear(h).detach().relu_()


def test_r42a_2_an_in_place_step_on_a_detached_output_runs():
    """r42a-2, differentiation-apis.md (77c7be3:159): "(on a tensor computed from trainable
    parameters, every call raises in grad mode)": a Linear's output, detached, is computed
    from trainable parameters, and relu_ on it runs on every call. The row now says "on a
    tensor that requires grad"."""
    model, at = _DetachThenReluInPlace().double(), torch.randn(5, 4, dtype=torch.double)
    _value, jvp_fn = torch.func.linearize(model, at)
    u = torch.randn(at.shape, dtype=torch.double)
    assert [jvp_fn(u).shape for _ in range(2)] == [(5, 6)] * 2
    assert "an in-place step again (on a tensor that requires grad," in _the_row_source()


def test_r42a_3_linearize_returns_on_an_in_place_model():
    """r42a-3, differentiation-apis.md (77c7be3:2960-2962): "if `f` draws no random numbers,
    changes no tensor in place and runs nothing `torch.compile`d (there `linearize`
    raises)", read for all three: linearize returns on an in-place model (its calls
    raise); only compiled code makes linearize raise, which the clause now says."""
    model, at = in_place_model("ReLU(inplace=True)", True, 0)
    _value, jvp_fn = torch.func.linearize(model, at)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        jvp_fn(torch.randn(at.shape, dtype=torch.double))
    assert "(there\n`linearize` raises)" not in _the_row_source()


# -- n38a-5: differentiation-apis.md, linearize of a torch.compile'd f ------------------------

def jvp_fn_is_j_u_if_f_draws_nothing_and_changes_nothing_in_place(setting) -> bool:
    """n38a-5, differentiation-apis.md (a3dfc08:2886-2888): `linearize` gives "a function
    for $J u$ that you can call with many $u$, if `f` draws no random numbers and changes
    no tensor in place". A compiled MLP does neither, and `linearize` raises on it."""
    at = setting.inputs.detach()
    u = torch.ones_like(at)
    try:
        jvp_fn = torch.func.linearize(setting.model, at)[1]
        return torch.allclose(jvp_fn(u), torch.func.jvp(setting.model._orig_mod, (at,), (u,))[1])
    except RuntimeError:
        return False


def test_n38a_5_linearize_raises_on_a_compiled_f(real_claims):
    replay(real_claims, "reference/differentiation-apis", "runs nothing `torch.compile`d (on compiled",
           jvp_fn_is_j_u_if_f_draws_nothing_and_changes_nothing_in_place, compiled_modules_with_inductor(),
           fails_on="compiled MLP")




# -- r41c-4, r41c-6: clauses no check measured, now unquoted ----------------------------------

def test_r41c_4_jvp_of_a_training_mode_batchnorm_model_raises(real_claims):
    """r41c-4, differentiation-apis.md (c3ad7be:2938): "runs nothing `torch.compile`d (there
    `linearize` raises and torch.func.jvp gives $J u$)", checked on compiled MLPs only.
    torch.func.jvp of a BatchNorm model in training mode raises, compiled or not: the
    clause is gone and no check quotes it."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6)).train()
    at = torch.randn(5, 4)
    with pytest.raises(RuntimeError, match="mutate a captured"):
        torch.func.jvp(model, (at,), (torch.ones_like(at),))
    assert not _records_quoting(real_claims, "reference/differentiation-apis", "jvp` gives $J u$)")
    assert _records_quoting(real_claims, "reference/differentiation-apis", "runs nothing `torch.compile`d (on compiled")


def test_r41c_6_checkpointing_memory_is_not_quoted(real_claims):
    """r41c-6, glossary.md (c3ad7be:2580): "it uses less memory", quoted as proved by a
    check that counts forward runs and measures no memory."""
    assert not _records_quoting(real_claims, "reference/glossary", "it uses less memory")
    assert _records_quoting(real_claims, "reference/glossary", CHECKPOINT_COSTS)

def test_r42a_6_checkpointing_a_block_that_saves_only_its_input_saves_no_memory():
    """r42a-6, glossary.md (77c7be3:2578-2580): "In eager mode (without `torch.compile`), it
    uses less memory": a Linear saves only its input (beside its weight), as checkpoint
    does, so the saved bytes are the same. The clause is gone from the page."""
    from torch.utils.checkpoint import checkpoint

    block, x = torch.nn.Linear(256, 2), torch.randn(8, 256, requires_grad=True)
    weights = {p.data_ptr() for p in block.parameters()}

    def saved_bytes(forward) -> int:
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(
                lambda t: saved.append(0 if t.data_ptr() in weights else t.nbytes) or t, lambda t: t):
            forward()
        return sum(saved)

    assert saved_bytes(lambda: block(x * 1)) == saved_bytes(
        lambda: checkpoint(block, x * 1, use_reentrant=False)) == 8 * 256 * 4
    glossary = (Path(__file__).resolve().parent.parent / "docs/reference/glossary.md").read_text()
    assert "uses less memory" not in glossary


# -- s33a-2..5: accumulate, check-gradients, get-gradients, stop-gradients (c2af9da) --------

def sequence_first_chunks_the_targets_along_dim_1_too(setting, sequences, K) -> bool:
    """s33a-3, accumulate-zero-and-reuse-gradients.md (c2af9da:619-620): "for sequence-first
    input ((T, B, F), `nn.LSTM`'s default), use `chunk(K, dim=1)` and `size(1)` instead",
    read for both `chunk` calls of the recipe cell. Batch-first targets (B, C) then split
    along C: a shape error, or with one sequence per part a wrong gradient, silently, as
    (1, C) - (B, c) broadcasts."""
    from per_sample_jacobians import StepsFirstLastStep

    for _kind, model, sequence_batch in sequences:
        net, inputs = StepsFirstLastStep(model), sequence_batch.transpose(0, 1)  # (T, B, F)
        targets = torch.randn(inputs.size(1), 3, dtype=inputs.dtype, generator=torch.Generator().manual_seed(K))
        whole = torch.autograd.grad(((net(inputs) - targets) ** 2).mean(), list(net.parameters()))
        net.zero_grad()
        try:
            for chunk_x, chunk_t in zip(inputs.chunk(K, dim=1), targets.chunk(K, dim=1)):
                (((net(chunk_x) - chunk_t) ** 2).mean() * chunk_x.size(1) / inputs.size(1)).backward()
        except RuntimeError:
            return False
        if not all(torch.allclose(p.grad, w, atol=1e-10) for p, w in zip(net.parameters(), whole)):
            return False
    return True


def test_s33a_3_sequence_first_targets_keep_their_batch_dimension(real_claims):
    from per_sample_jacobians import sequence_models

    replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients",
           "`chunk(K)` and `len` count along dim 0: for sequence-first input",
           sequence_first_chunks_the_targets_along_dim_1_too,
           labelled(st.one_of(sample_batches(), compiled_modules()),
                    "critics on rows (N, F) or images (B, C, H, W), compiled MLPs"),
           sequence_models(), labelled(st.integers(2, 4), "K from 2 to 4"), fails_on="RNN, GRU")


def test_s33a_5_relu_has_no_gradient_at_0_for_gradcheck_to_fail(real_claims):
    """s33a-5, check-gradients.md (c2af9da:36-38): "it can fail a right gradient, as for ReLU
    at 0". ReLU has no derivative at 0 (slope 0 from the left, 1 from the right): the
    backward's 0 there is a convention, as gradcheck's 0.5 would be. The page now says "a
    bug-free backward", and its check reads both one-sided slopes."""
    x = torch.tensor([-1e-3, 0.0, 1e-3], dtype=torch.float64)
    left, mid, right = torch.relu(x).tolist()
    assert ((mid - left) / 1e-3, (right - mid) / 1e-3) == (0.0, 1.0)
    assert not _records_quoting(real_claims, "how-to/check-gradients", "can fail a right gradient")
    assert _records_quoting(real_claims, "how-to/check-gradients", "it can fail a bug-free backward, as for ReLU at 0")


def a_write_into_detach_raises_when_the_graph_saved_t(case) -> bool:
    """s33a-2, stop-gradients.md (c2af9da:51): "an in-place operation such as `add_` on it
    raises in `backward` if the graph saved `t`". Saved under
    `torch.autograd.graph.save_on_cpu()`, t is kept as it is on the CPU and no version is
    checked: backward runs on the changed value."""
    with torch.autograd.graph.save_on_cpu():
        out = torch.sin(case.tensor)
    case.tensor.detach().add_(1.0)
    return backward_raises_the_version_error(out)


def test_s33a_2_save_on_cpu_checks_no_version(real_claims):
    replay(real_claims, "how-to/stop-gradients", "| `t.detach()` | one tensor |",
           a_write_into_detach_raises_when_the_graph_saved_t, non_leaf_inputs(), fails_on="randn(3, 2")


def reentrant_checkpoint_holds_h_when_an_input_requires_grad(setting, input_requires_grad) -> bool:
    """s33a-4, get-gradients-of-intermediate-tensors.md (c2af9da:65-67): item 8 names a
    reentrant checkpoint "with no input that requires grad" as the cause, read as: with an
    input that requires grad, an activation inside it takes `retain_grad()`. Inside a
    reentrant checkpoint the forward runs without grad whatever the inputs:
    `retain_grad()` raises."""
    import warnings

    from torch.utils.checkpoint import checkpoint

    if not input_requires_grad:
        return True
    head = torch.nn.Linear(1, 1, dtype=setting.inputs.dtype)

    def f(x):
        h = setting.model(x)
        h.retain_grad()
        return head(h)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checkpoint(f, setting.inputs.detach().requires_grad_(), use_reentrant=True).sum().backward()
    except RuntimeError:
        return False
    return True


def test_s33a_4_reentrant_checkpoint_refuses_retain_grad_whatever_the_inputs(real_claims):
    replay(real_claims, "how-to/get-gradients-of-intermediate-tensors",
           "Inside a reentrant checkpoint an activation `h`", reentrant_checkpoint_holds_h_when_an_input_requires_grad,
           labelled(st.one_of(sample_batches(), train_mode_models(), compiled_modules()),
                    "critics on rows (N, F) or images (B, C, H, W), MLPs with Dropout or BatchNorm1d in "
                    "training mode, compiled MLPs"),
           labelled(st.booleans(), "an input that requires grad or not"), fails_on="True")

# -- s34 audit #23: compute-your-first-jacobian, which BatchNorm makes jacrev raise ----

def jacrev_raises_exactly_with_batchnorm_in_train_mode(setting) -> bool:
    """#23, compute-your-first-jacobian.md (c2af9da:477): "BatchNorm in train mode, which
    updates its module's buffers, is the exception: `jacrev` raises." Checked on the
    default BatchNorm1d alone; with `track_running_stats=False` it runs (and an InstanceNorm
    that updates its running statistics runs too)."""
    from train_mode import first_sample

    model, batch = setting.model, setting.inputs.detach()
    has_batchnorm = any(type(m).__name__.startswith("BatchNorm") for m in model.modules())
    try:
        torch.func.jacrev(first_sample(model, batch[1:]))(batch[0])
    except RuntimeError:
        return has_batchnorm
    return not has_batchnorm


def test_audit34_23_batchnorm_without_running_statistics_runs_under_jacrev(real_claims):
    from reader_settings import batch_norm_models

    layers = ("Dropout", "BatchNorm1d", "BatchNorm1d(track_running_stats=False)",
              "InstanceNorm1d(track_running_stats=True)")
    replay(real_claims, "tutorial/compute-your-first-jacobian", "One exception: `jacrev` raises on a model",
           jacrev_raises_exactly_with_batchnorm_in_train_mode,
           labelled(st.one_of(train_mode_models(layers=layers), batch_norm_models()),
                    "MLPs with Dropout, BatchNorm1d (with or without running statistics) or "
                    "InstanceNorm1d(track_running_stats=True); BatchNorm1d on sequences, "
                    "BatchNorm2d on images; in train mode, then eval mode"),
           fails_on="BatchNorm1d(track_running_stats=False)")


# -- s34 audit #39: look-up-the-questions-people-ask, two backward calls pile both -----

def backward_twice_gives_the_first_derivative_twice(g, seed) -> bool:
    """#39, look-up-the-questions-people-ask.md (c2af9da:1912): "Two calls of
    `backward(create_graph=True)` instead pile both derivatives into one `.grad`." was
    checked on x**3 at x = 2, where f' = f'' = 12: a .grad holding the first derivative
    twice (24) passed too. The check now draws maps and points; this reading must fail."""
    import warnings

    at = g.point(seed)[0]
    x = at.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        g(x).backward(create_graph=True)
        try:
            x.grad.backward(create_graph=True)
        except RuntimeError:
            return True  # g(x) = x: the next sentence's case
    return torch.allclose(x.grad, 2 * torch.func.grad(lambda t: g(t).sum())(at))


def test_audit34_39_two_backward_calls_are_not_one_derivative_twice(real_claims):
    from families import elementwise_maps

    replay(real_claims, "reference/look-up-the-questions-people-ask",
           "Two calls of `backward(create_graph=True)`\ninstead pile both derivatives",
           backward_twice_gives_the_first_derivative_twice,
           labelled(elementwise_maps(n=st.just(1)), "elementwise maps g or c * g, at a scalar x"),
           labelled(SEEDS, "seeds of the point x"), fails_on="(n=1)")

# -- s33c-3: handle-operations...md, gradgradcheck passes J0 where J1 turns --

def gradgradcheck_catches_the_j0_function(values, seed) -> bool:
    """s33c-3, handle-operations...md (c2af9da:929-931): "run it, on float64 inputs that
    require grad, before you differentiate a Function twice", read as: it catches BesselJ0
    at any such input, as a reader calls it (its own random grad_outputs; the check's
    ``seed`` is not used). Where J1' = 0 (x = 1.8411837813406593) it passes."""
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return not torch.autograd.gradgradcheck(BesselJ0.apply, (x,), raise_exception=False)


def test_s33c_3_gradgradcheck_passes_j0_where_j1_turns(real_claims):
    from custom_backwards import backward_points, grad_outputs

    replay(real_claims, "how-to/handle-operations-with-no-useful-derivative", "run it at a few random float64 inputs",
           gradgradcheck_catches_the_j0_function, backward_points(vanishing=True), grad_outputs(),
           fails_on="1.84118")


# -- write-a-custom-autograd-function.md: the second pass is right where the missed terms vanish --

def second_pass_is_wrong_or_raises(name, values, around, other_terms) -> bool:
    """write-a-custom-autograd-function.md (c2af9da:636-638): "Depending on the rest of the
    graph, the second pass then gives wrong or missing gradients silently, or raises": a
    second autograd.grad through a backward that reads a constant raises, or gives x's
    second derivative wrong. Where the missed terms vanish (a detached sigmoid's at 0,
    sin's saved cos(x) at pi) it can run and be right."""
    from custom_backwards import CUSTOM_BACKWARDS

    function, differentiable = CUSTOM_BACKWARDS[name]
    if differentiable:
        return True
    at = torch.tensor(values, dtype=torch.float64)

    def first(point, create_graph=False):
        leaf = point.clone().requires_grad_()
        loss = around.loss(function.apply, leaf) + other_terms(leaf)
        return leaf, torch.autograd.grad(loss, leaf, create_graph=create_graph)[0]

    leaf, slope = first(at, create_graph=True)
    try:
        (second,) = torch.autograd.grad(slope.sum(), leaf)
    except RuntimeError:
        return True
    h = 1e-5
    true = (first(at + h)[1] - first(at - h)[1]) / (2 * h)
    return not torch.allclose(second, true, rtol=1e-4, atol=1e-6)


def test_second_pass_right_where_the_missed_terms_vanish(real_claims):
    from custom_backwards import around_the_function, backward_points, custom_backwards

    replay(real_claims, CUSTOM_FUNCTION_PAGE, "Depending on the rest of the graph, the second pass can then give",
           second_pass_is_wrong_or_raises, custom_backwards(), backward_points(vanishing=True),
           around_the_function(), losses_with_linear_terms(),
           fails_on="'x³, backward through NumPy, @once_differentiable'")

# -- s33c-1: error-messages.md, torch.compiler.disable with a learnable scale -------------

def disable_inside_fixes_any_scale_of_the_result(g, seed, around) -> bool:
    """s33c-1, error-messages.md (c2af9da:2900-2904): "let the compiled code only scale
    the call's result or add such results", read with a scale that requires grad (an
    nn.Parameter, a learnable temperature or loss weight): the second derivative would
    go through. It raises the double-backward error."""
    from compiled_double_backward import AROUND, second_grad_through_compile

    if around not in ("2 * E(t)", "E(t) - E(t) / 3", "buffer w * E(t)", "nn.Parameter w * E(t)"):
        return True
    make, _on_results, weights = AROUND[around]
    at = g.point(seed).requires_grad_(True)
    wrt = [at, *weights(at.numel())]
    inside = second_grad_through_compile(make(torch.compiler.disable(g)), at, wrt=wrt)
    true = second_grad_through_compile(make(g), at, compiled=False, wrt=wrt)
    return isinstance(inside, torch.Tensor) and torch.allclose(inside, true)


def test_s33c_1_a_learnable_scale_of_the_result_raises(real_claims):
    from compiled_double_backward import around_the_call, curved_sums, point_seeds

    replay(real_claims, "reference/error-messages", "**Fix:** take the derivatives that are differentiated",
           disable_inside_fixes_any_scale_of_the_result, curved_sums(), point_seeds(),
           around_the_call(), fails_on="nn.Parameter w * E(t)")


# -- s33c-2: error-messages.md, one grad per order once a derivative is constant ----------

def one_grad_per_order_runs_for_any_order(g, seed, order, _dropped) -> bool:
    """s33c-2, error-messages.md (c2af9da:1078-1079): "For derivatives of any order, ask
    torch.autograd.grad for each one, with create_graph=True on every call but the
    last": every call would return. Once a derivative is a constant with no grad_fn
    (t * t * t's third, x**2's third) or only its weight's (a Linear layer's first), the
    next call raises."""
    return every_call_returns(g, seed, order, lambda k: k < order - 1)


def test_s33c_2_one_grad_per_order_raises_after_a_constant_derivative(real_claims):
    replay(real_claims, "reference/error-messages", "For second and higher derivatives",
           one_grad_per_order_runs_for_any_order, *one_grad_per_order_families(), fails_on="t * t summed (n=3)")


# -- s33 (integrator's note): differentiation-apis.md, gradgradcheck on a cut backward ------

CUT_GRAD = ("@once_differentiable", "NumPy on detached values")


def gradgradcheck_on_a_cut_backward(g, where, seed) -> tuple[bool, torch.Tensor, torch.Tensor]:
    """gradgradcheck's verdict on g with a backward that cuts grad off, at the point
    the page's check names ``where``, with grad_output g.point(seed); and x, v."""
    def cut_off(t, grad):
        with torch.enable_grad():
            at = t.detach().requires_grad_()
            return torch.autograd.grad(g(at), at, grad)[0]

    Cut = function_saving_its_input(g, cut_off, once=True)
    points = {"n standard normal entries": g.point(0), "the same entries, negated where positive": -g.point(0).abs(),
              "zeros": torch.zeros(g.n, dtype=torch.float64)}
    x, v = points[where].requires_grad_(), g.point(seed).requires_grad_()
    return torch.autograd.gradgradcheck(Cut.apply, (x,), (v,), raise_exception=False), x, v


def gradgradcheck_fails_for_every_cut_backward(g, built, where, seed) -> bool:
    """differentiation-apis.md (c2af9da:2040-2043): gradgradcheck "fails for a `backward`
    that cuts `grad` off" (marked @once_differentiable, or in NumPy), at any point. Where
    what it cuts vanishes (x**3 at 0, relu at negative x) it passes."""
    return built not in CUT_GRAD or not gradgradcheck_on_a_cut_backward(g, where, seed)[0]


def gradgradcheck_families():
    """The families the page's gradgradcheck property draws, built as it builds them."""
    from families import Map, elementwise_maps

    points = ("n standard normal entries", "the same entries, negated where positive", "zeros")
    cube = SIZES.map(lambda n: Map("x**3", lambda x: x**3, n, "elementwise"))
    return (labelled(st.one_of(elementwise_maps(), cube), f"{elementwise_maps.family_name}, and x**3"),
            APIS_BACKWARDS, labelled(st.sampled_from(sorted(points)), "points: " + ", ".join(points)),
            labelled(SEEDS, "seeds of the grad_output"))


def test_s33_gradgradcheck_passes_a_cut_backward_where_what_it_cuts_vanishes(real_claims):
    replay(real_claims, "reference/differentiation-apis", "{py:func}`torch.autograd.gradgradcheck`\non the Function",
           gradgradcheck_fails_for_every_cut_backward, *gradgradcheck_families(),
           fails_on="x**3 (n=3), '@once_differentiable', 'zeros'")


# -- s33d-4: how-this-site-is-built.md, symbols are no words to the engine ------------------

def only_tex_and_connectives_are_left_out(scopes, gap) -> bool:
    """s33d-4, how-this-site-is-built.md (c2af9da:293-296): "A sentence's words, here,
    leave out TeX commands (such as `\\le`) and the connectives of the engine's list":
    read as a complete list, a symbol left between two quotes (`<`, `−`, `²`) counts and
    leaves the sentence partly checked. The engine counts runs of ASCII letters, digits
    and _ only: x < 0 turned into x > 0 outside the quotes leaves it proven."""
    from autograd_docs import claim_sentences as cs

    if gap is None or not all(scopes):
        return True
    stated = cs.EXAMPLE if "example" in scopes else cs.FAMILY
    if not (gap.startswith("\\") or gap in cs.CONNECTIVES):
        stated = cs.PARTLY
    return verdict_with_a_gap(scopes, gap) == stated


def verdict_with_a_gap(scopes, gap) -> str:
    """The engine's verdict on a sentence whose two quotes, of these scopes, leave ``gap``
    (a TeX command shown in $...$) between them."""
    from autograd_docs import claim_sentences as cs

    shown = f"${gap}$" if gap.startswith("\\") else gap
    sentence = cs.Sentence("p.md", 1, f"It leaves the sum {shown} in `x.grad`, always.", None)
    quotes = ("It leaves the sum", "in `x.grad`, always.")
    return cs.verdict(sentence, [{"quote": quote, "check": "check_close", "scope": scope}
                                 for quote, scope in zip(quotes, scopes)])


def the_button_names_all_but_tex_and_connectives(gap) -> bool:
    """s33d-4, how-this-site-is-built.md (c2af9da:317): the dashed button "names the words
    no check quotes (connectives and TeX commands left out)": it would name a symbol."""
    from autograd_docs import claim_sentences as cs

    if gap is None:
        return True
    return words_the_button_names(gap) == ([] if gap.startswith("\\") or gap in cs.CONNECTIVES else [gap])


def words_the_button_names(gap) -> list[str]:
    """The words the dashed button names for a sentence whose two quotes leave ``gap``
    between them."""
    from autograd_docs import claim_sentences as cs
    from autograd_docs.html.checked_claims import _outside

    shown = f"${gap}$" if gap.startswith("\\") else gap
    sentence = cs.Sentence("p.md", 1, f"It leaves the sum {shown} in `x.grad`, always.", None)
    quotes = [{"quote": quote, "check": "check_close"} for quote in ("It leaves the sum", "in `x.grad`, always.")]
    return _outside([sentence], quotes, quotes[0])


def site_gaps():
    """The page's family of gaps between two quotes, built as the page builds it."""
    from autograd_docs import claim_sentences as cs

    return labelled(st.none() | st.sampled_from(sorted(cs.CONNECTIVES))
                    | st.sampled_from(("\\le", "\\ge", "\\ne", "\\lVert"))
                    | st.sampled_from(("<", ">", "-", "−", "²", "×", "≤", "α", "é", "$<$", "$-$"))
                    | st.sampled_from(("not", "never", "twice", "x", "raises", "unless", "x_1", "naïve"))
                    | st.sampled_from(("[and](https://github.com/pytorch/pytorch/issues/131753)", "[or](never)",
                                       "[see](never)", "{doc}`and`", "{doc}`never`", "{ref}`or <not-used>`",
                                       "{ref}`twice <not-used>`", "{ref}`not-used`")),
                    "between the quotes: nothing, a connective of the engine's list, a TeX command, a symbol or "
                    "another character, another word, or a link or a role")


def test_s33d_4_a_symbol_between_two_quotes_is_no_word(real_claims):
    scopes = labelled(st.tuples(*[st.sampled_from([None, "example", "family"])] * 2),
                      "two clauses, each quoted by no check, an example or a family")
    replay(real_claims, "reference/how-this-site-is-built", "A sentence's\n  words, here,",
           only_tex_and_connectives_are_left_out, scopes, site_gaps(), fails_on="('family', 'example'), 'α'")


def test_s33d_4_the_dashed_button_names_no_symbol(real_claims):
    replay(real_claims, "reference/how-this-site-is-built", "names\n  the words no check quotes",
           the_button_names_all_but_tex_and_connectives, site_gaps(), fails_on="'[see](never)'")


# -- s34a-2: stop-gradients.md, save_on_cpu(pin_memory=True) saves a copy ----------------

def save_on_cpu_computes_with_the_changed_value(case, on_cpu) -> bool:
    """s34a-2, stop-gradients.md (9f2fdb0:258-259): "Under
    `torch.autograd.graph.save_on_cpu()` the backward checks no counter at all: on the CPU
    it computes with the changed value after `add_` too", read for every save_on_cpu().
    With pin_memory=True it packs a copy: the backward computes with the value saved at
    forward time, the right gradient."""
    pinned = on_cpu == "save_on_cpu(pin_memory=True)"
    with torch.autograd.graph.save_on_cpu(pin_memory=pinned):
        out = torch.sin(case.tensor)  # sin saves its input
    case.tensor.detach().add_(1.0)
    (gradient,) = torch.autograd.grad(out.sum(), case.tensor)
    return torch.allclose(gradient, torch.cos(case.tensor.detach()))


def test_s34a_2_save_on_cpu_with_pinned_memory_computes_the_right_gradient(real_claims):
    replay(real_claims, "how-to/stop-gradients", "Under `torch.autograd.graph.save_on_cpu()`",
           save_on_cpu_computes_with_the_changed_value, non_leaf_inputs(),
           labelled(st.sampled_from(["save_on_cpu()", "save_on_cpu(pin_memory=True)"]),
                    "save_on_cpu() and save_on_cpu(pin_memory=True)"), fails_on="pin_memory=True")

# -- s35b-3: how-this-site-is-built.md, a quote that reaches into a link or a role ------------

PLACEMENTS = ("ends after its ] or its role's shown text", "ends in its shown text, before the ]",
              "starts at its [ or its role's backquote")


def words_counted_where_a_quote_reaches_into(gap, placement):
    """The words the engine counts where the first quote ends in the link or role (after
    its ] or shown text, or in its shown text after the first word) or the second starts
    at it, as how-this-site-is-built.md's check places them; and the markup's words (a
    link's address, a role's name and target)."""
    from autograd_docs import claim_sentences as cs

    link = gap.startswith("[")
    opening = 1 if link else gap.index("`") + 1
    shown = gap[opening:gap.index("](")] if link else gap.split("`")[1].split(" <")[0]
    markup = gap[gap.index("](") + 2:-1] if link else gap[1:gap.index("}")] + " " + gap.partition(" <")[2]
    cut = {PLACEMENTS[0]: opening + len(shown) + link, PLACEMENTS[1]: opening + len(shown.split()[0]),
           PLACEMENTS[2]: opening - 1}[placement]
    quotes = (("It leaves the sum", gap[cut:] + " in `x.grad`, always.") if placement == PLACEMENTS[2]
              else ("It leaves the sum " + gap[:cut], "in `x.grad`, always."))
    sentence = cs.Sentence("p.md", 1, f"It leaves the sum {gap} in `x.grad`, always.", None)
    words = cs.unquoted_words(sentence, [{"quote": quote, "check": "check_close"} for quote in quotes])
    return set(words), set(re.findall(r"\w+", markup)) - cs.CONNECTIVES


def markup_is_left_out_where_a_quote_reaches_into(gap, placement) -> bool:
    """s35b-3, how-this-site-is-built.md (77b55a1:301-306): a sentence's words are its
    runs "less ... link addresses, role names, a role's `<target>`". Where a quote ends
    after a link's ] or a role's shown text, or starts at them, the engine counts the
    address, the role's name and its target that lie outside it."""
    words, markup = words_counted_where_a_quote_reaches_into(gap, placement)
    return not words & markup


def address_is_a_word_where_a_quote_reaches_into_the_link(gap, placement) -> bool:
    """s35d-2, how-this-site-is-built.md (5147d29:301-307, 327-330): "a link's address ...
    when the link ... lies wholly outside every quote" is left out, read as: a link a quote
    reaches into has its address counted. A quote ending in the link's shown text leaves
    the ](…) outside every quote, and the engine leaves the address out."""
    words, markup = words_counted_where_a_quote_reaches_into(gap, placement)
    return not gap.startswith("[") or placement == PLACEMENTS[2] or markup <= words


LINKS_AND_ROLES = labelled(st.sampled_from(("[and](https://github.com/pytorch/pytorch/issues/131753)", "[or](never)",
                                            "[see](never)", "{doc}`and`", "{doc}`never`", "{ref}`or <not-used>`",
                                            "{ref}`twice <not-used>`", "{ref}`not-used`", "[see the docs](never)",
                                            "{ref}`see the docs <not-used>`")), "a link or a role")
QUOTE_REACHES_IN = labelled(st.sampled_from(PLACEMENTS), "a quote ending in it after its ] or shown text, ending in "
                            "its shown text, or starting at it")


def test_s35b_3_a_quote_reaching_into_a_link_leaves_its_address_a_word(real_claims):
    replay(real_claims, "reference/how-this-site-is-built",
           "a link's address when its `](…)` lies outside every quote, and a role's name and `<target>` when the role "
           "lies wholly outside every quote:",
           markup_is_left_out_where_a_quote_reaches_into, LINKS_AND_ROLES, QUOTE_REACHES_IN, fails_on="ends after its ]")


def test_s35d_2_a_quote_ending_in_a_links_shown_text_leaves_its_address_out(real_claims):
    replay(real_claims, "reference/how-this-site-is-built",
           "a link's address when its `](…)` lies outside every quote, and a role's name and `<target>` when the role "
           "lies wholly outside every quote)",
           address_is_a_word_where_a_quote_reaches_into_the_link, LINKS_AND_ROLES, QUOTE_REACHES_IN,
           fails_on="ends in its shown text")


# -- s34c-1: differentiation-apis.md, what raises under FlopCounterMode ------------------

# The page's check's settings, and the ways it asks for the leaf's gradient, named as it names them.
FLOP_COUNTER_SETTINGS = labelled(st.one_of(sample_batches(), train_mode_models()),
                                 "batches of vectors and of images, and MLPs with Dropout or BatchNorm1d in training mode")
FLOP_COUNTER_ASKS = ("torch.autograd.grad", "hvp", "vhp", "functional.vjp", "functional.jvp", ".backward()",
                     ".backward(inputs=[t])")


def asking_for_a_leaf_gradient_raises_under_the_counter(setting) -> None:
    """s34c-1, differentiation-apis.md (a96a882:2497-2502): "Under `FlopCounterMode`,
    asking for the gradient with respect to a leaf tensor that an `nn.Module` was called
    on raises": every way of asking would raise. `.backward()` asks for it and runs. The
    other ways go through autograd.grad, asked here directly (the page's check runs each)."""
    from torch.utils.flop_counter import FlopCounterMode

    leaf = setting.inputs.detach().clone().requires_grad_()
    ways = {".backward()": lambda out: out.backward(), ".backward(inputs=[t])": lambda out: out.backward(inputs=[leaf])}
    for ask in FLOP_COUNTER_ASKS:
        try:
            with FlopCounterMode(display=False):
                ways.get(ask, lambda out: torch.autograd.grad(out, leaf))(setting.model(leaf).sum())
        except RuntimeError as error:
            assert "A leaf node was passed to _will_engine_execute_node" in str(error), str(error)
        else:
            raise AssertionError(f"{ask} runs under the counter")


def test_s34c_1_backward_runs_under_the_flop_counter(real_claims):
    replay(real_claims, "reference/differentiation-apis", "Under\n`FlopCounterMode`,",
           asking_for_a_leaf_gradient_raises_under_the_counter,
           FLOP_COUNTER_SETTINGS,
           fails_on="tanh MLP", because=".backward() runs under the counter")


# -- s35b-2: differentiation-apis.md, torch.func raises under FlopCounterMode too -----------

def torch_func_grad_of_a_module_on_its_input_runs_under_the_counter(setting) -> bool:
    """s35b-2, differentiation-apis.md (77b55a1:2511-2516) named `torch.autograd.grad`,
    `hvp` and `vhp` as what raises under `FlopCounterMode` for a module called on its
    input, and `.backward()` as what runs: read so, `torch.func.grad` (and `jvp(grad(f))`,
    the page's forward over reverse) would run. It raises the same error."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False):
        torch.func.grad(lambda t: setting.model(t).sum())(setting.inputs.detach())
    return True


def functional_hessians_siblings_run_under_the_counter(setting) -> bool:
    """r37a-4, differentiation-apis.md (1778e9b:2511-2518) named `.backward()` and
    `torch.autograd.functional.hessian` as what runs under `FlopCounterMode` for a module
    called on its input: read so, its siblings `functional.jacobian` and
    `torch.func.hessian` would run. They raise the same error."""
    from torch.utils.flop_counter import FlopCounterMode

    f = lambda t: setting.model(t).sum()  # noqa: E731
    with FlopCounterMode(display=False):
        torch.autograd.functional.jacobian(f, setting.inputs.detach())
        torch.func.hessian(f)(setting.inputs.detach())
    return True



@pytest.mark.parametrize("old_sentence", [torch_func_grad_of_a_module_on_its_input_runs_under_the_counter,
                                          functional_hessians_siblings_run_under_the_counter])
def test_s35b_2_r37a_4_what_the_page_read_as_running_raises_under_the_flop_counter(real_claims, old_sentence):
    replay(real_claims, "reference/differentiation-apis", "Under\n`FlopCounterMode`,",
           old_sentence, FLOP_COUNTER_SETTINGS,
           fails_on="tanh MLP", because="A leaf node was passed to _will_engine_execute_node")


# -- s34c-2: differentiation-apis.md, gradgradcheck compares the first derivative too --------

def gradgradcheck_weighs_the_second_derivative_alone(g, built, where, seed) -> bool:
    """s34c-2, differentiation-apis.md (a96a882:2040-2046): gradgradcheck "compares ...
    the second derivative the `backward` gives with finite differences" and fails where
    what a cut `backward` loses is well above "`atol=1e-5` plus `rtol=1e-3` times the true
    second derivative", passes below it. Read so, a cut `backward` of a map with no second
    derivative (x, c * x, relu away from 0) passes. gradgradcheck also compares the
    derivative in grad_output, the first derivative, which the cut loses too: it fails."""
    if built not in CUT_GRAD:
        return True
    passes, x, v = gradgradcheck_on_a_cut_backward(g, where, seed)
    lost = torch.autograd.functional.jacobian(  # v g''(x): the second derivative a cut backward loses
        lambda t: torch.autograd.grad(g(t), t, v.detach(), create_graph=True)[0], x.detach())
    ratio = (lost.abs() / (1e-5 + 1e-3 * lost.abs())).max()
    return passes if ratio < 0.5 else not passes if ratio > 2 else True


def test_s34c_2_gradgradcheck_fails_a_cut_backward_with_no_second_derivative(real_claims):
    replay(real_claims, "reference/differentiation-apis", "{py:func}`torch.autograd.gradgradcheck`\non the Function",
           gradgradcheck_weighs_the_second_derivative_alone, *gradgradcheck_families(),
           fails_on="x (n=2), '@once_differentiable', 'n standard normal entries'")


# -- s34c-4: how-this-site-is-built.md, link addresses and role targets are no words -------

def runs_outside_tex(gap) -> list[str]:
    """The gap's runs of ASCII letters, digits and _ that are no connective, TeX left out."""
    from autograd_docs import claim_sentences as cs

    return [] if gap.startswith("\\") else [run for run in re.findall(r"[A-Za-z0-9_]+", gap)
                                              if run.lower() not in cs.CONNECTIVES]


def link_addresses_and_role_targets_are_words(scopes, gap) -> bool:
    """s34c-4, how-this-site-is-built.md (a96a882:301-305): "A sentence's words, here, are
    its runs of ASCII letters, digits and `_`, less TeX commands ... and the connectives
    of the engine's list": a link's address (an issue number) or a role's <target> left
    between two quotes would count and leave the sentence partly checked. The engine
    drops them: the address can change with the sentence still proven."""
    from autograd_docs import claim_sentences as cs

    if gap is None or not all(scopes):
        return True
    stated = cs.PARTLY if runs_outside_tex(gap) else cs.EXAMPLE if "example" in scopes else cs.FAMILY
    return verdict_with_a_gap(scopes, gap) == stated


def test_s34c_4_a_link_address_between_two_quotes_is_no_word(real_claims):
    scopes = labelled(st.tuples(*[st.sampled_from([None, "example", "family"])] * 2),
                      "two clauses, each quoted by no check, an example or a family")
    replay(real_claims, "reference/how-this-site-is-built", "A sentence's\n  words, here,",
           link_addresses_and_role_targets_are_words, scopes, site_gaps(),
           fails_on="('family', 'example'), '[or](never)'")


def test_s34c_4_the_dashed_button_names_no_link_address(real_claims):
    """s34c-4, how-this-site-is-built.md (a96a882:326): the dashed button "names the words
    no check quotes (connectives, TeX commands and other characters left out)": it would
    name a link's address and a role's name and <target>."""
    replay(real_claims, "reference/how-this-site-is-built", "names\n  the words no check quotes",
           lambda gap: gap is None or words_the_button_names(gap) == runs_outside_tex(gap), site_gaps(),
           fails_on="'[see](never)'")


def checkpointed_block_runs(setting, backwards) -> int:
    """How many times a block checkpointed whole runs, forward and backward."""
    from torch.utils.checkpoint import checkpoint

    runs = []
    setting.model.register_forward_pre_hook(lambda *args: runs.append(1))
    x = setting.inputs.detach().requires_grad_()
    out = checkpoint(setting.model, x, use_reentrant=False)
    if backwards.startswith("autograd.grad"):
        torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)[0].pow(2).sum().backward()
    else:
        for _ in range(1 if backwards == "one backward" else 2):
            out.sum().backward(retain_graph=True)
    return len(runs)


def the_checkpointed_block_runs_twice(setting, backwards) -> bool:
    """r37d-2, glossary.md (activation checkpointing), before s37: "Less memory for one
    more forward pass through the block", BatchNorm updating its running statistics "a
    second time": two runs in all, read for one backward. A gradient penalty's second
    backward recomputes the block once more."""
    return checkpointed_block_runs(setting, backwards) == 2


def the_checkpointed_block_runs_once_more_per_backward(setting, backwards) -> bool:
    """n38d-1, glossary.md (activation checkpointing), before s38: "one more forward pass
    through the block per backward pass through it, so a gradient penalty [...] runs it
    three times". A penalty's backward through a single Linear unpacks none of the tensors
    the block saved, and does not rerun it: two runs in all."""
    return checkpointed_block_runs(setting, backwards) == (3 if backwards != "one backward" else 2)


CHECKPOINT_BACKWARDS = labelled(st.sampled_from(("autograd.grad(create_graph=True), then the penalty's backward",
                                                 "one backward", "two backwards (retain_graph=True)")),
                                "one backward, two, or a gradient penalty's two")


CHECKPOINT_COSTS = "one more forward pass through the block per backward"


def test_r37d2_checkpointing_reruns_the_block_per_backward(real_claims):
    from reader_settings import checkpointed_blocks

    replay(real_claims, "reference/glossary", CHECKPOINT_COSTS,
           the_checkpointed_block_runs_twice, checkpointed_blocks(), CHECKPOINT_BACKWARDS,
           fails_on="then the penalty's backward")


def test_n38d1_checkpointing_reruns_the_block_per_backward_that_unpacks(real_claims):
    from reader_settings import checkpointed_blocks

    replay(real_claims, "reference/glossary", CHECKPOINT_COSTS,
           the_checkpointed_block_runs_once_more_per_backward, checkpointed_blocks(), CHECKPOINT_BACKWARDS,
           fails_on="Linear (train)")

# -- r37a-3: differentiation-apis.md, backward(inputs=) fills a retained non-leaf too --------

def test_r37a_3_backward_inputs_fills_a_retained_non_leaf_on_the_way(real_claims):
    """r37a-3, differentiation-apis.md (1778e9b:2819-2820): `backward` with `inputs=`
    "accumulates only into the tensors you name there (leaves or not)", checked on one
    other leaf. A non-leaf between y and the named leaf that called retain_grad() gets
    .grad too. The page now says what its leaf-graph family checks: other leaves'
    .grad is untouched."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    mid = a * 3
    mid.retain_grad()
    (mid**2).sum().backward(inputs=[a])
    assert mid.grad is not None and torch.equal(mid.grad, torch.tensor([6.0, 12.0]))
    page = "reference/differentiation-apis"
    assert not _records_quoting(real_claims, page, "accumulates only into")
    [record] = [r for r in _records_quoting(real_claims, page, "leaves other leaves' `.grad` untouched")
                if r["check"] == "check_property"]
    assert any("graphs whose leaves feed y" in family for family in record["families"]), record["families"]


# -- r37a-5: pass-options-to-torch-func-transforms.md, linearize of BatchNorm in eval() -----

def eval_batchnorm_in_place_steps_make_jvp_fn_unsafe(setting, calls) -> bool:
    """r37a-5, pass-options-to-torch-func-transforms.md (1778e9b:722-724): "replays only the
    derivative's trace if $f$ has no random or in-place operations (BatchNorm has some even
    in `eval()` mode)", with "if in `eval()` it still has in-place steps ..., use `jvp`
    instead": read so, jvp_fn of an eval() BatchNorm model is not jvp's J u. It is."""
    import copy

    model = copy.deepcopy(setting.model).eval()
    at = setting.inputs.detach()
    _value, jvp_fn = torch.func.linearize(model, at)
    u = torch.ones_like(at)
    return not all(torch.allclose(jvp_fn(u), torch.func.jvp(model, (at,), (u,))[1]) for _ in range(calls))


def test_r37a_5_linearize_of_eval_batchnorm_is_jvp(real_claims):
    from batchnorm_under_vmap import train_batchnorm_models

    replay(real_claims, "how-to/pass-options-to-torch-func-transforms", "`jvp_fn(u)` is still `jvp`'s)",
           eval_batchnorm_in_place_steps_make_jvp_fn_unsafe, train_batchnorm_models(),
           labelled(st.integers(1, 4), "calls of jvp_fn, 1 to 4"), fails_on="BatchNorm")


# -- r61a-1: pass-options-to-torch-func-transforms.md, the in-place steps are SiLU's --

def no_norm_layer_replays_no_in_place_step(kind, seed) -> bool:
    """r61a-1, pass-options-to-torch-func-transforms.md (d2d9261:961-965): "in `eval()`
    mode a norm layer, such as BatchNorm or GroupNorm, can replay a few in-place steps
    of its own": read so, a model with no norm layer, no Dropout and no in-place step
    written runs no in-place step but copy_ in jvp_fn's second call. A Linear-SiLU
    does (fill_, sub_): the steps the check put down to GroupNorm were SiLU's."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class InPlaceSteps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._schema.name.endswith("_"):
                written.add(str(func))
            return func(*args, **(kwargs or {}))

    if "SiLU" not in kind:
        return True  # a norm layer, Dropout or an add_ written: the old sentence allows steps
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.SiLU(), torch.nn.Linear(6, 2))
    at, written = torch.randn(8, 4), set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _value, jvp_fn = torch.func.linearize(model.train("train" in kind), at)
    jvp_fn(torch.ones_like(at))
    with InPlaceSteps():
        jvp_fn(torch.ones_like(at))
    return written <= {"aten.copy_.default"}


def test_r61a_1_silu_not_groupnorm_replays_in_place_steps(real_claims):
    replay(real_claims, "how-to/pass-options-to-torch-func-transforms",
           "(BatchNorm in `eval()` mode and a SiLU activation",
           no_norm_layer_replays_no_in_place_step,
           labelled(st.sampled_from(["Dropout (train)", "BatchNorm1d (eval)", "SiLU (eval)",
                                     "SiLU (train)", "(2 t).add_(1).exp()"]),
                    "Dropout in training mode, BatchNorm1d in eval(), SiLU in either mode "
                    "(after a Linear, no norm layer), an in-place add_"),
           labelled(st.integers(0, 2**16), "seeds of the weights and the batch"), fails_on="SiLU")

# -- r37b-1: a device's cross_entropy mean is over the weights it counts, not its samples --

def device_batch(sizes, counted_by, seed):
    """Scores, class-index labels (some ignored, each device counting one) and class
    weights for devices of ``sizes`` samples, as error-messages.md's check draws them."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(sum(sizes), 3, dtype=torch.float64, generator=generator)
    labels = torch.randint(3, (sum(sizes),), generator=generator)
    if "ignore_index" in counted_by:
        dropped = torch.rand(sum(sizes), generator=generator) < 0.4
        dropped[torch.tensor([0] + sizes[:-1]).cumsum(0)] = False  # each device counts one
        labels = labels.masked_fill(dropped, -100)
    weight = torch.rand(3, dtype=torch.float64, generator=generator) + 0.1 if "weights" in counted_by else None
    return scores, labels, weight

def chunk_means_weighed_by_their_share_of_the_batch(sizes, counted_by, seed) -> None:
    """r37b-1, error-messages.md (1778e9b:92-95): "when each is its chunk's mean, take
    their mean, weighted by each device's share of the batch when the chunks differ",
    checked on plain per-sample losses alone. Replayed on the check's draws of
    cross_entropy per device, whose mean with class weights or ignore_index is over the
    weights of the targets a device counts."""
    scores, labels, weight = device_batch(sizes, counted_by, seed)
    loss = torch.nn.functional.cross_entropy
    share_weighted = sum(len(t) / len(labels) * loss(z, t, weight=weight)
                         for z, t in zip(scores.split(sizes), labels.split(sizes)))
    check_close(share_weighted, loss(scores, labels, weight=weight), "the batch mean")


def test_r37b_1_chunk_means_of_a_weighted_or_ignoring_loss_weigh_by_counted_weights(real_claims):
    replay(real_claims, "reference/error-messages", "when each is the plain mean of its chunk's samples",
           chunk_means_weighed_by_their_share_of_the_batch,
           labelled(st.lists(st.integers(1, 5), min_size=2, max_size=4),
                    "chunk sizes: 2 to 4 devices of 1 to 5 samples each"),
           labelled(st.sampled_from(("samples", "class weights", "ignore_index", "class weights and ignore_index")),
                    "cross_entropy per device, counting samples, class weights, ignore_index or both"),
           labelled(SEEDS, "seeds"), fails_on="'class weights", because="the batch mean")

# -- r37e: a u_x through a compiled module, None from backward, a cube after layers ----

def no_input_derivative_through_compile_trains(setting, loss) -> bool:
    """r37e-1, differentiate-a-network-output-with-respect-to-its-input.md (1778e9b:1338-1340):
    "through a module compiled with an AOTAutograd backend (the default), `autograd.grad`
    cannot differentiate again, so no loss built from an input derivative taken through it
    can be trained", read as written: u_x from vmap(jacrev(...)) of the same compiled module
    raises too. Dynamo does not trace under the functorch transform: it runs the module
    eagerly, and the loss trains."""
    from torch.func import jacrev, vmap

    model = setting.model
    u_x = vmap(jacrev(lambda row: model(row[None])[0, 0]))(setting.inputs.detach())
    try:
        loss(u_x).backward()
    except RuntimeError:
        return True
    return False


def test_r37e_1_a_torch_func_u_x_through_a_compiled_module_trains(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "so no loss built\nfrom a $u_x$ that `autograd.grad` took through it", no_input_derivative_through_compile_trains,
           compiled_modules(), multi_term_losses(terms=st.integers(1, 3)), fails_on="compiled MLP")


def none_is_a_zero_gradient(wants_grad, returns_none, other_paths) -> bool:
    """r37e-4, write-a-custom-autograd-function.md (1778e9b:625-626): "For an input that
    requires grad, `None` is read as a zero gradient, silently": backward() leaves .grad
    at the other paths' gradient (zeros with none) and autograd.grad returns it. With no
    other path, .grad stays None and autograd.grad raises "appears to not have been used
    in the graph"."""
    from custom_backwards import returning_none

    inputs, returns_none, loss = returning_none(wants_grad, returns_none, other_paths)
    loss().backward()
    for t, wants, none in zip(inputs, wants_grad, returns_none):
        if wants and none:
            if t.grad is None or not torch.equal(t.grad, torch.full((2,), 1.0 if other_paths else 0.0)):
                return False
            try:
                torch.autograd.grad(loss(), t)
            except RuntimeError:
                return False
    return True


def test_r37e_4_none_from_backward_is_no_gradient_not_a_zero(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function",
           "For an input that requires grad, `None` means no gradient through this Function",
           none_is_a_zero_gradient, *NONE_FAMILIES, fails_on="False")


def layers_before_the_cube_drop_its_path_silently(setting) -> bool:
    """r37e-2, write-a-custom-autograd-function.md (1778e9b:2410-2413): "with the Function
    last and a seed of ones, a second derivative ... silently drops its path (other loss
    terms, or layers before it)", read as: after a Linear, no second pass raises.
    autograd.grad with respect to x raises "appears to not have been used in the graph":
    the slope depends on the weights, not on x."""
    cube, _ = CUSTOM_BACKWARDS["x³, backward through NumPy, @once_differentiable"]
    m = setting.model
    x = setting.inputs.detach().requires_grad_()
    second_passes = (lambda slope: slope.sum().backward(), lambda slope: torch.autograd.grad(slope.sum(), x),
                     lambda slope: torch.autograd.grad(slope.sum(), list(m[0].parameters()), allow_unused=True))
    raised = []
    for second_pass in second_passes:
        (slope,) = torch.autograd.grad(cube.apply(m[0](x)).sum(), x, create_graph=True)
        try:
            second_pass(slope)
        except RuntimeError as error:
            raised.append(str(error))
    return not raised


def test_r37e_2_a_second_grad_in_x_after_layers_raises(real_claims):
    replay(real_claims, "how-to/write-a-custom-autograd-function",
           "of ones (alone, after other layers or with other loss terms), a second\nderivative can raise",
           layers_before_the_cube_drop_its_path_silently, multi_feature_inputs(), fails_on="tanh MLP")


# -- n38e-1: differentiate-a-network-output-with-respect-to-its-input.md, x made inside --

def u_outside_the_block_is_enough(setting, block, made) -> bool:
    """n38e-1, differentiate-a-network-output-with-respect-to-its-input.md (1820ded:958-960):
    "compute `u` and its derivatives outside those blocks", read as: whatever block made
    x, u = model(x) and the grad after it work. An x made under inference_mode is an
    inference tensor: u from it "cannot be saved for backward"."""
    x = setting.inputs
    with {"torch.no_grad()": torch.no_grad, "torch.inference_mode()": torch.inference_mode}[block]():
        if made == "inside the block":
            x = setting.inputs.detach().clone().requires_grad_()
    try:
        u = setting.model(x)
        torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)
    except RuntimeError:
        return False
    return True


def test_n38e_1_an_x_made_under_inference_mode_needs_a_clone(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input",
           "The first `grad` raises the same \"element 0 of tensors does not require grad\"",
           u_outside_the_block_is_enough,
           labelled(st.one_of(sample_batches(), train_mode_models(), compiled_modules()),
                    "critics on rows (N, F) or images (B, C, H, W), MLPs with Dropout or BatchNorm1d in "
                    "training mode, compiled MLPs"),
           labelled(st.sampled_from(["torch.no_grad()", "torch.inference_mode()"]),
                    "evaluation blocks: torch.no_grad(), torch.inference_mode()"),
           labelled(st.sampled_from(["outside the block", "inside the block"]),
                    "x made outside the block, or inside it (requiring grad)"),
           fails_on="inside the block")

# -- r37f-3/r37f-5: debug-nan-and-wrong-gradients.md, a NaN made by adding gradients -----

def anomaly_mode_raises_exactly_where_the_gradient_holds_a_nan(case) -> bool:
    """r37f-3, debug-nan-and-wrong-gradients.md (1778e9b:548-552): anomaly mode "checks
    each gradient for NaN only ...: an `inf` passes silently: anomaly mode raises only if
    it turns into a NaN further back, and otherwise it reaches `.grad` unreported": read
    so, it raises exactly when a NaN reaches the gradient. It checks what each backward
    function returns: the NaN autograd makes by adding the +inf and -inf that two uses of
    x send back reaches x.grad with no error."""
    import warnings

    f, at = NON_FINITE_GRADIENTS[case]
    leaf = torch.tensor([at], requires_grad=True)
    f(leaf).sum().backward()
    under = torch.tensor([at], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.autograd.detect_anomaly():
                f(under).sum().backward()
        except RuntimeError:
            return bool(leaf.grad.isnan().any())
    return not bool(leaf.grad.isnan().any())


def test_r37f_3_anomaly_mode_misses_a_nan_made_by_adding_gradients(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "An `inf` passes, and can reach `.grad`",
           anomaly_mode_raises_exactly_where_the_gradient_holds_a_nan, non_finite_gradients(),
           fails_on="1/x - 1/(2x) at 0")


# -- n38g-2: check-gradients.md, fast_mode's evaluations in the parameters-as-inputs recipe --

def fast_mode_evaluations_do_not_grow_with_the_model(width, outputs, depth) -> bool:
    """n38g-2, check-gradients.md (1820ded:336-338): `fast_mode=True`, "whose number of
    evaluations does not grow with those sizes" (the numbers of `x` and the parameters):
    each parameter tensor is an input there, and one more layer costs fast mode more
    evaluations."""
    from torch.func import functional_call

    def evaluations(layers):
        model = torch.nn.Sequential(torch.nn.Linear(3, width), torch.nn.Tanh(),
                                    *[torch.nn.Linear(width, width) for _ in range(layers - 1)],
                                    torch.nn.Linear(width, outputs)).double()
        counted = []
        model.register_forward_hook(lambda *_: counted.append(1))
        names = [n for n, _ in model.named_parameters()]
        params = tuple(p.detach().requires_grad_() for p in model.parameters())
        batch = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t, *ps: functional_call(model, dict(zip(names, ps)), (t,)),
                                        (batch, *params), fast_mode=True)
        return len(counted)

    return evaluations(depth) == evaluations(depth + 1)


def test_n38g_2_fast_mode_grows_with_the_parameter_tensors(real_claims):
    replay(real_claims, "how-to/check-gradients", "By default `gradcheck` evaluates the module twice per number",
           fast_mode_evaluations_do_not_grow_with_the_model, labelled(st.integers(1, 6), "hidden widths 1 to 6"),
           labelled(st.integers(1, 3), "outputs 1 to 3"), labelled(st.integers(1, 3), "hidden layers 1 to 3"),
           fails_on="1, 1, 1")

# -- n38b-2/n38b-3: backpropagate-from-a-non-scalar-output.md, per-GPU class weights, float16 sums --

DEVICE_SHARE_FAMILIES = (labelled(st.integers(2, 12), "batch sizes 2 to 12"), labelled(st.integers(2, 4), "2 to 4 devices"),
                         labelled(st.booleans(), "class weights: yes or no"),
                         labelled(SEEDS, "seeds of scores, labels and ignored targets"), class_index_losses())


def gathered_means_over_the_counted_weights_are_the_batch_mean(size, devices, weighted, seed, loss_name) -> bool:
    """n38b-2, backpropagate-from-a-non-scalar-output.md (1820ded:253-257): per-GPU
    losses "for a loss with class-index targets and class weights or `ignore_index`,
    as in the reduction below", which divides the sum by the counted weights: applied
    to the gathered means, the sum of the means over the counted weights."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(size, 3, dtype=torch.float64, generator=generator)
    labels = torch.randint(3, (size,), generator=generator)
    labels[torch.rand(size, generator=generator) < 0.3] = -100
    labels[0] = 0
    class_weight = torch.rand(3, dtype=torch.float64, generator=generator) + 0.1 if weighted else None
    counted = (labels != -100).double() * (1 if class_weight is None else class_weight[labels.clamp(min=0)])
    loss = CLASS_INDEX_LOSSES[loss_name]  # s41: the check draws nll_loss too
    means = torch.stack([loss(z, t, weight=class_weight) for z, t in zip(scores.chunk(devices), labels.chunk(devices))])
    return bool(torch.isclose(means.nansum() / counted.sum(), loss(scores, labels, weight=class_weight)))


def test_n38b_2_per_gpu_class_weighted_losses_were_sent_to_the_per_sample_reduction(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "(per GPU, for chunks of unequal size or a `cross_entropy` or `nll_loss` loss with class-index targets",
           gathered_means_over_the_counted_weights_are_the_batch_mean, *DEVICE_SHARE_FAMILIES, fails_on="")


# -- n40a-2/n39a-4: the per-device weighing named cross_entropy alone; nll_loss weighs so too --

def counted_weight_means_hold_for_cross_entropy_alone(scores, labels, class_weight, rows, loss_name) -> bool:
    """n40a-2, backpropagate-from-a-non-scalar-output.md (a3dfc08:256): "a `cross_entropy`
    loss with class-index targets and class weights or `ignore_index`, weigh as in
    per-device-losses", and n39a-4, error-messages.md (a3dfc08:95-97): "For
    `cross_entropy` with class-index targets [...] each mean divides by the weights of
    the targets it counts", read as naming the losses the recipe holds for: the device
    means of log_softmax + nll_loss, weighed by their counted weights, would not give
    the batch mean."""
    loss = CLASS_INDEX_LOSSES[loss_name]
    counted = (labels != -100).double() * (1 if class_weight is None else class_weight[labels.clamp(min=0)])
    shares = torch.stack([counted[at].sum() for at in rows]) / counted.sum()
    means = torch.stack([loss(scores[at], labels[at], weight=class_weight) for at in rows])
    weighed = torch.where(shares > 0, means * shares, 0).sum()  # a device counting none adds nothing
    return bool(torch.isclose(weighed, loss(scores, labels, weight=class_weight))) == loss_name.startswith("cross_entropy")


def per_gpu_weighing_holds_for_cross_entropy_alone(size, devices, weighted, seed, loss_name) -> bool:
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(size, 3, dtype=torch.float64, generator=generator)
    labels = torch.randint(3, (size,), generator=generator).masked_fill(torch.rand(size, generator=generator) < 0.3, -100)
    labels[0] = 0  # the batch counts a target
    class_weight = torch.rand(3, dtype=torch.float64, generator=generator) + 0.1 if weighted else None
    return counted_weight_means_hold_for_cross_entropy_alone(scores, labels, class_weight,
                                                             torch.arange(size).chunk(devices), loss_name)


def test_n40a_2_per_gpu_weighing_holds_for_nll_loss_too(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "(per GPU, for chunks of unequal size or a `cross_entropy` or `nll_loss` loss with class-index targets",
           per_gpu_weighing_holds_for_cross_entropy_alone, *DEVICE_SHARE_FAMILIES, fails_on="nll_loss")


def device_means_over_counted_weights_hold_for_cross_entropy_alone(sizes, counted_by, seed, loss_name) -> bool:
    scores, labels, weight = device_batch(sizes, counted_by, seed)
    return counted_weight_means_hold_for_cross_entropy_alone(scores, labels, weight,
                                                             torch.arange(sum(sizes)).split(sizes), loss_name)


def test_n39a_4_device_means_over_counted_weights_hold_for_nll_loss_too(real_claims):
    replay(real_claims, "reference/error-messages", "For `cross_entropy` or `nll_loss` with class-index targets",
           device_means_over_counted_weights_hold_for_cross_entropy_alone,
           labelled(st.lists(st.integers(1, 5), min_size=2, max_size=4),
                    "chunk sizes: 2 to 4 devices of 1 to 5 samples each"),
           labelled(st.sampled_from(("class weights", "ignore_index", "class weights and ignore_index")),
                    "a loss per device with class weights, ignore_index or both"),
           labelled(SEEDS, "seeds"), class_index_losses(), fails_on="nll_loss")


HALF_FAMILIES = (labelled(st.sampled_from([torch.float16, torch.bfloat16, torch.float32]), "float16, bfloat16 and float32"),
                 labelled(st.sampled_from([(5, 7), (64, 3, 32, 32), (8, 3, 64, 64)]),
                          "loss shapes (5, 7), (64, 3, 32, 32) and (8, 3, 64, 64)"),
                 labelled(SEEDS, "seeds"))


def the_weighted_mean_in_the_loss_dtype_is_finite(dtype, shape, seed) -> bool:
    """n38b-3, backpropagate-from-a-non-scalar-output.md (1820ded:1135-1137): "divide it
    by `weights.expand_as(per_sample_loss).sum()` for the weighted mean", its sums taken
    in the loss's dtype: in float16 they overflow on an image batch."""
    generator = torch.Generator().manual_seed(seed)
    loss = torch.nn.MSELoss(reduction="none")(torch.randn(shape, generator=generator).to(dtype),
                                              torch.randn(shape, generator=generator).to(dtype))
    weights = torch.rand(shape[0], generator=generator).to(dtype).view(-1, *[1] * (len(shape) - 1))
    return bool(((loss * weights).sum() / weights.expand_as(loss).sum()).isfinite())


def test_n38b_3_float16_sums_of_an_image_batch_overflow(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "In float16, pass `dtype=torch.float32` to both sums",
           the_weighted_mean_in_the_loss_dtype_is_finite, *HALF_FAMILIES, fails_on="torch.float16")

# -- n38a-1: get-gradients-of-intermediate-tensors.md, a late hook on a compiled model -----

def test_n38a_1_a_late_hook_on_a_compiled_model_runs_on_a_new_batch_size(real_claims):
    """n38a-1, get-gradients-of-intermediate-tensors.md (1820ded:1297-1300): a hook
    registered after the first call of torch.compile(model) "can be silently skipped,
    until you call `torch._dynamo.reset()`", checked on one input shape. A batch of a
    new size compiles again and the hook runs there, with no reset. The page's check now
    draws a later batch size."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    compiled = torch.compile(model, backend="aot_eager")
    compiled(torch.randn(4, 3)).sum().backward()
    seen = []
    model[1].register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape[0]))
    for n in (4, 1):
        compiled(torch.randn(n, 3)).sum().backward()
    torch._dynamo.reset()
    assert seen == [1], seen
    page = "how-to/get-gradients-of-intermediate-tensors"
    assert not _records_quoting(real_claims, page, "silently skipped, until you call")
    records = [r for r in _records_quoting(real_claims, page, "skipped by the code compiled before it")
               if r["check"] == "check_property"]   # aot_eager, and inductor (r58f-2)
    assert records, "no property check quotes the sentence"
    for record in records:
        assert any("a later batch of" in family for family in record["families"]), record["families"]


# -- n38a-3: differentiation-apis.md, forward-mode functional.jacobian under FlopCounterMode --

def test_n38a_3_forward_mode_functional_jacobian_runs_under_the_counter(real_claims):
    """n38a-3, differentiation-apis.md (1820ded:2543-2545): under FlopCounterMode, of a
    module called on its input, "so do `hvp`, ..., `functional.jacobian`, ..." raise,
    checked on the default (reverse) strategy alone. With strategy="forward-mode" and
    vectorize=True it runs, as torch.func.jacfwd does. The page now names the default
    reverse mode, and its check runs forward mode among the ways that run."""
    from torch.autograd import functional
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    at = torch.randn(5, 3)
    with FlopCounterMode(display=False):
        counted = functional.jacobian(lambda t: model(t).sum(), at, strategy="forward-mode", vectorize=True)
    check_close(counted, torch.func.jacfwd(lambda t: model(t).sum())(at), "forward-mode jacobian, counted")
    page = "reference/differentiation-apis"
    assert not _records_quoting(real_claims, page, "`functional.jvp`, `functional.jacobian`, `torch.func.grad`")
    [record] = [r for r in _records_quoting(real_claims, page, "`functional.jacobian` (default reverse mode)")
                if r["check"] == "check_property"]
    assert "functional.jacobian, forward mode" in record["fixed"], record["fixed"]

# -- n38f-2: debug-nan-and-wrong-gradients.md, where anomaly mode reports a NaN made by adding --

def a_nan_made_by_adding_gradients_passes_anomaly_mode(case) -> bool:
    """n38f-2, debug-nan-and-wrong-gradients.md (1820ded:729-731): "A NaN that autograd
    makes by adding gradients between backward functions passes too, as none of them
    returned it": read so, anomaly mode raises no error on the two uses of x that send
    back +inf and -inf. Where the two uses are of h = x * 1.0, h's backward function
    passes the NaN on and anomaly mode names it."""
    import warnings

    f, at = NON_FINITE_GRADIENTS[case]
    raised = []
    with warnings.catch_warnings(), torch.autograd.detect_anomaly():
        warnings.simplefilter("ignore")
        try:
            f(torch.tensor([at], requires_grad=True)).sum().backward()
        except RuntimeError as error:
            raised.append(str(error))
    return " - " not in case or not raised


def test_n38f_2_a_nan_made_by_adding_gradients_is_named_past_a_leaf(real_claims):
    replay(real_claims, "how-to/debug-nan-and-wrong-gradients", "A NaN that autograd makes by adding gradients",
           a_nan_made_by_adding_gradients_passes_anomaly_mode, non_finite_gradients(), fails_on="h = ")

# -- n40a-1: accumulate-zero-and-reuse-gradients.md, heads kept outside the loss ----------

N40A_HEADS = ("head_a", "head_b", "head_c")
N40A_LOGGED = []  # the page's list outside the model


class N40aKeptHeads(torch.nn.Module):
    """The page's ReturnsHeads: three heads on a body, the ``used`` ones returned, the
    rest kept as ``kept_as`` says (on the module, in a list, read with .item())."""
    def __init__(self, form, used, kept_as):
        super().__init__()
        self.form, self.used, self.kept_as, self.body = form, used, kept_as, torch.nn.Linear(2, 2)
        self.heads = torch.nn.ModuleDict({name: torch.nn.Linear(2, 1) for name in N40A_HEADS})

    def forward(self, t):
        h = self.body(t)
        outputs = {}
        for name, head in self.heads.items():
            if self.form == "tuple, graph break":
                torch._dynamo.graph_break()
            outputs[name] = head(h)
        rest = {name: outputs[name] for name in N40A_HEADS if name not in self.used}
        if self.kept_as == "on the module":
            self.kept = rest
        elif self.kept_as == "in a list":
            N40A_LOGGED.extend(rest.values())
        else:
            self.kept = {name: output.mean().item() for name, output in rest.items()}
        outputs = {name: outputs[name] for name in self.used}
        return outputs if self.form == "dict" else tuple(outputs.values())


def only_heads_kept_on_the_module_get_zeros(backend, kept_as, form, used, optimizer) -> bool:
    """n40a-1, accumulate-zero-and-reuse-gradients.md (a3dfc08:481-482): "return only
    the outputs the loss uses, and keep no other head's output on the module, where it
    can get zeros too": read so, an ignored head kept any other way (in a list, read
    with .item()) keeps a None .grad under torch.compile. (A head returned detached,
    the check's other member since r41b-1, is not one the old sentence spoke of.)"""
    del optimizer  # the old sentence is about .grad alone
    if kept_as == "returned":
        return True
    used = tuple(sorted(used))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = N40aKeptHeads(form, used, kept_as)
    torch._dynamo.reset()
    outputs = torch.compile(model, backend=backend)(torch.ones(3, 2))
    sum((outputs[name] if form == "dict" else outputs[used.index(name)]).sum() for name in used).backward()
    ignored = [model.heads[name].weight.grad for name in N40A_HEADS if name not in used]
    return kept_as == "on the module" or all(grad is None for grad in ignored)


def test_n40a_1_heads_kept_in_a_list_or_read_get_zeros_too(real_claims):
    for quote in ("An ignored head whose output is kept on the module or in a list",
                  "and compute a head that you log but the loss ignores"):
        replay(real_claims, "how-to/accumulate-zero-and-reuse-gradients", quote,
               only_heads_kept_on_the_module_get_zeros,
               labelled(st.sampled_from(["aot_eager", "inductor"]), 'torch.compile backends "aot_eager" and inductor'),
               labelled(st.sampled_from(("on the module", "in a list", "read with .item()", "returned")),
                        "kept on the module, in a list, read with .item(), or returned"),
               labelled(st.sampled_from(["tuple", "dict", "tuple, graph break"]),
                        "heads returned as a tuple or a dict, or each after a graph break"),
               labelled(st.sets(st.sampled_from(N40A_HEADS), min_size=1, max_size=2), "the heads the loss uses"),
               labelled(st.sampled_from(["SGD", "Adam", "AdamW"]), "SGD, Adam and AdamW with weight_decay=0.1"),
               fails_on="'inductor', 'read with .item()', 'tuple'")



# -- r41d-1: differentiate-a-network-output-with-respect-to-its-input.md, a model built inside --

def the_lines_under_inference_mode_false_work_for_any_model(setting, made, built=None, copied=True) -> bool:
    """r41d-1, differentiate-a-network-output-with-respect-to-its-input.md (c3ad7be:974-977):
    "Inside a block you cannot leave, such as a function decorated with
    `@torch.inference_mode()`, run those lines, the clone included, under `with
    torch.inference_mode(False):`", read as: whatever model the function uses. A model built
    and loaded inside the function has inference tensors as parameters, and u = model(x)
    raises "Inference tensors cannot be saved for backward". (With ``copied=False``, the
    drawn model itself is loaded there.)"""
    @torch.inference_mode()
    def evaluate():
        model = copy.deepcopy(setting.model) if copied else setting.model
        model.load_state_dict(setting.model.state_dict())
        x = setting.inputs.detach().clone() if made == "inside the function" else setting.inputs
        with torch.inference_mode(False):
            x = x.clone().requires_grad_()
            u = model(x)
            return torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
    try:
        evaluate()
    except RuntimeError:
        return False
    return True


MODEL_BUILT_INSIDE_QUOTE = "with a model whose\nparameters were made outside inference mode"


def model_built_inside_families():
    """The families of the check quoting ``MODEL_BUILT_INSIDE_QUOTE``."""
    return (labelled(st.one_of(sample_batches(), train_mode_models(), compiled_modules()),
                     "critics on rows (N, F) or images (B, C, H, W), MLPs with Dropout or BatchNorm1d "
                     "in training mode, compiled MLPs"),
            labelled(st.sampled_from(["outside the function", "inside the function"]),
                     "x made outside the function (requiring grad), or inside it and cloned"),
            labelled(st.sampled_from(["the drawn model + load_state_dict", "copy.deepcopy + load_state_dict",
                                      "Net() + load_state_dict"]),
                     "the model built outside and loaded inside with load_state_dict, or built inside "
                     "by copy.deepcopy or by its constructor (Net()) and loaded there"))


def test_r41d_1_a_model_built_under_inference_mode_breaks_the_lines(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input", MODEL_BUILT_INSIDE_QUOTE,
           the_lines_under_inference_mode_false_work_for_any_model, *model_built_inside_families(),
           fails_on="tanh MLP")


def a_model_loaded_inside_breaks_the_lines(setting, made, built) -> bool:
    """r42b F4, differentiate-a-network-output-with-respect-to-its-input.md (be9cf34:976-978):
    "with a model built and loaded outside inference mode", read as: a model loaded
    inside the function breaks the lines. The drawn model, built outside and loaded there
    with load_state_dict, keeps parameters made outside, and u = model(x) runs."""
    if built != "the drawn model + load_state_dict":
        return True
    return not the_lines_under_inference_mode_false_work_for_any_model(setting, made, copied=False)


def test_r42b_f4_a_model_loaded_inside_with_load_state_dict_works(real_claims):
    replay(real_claims, "how-to/differentiate-a-network-output-with-respect-to-its-input", MODEL_BUILT_INSIDE_QUOTE,
           a_model_loaded_inside_breaks_the_lines, *model_built_inside_families(), fails_on="the drawn model")

def functional_apis_return_plain_tensors(fn, point_requires_grad, create_graph, _strategy=None) -> bool:
    """s41 audit #27, differentiation-apis.md (c05e7c4:2005-2006): the
    torch.autograd.functional APIs "build the graph themselves, and return plain
    tensors", with no word on create_graph=True, which each of them takes: then f(x)
    comes back with a graph."""
    from torch.autograd import functional

    at, u = fn.point().requires_grad_(point_requires_grad), fn.point(seed=1)

    def scalar(t):
        return (fn(t) ** 2).sum() + t.sin().sum()

    graph = {"create_graph": create_graph}
    returned = [*functional.vjp(fn, at, u, **graph), *functional.jvp(fn, at, u, **graph),
                *functional.hvp(scalar, at, u, **graph), *functional.vhp(scalar, at, u, **graph),
                functional.jacobian(fn, at, **graph), functional.hessian(scalar, at, **graph)]
    return all(not t.requires_grad and t.grad_fn is None for t in returned)


def test_s41_audit_27_functional_apis_return_a_graph_with_create_graph(real_claims):
    replay(real_claims, "reference/differentiation-apis",
           "These take a Python function and the point $x$, build the graph themselves",
           functional_apis_return_plain_tensors, *FUNCTIONAL_PLAIN_FAMILIES, fails_on="False, True")


# the families of the check of "These take a Python function and the point $x$ ..."
FUNCTIONAL_PLAIN_FAMILIES = (vector_maps(), st.booleans(), labelled(st.booleans(), "create_graph=False or True"),
                             labelled(st.sampled_from(["reverse-mode", "forward-mode"]),
                                      "jacobian's strategy: the default reverse-mode, or forward-mode"))


def every_strategy_returns_plain_tensors(fn, point_requires_grad, create_graph, strategy) -> bool:
    """r60a-1 (E), differentiation-apis.md (f68f664:2244-2245): "These take a Python
    function and the point $x$, build the graph themselves, and return plain tensors
    unless you pass `create_graph=True`", with the table's `jacobian(vectorize=True,
    strategy="forward-mode")` among them. Its J keeps a grad_fn where x requires grad:
    the sentence now says "in their default reverse mode"."""
    from torch.autograd import functional

    if create_graph:
        return True
    at = fn.point().requires_grad_(point_requires_grad)
    options = {"vectorize": True, "strategy": strategy} if strategy == "forward-mode" else {}
    J = functional.jacobian(fn, at, **options)
    return not J.requires_grad and J.grad_fn is None


def test_r60a_1_the_forward_mode_jacobian_is_not_plain(real_claims):
    replay(real_claims, "reference/differentiation-apis",
           "These take a Python function and the point $x$, build the graph themselves",
           every_strategy_returns_plain_tensors, *FUNCTIONAL_PLAIN_FAMILIES, fails_on="forward-mode")


def hessian_keeps_twice_the_identity(g, seed, term_name) -> bool:
    """s41 audit #1, differentiation-apis.md (c05e7c4:357): the check of "only the
    uncompiled terms' Hessian ... when `f` adds such terms" drew one term,
    (t**2).sum(), and compared with its Hessian 2I. Other terms have other Hessians
    (varying with t, off the diagonal): the family now draws them."""
    from compiled_double_backward import UNCOMPILED_TERMS
    from torch.autograd import functional

    at = g.point(seed)
    torch._dynamo.reset()
    compiled = torch.compile(g, backend="aot_eager")
    term = UNCOMPILED_TERMS[term_name] if term_name else (lambda t: t.sum() * 0)
    silent = functional.hessian(lambda t: compiled(t) + term(t), at)
    return torch.allclose(silent, 2 * torch.eye(at.numel(), dtype=at.dtype) * bool(term_name))


def test_s41_audit_1_the_hessian_check_draws_more_than_one_term(real_claims):
    from compiled_double_backward import curved_sums, point_seeds, uncompiled_terms

    replay(real_claims, "reference/differentiation-apis", "There\n`functional.hessian` returns zeros for the compiled part",
           hessian_keeps_twice_the_identity, curved_sums(), point_seeds(), uncompiled_terms(), fails_on="'t.sin().sum()'")


# -- s42 audit #37: why-backward-z-gives-z.md, "every leaf ... whatever seed you pass" ---

def every_leaf_y_depends_on_gets_a_gradient(graph) -> bool:
    """s42 audit #37, why-backward-z-gives-z.md (0156f48:432-434): "`backward`
    differentiates with respect to every leaf that requires grad and that $y$ was
    computed from through differentiable operations, whatever seed you pass", read
    without the condition the check's family draws: a call with inputs= fills only the
    named leaves."""
    _, _, uses, _, _, _, _ = graph
    return all(grad is not None for grad, use in zip(grads_after_backward(graph), uses, strict=True)
               if use == "differentiable")


def test_s42_audit_37_backward_with_inputs_fills_only_the_named_leaves(real_claims):
    replay(real_claims, "tutorial/why-backward-z-gives-z",
           "`backward` differentiates with respect to every leaf that requires grad",
           every_leaf_y_depends_on_gets_a_gradient, leaf_graphs_with_cut_paths(),
           fails_on="[True, False, True, False], False)")  # named: leaves 0 and 2 (inputs=), not prefilled


# -- r44e-2: misconceptions.md, a frozen nn.MultiheadAttention "raises under jacfwd" ----

@pytest.mark.parametrize("heads", [1, 3])
def test_r44e_2_frozen_self_attention_with_odd_heads_runs_under_jacfwd(heads):
    """r44e-2, misconceptions.md (be9cf34:760-765): "a frozen `nn.MultiheadAttention`
    given the same tensor object as query, key and value then raises under `jacfwd`".
    It raises on its fast path, which a layer with an odd number of heads does not take:
    there vmap(jacfwd) gives each sample's Jacobian. The page's check built 2 heads only,
    so the sentence went; the page must not say it again, nor the look-up page, which said
    (b71fc9d:1689-1693) that a frozen one "given the same tensor object as query, key and
    value" still raises under `jacfwd`."""
    from per_sample_jacobians import each_samples_jacobian

    docs = Path(__file__).resolve().parent.parent / "docs/reference"
    source = (docs / "misconceptions.md").read_text()
    assert "then raises under `jacfwd`" not in source and "its fast path needs" not in source
    look_up = " ".join((docs / "look-up-the-questions-people-ask.md").read_text().split())
    assert "and given the same tensor object as query" not in look_up and "its fast path needs" not in look_up
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(heads * 2, heads, batch_first=True).double().eval()
    attention.requires_grad_(False)
    batch = torch.randn(3, 4, heads * 2, dtype=torch.float64)

    def one_row(row):
        same = row[None]
        return attention(same, same, same)[0][0]

    mapped = torch.func.vmap(torch.func.jacfwd(one_row))(batch)  # the old sentence: raises
    check_close(mapped, each_samples_jacobian(lambda b: attention(b, b, b)[0], batch), f"{heads} heads")

# -- r44a-3: pass-options-to-torch-func-transforms.md, chunk_size's result -------------

def chunked_per_sample_gradients_are_the_same(setting, chunk) -> bool:
    """r44a-3 I, pass-options-to-torch-func-transforms.md (be9cf34:826): "`chunk_size`
    maps that many samples at a time, with the same result", read as the same tensors:
    chunked vmap runs other kernels, off in the last bits on 64 features."""
    from batchnorm_under_vmap import per_sample_gradients

    chunked, whole = per_sample_gradients(setting, chunk_size=chunk), per_sample_gradients(setting)
    return all(torch.equal(chunked[name], whole[name]) for name in whole)


def test_r44a_3_chunk_size_is_the_same_result_only_up_to_rounding(real_claims):
    from reader_settings import image_batches

    replay(real_claims, "how-to/pass-options-to-torch-func-transforms", "with the same result up to rounding",
           chunked_per_sample_gradients_are_the_same,
           labelled(st.one_of(multi_feature_inputs(st.sampled_from((64, 2))), image_batches()),
                    "tanh MLPs on 64 or 2 features, and conv critics on image batches"),
           labelled(st.integers(1, 3), "chunk sizes 1 to 3"), fails_on="64) inputs")

# -- r44d-1: write-a-custom-autograd-function.md, second derivatives through torch.compile --

COMPILE_BACKENDS = labelled(st.sampled_from(["the default", "aot_eager", "eager"]),
                            "torch.compile with no backend= (inductor), aot_eager and eager")


def second_derivatives_work_under_compile(name, values, around, backend) -> bool:
    """r44d-1, write-a-custom-autograd-function.md (be9cf34:1179-1180): a Function built from
    PyTorch operations "already works under `torch.compile`, its `backward` included", read
    with the page's "second derivatives work": a second derivative through the compiled
    Function would be the uncompiled one. It raises (the default backend, aot_eager) or
    misses the Function's term (eager)."""
    from compiled_double_backward import second_grad_through_compile
    from custom_backwards import CUSTOM_BACKWARDS

    function, differentiable = CUSTOM_BACKWARDS[name]
    if not differentiable:
        return True
    at = torch.tensor(values, dtype=torch.float64)
    torch._dynamo.reset()
    compiled = torch.compile(function.apply, **({} if backend == "the default" else {"backend": backend}))
    got = second_grad_through_compile(lambda t: around.loss(compiled, t), at.clone().requires_grad_(), compiled=False)
    want = second_grad_through_compile(lambda t: around.loss(function.apply, t), at.clone().requires_grad_(),
                                       compiled=False)
    torch._dynamo.reset()
    if isinstance(want, str):
        return isinstance(got, str)
    return not isinstance(got, str) and torch.allclose(got, want)


def test_r44d_1_a_second_derivative_through_a_compiled_function(real_claims):
    from custom_backwards import around_the_function, backward_points, custom_backwards

    replay(real_claims, CUSTOM_FUNCTION_PAGE,
           "already works under `torch.compile`, its `backward` included, for first derivatives.",
           second_derivatives_work_under_compile, custom_backwards(), backward_points(), around_the_function(),
           COMPILE_BACKENDS, fails_on="x -> Function -> relu, 'eager'")

# -- r44b: backpropagate-from-a-non-scalar-output.md and error-messages.md ------------

LAYOUTS_44 = labelled(st.sampled_from(["(B,)", "(B, 1)", "(B, T)", "(B, C, H, W), W == B", "(B, C, H, W), W != B",
                                       "(T, B, 1), batch_first=False, T == B",
                                       "(T, B, 1), batch_first=False, T != B"]), "loss layouts")


def a_zero_one_mask_gives_a_finite_weighted_mean(layout, rows, seed) -> bool:
    """r44b-3 G, backpropagate-from-a-non-scalar-output.md (be9cf34:1144-1146): the
    weighted-mean recipe, read for 0/1 mask weights with nothing said of a batch whose
    mask keeps no sample: there it is 0/0, nan."""
    loss = torch.rand(rows, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    mask = torch.zeros(rows, dtype=torch.float64)
    return bool(((loss * mask).sum() / mask.sum()).isfinite())


def test_r44b_3_a_mask_that_keeps_no_sample_gives_nan(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "Weights that are all 0 in a batch",
           a_zero_one_mask_gives_a_finite_weighted_mean, LAYOUTS_44, labelled(st.integers(2, 5), "batch sizes B"),
           labelled(SEEDS, "seeds"), fails_on="")


def a_seed_shaped_like_y_is_taken(y_shape, device, built, call) -> bool:
    """r44b-5 G, backpropagate-from-a-non-scalar-output.md (be9cf34:352-353): "the seed
    $v$, a tensor shaped like `y`", read as all a seed needs: a CPU seed for a y on
    another device ('meta' standing in for a GPU) raises "expected device"."""
    x = torch.ones(y_shape, device=device, requires_grad=True)
    y = x * 2
    v = torch.ones(y.shape) if built == "torch.ones(y.shape)" else torch.ones_like(y)
    try:
        y.backward(v) if call == "y.backward(v)" else torch.autograd.grad(y, x, v)
    except RuntimeError:
        return False
    return True


def test_r44b_5_the_seed_is_on_y_s_device(real_claims):
    shapes = labelled(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
                      "shapes of rank 1 to 3, sides 1 to 3")
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "and on\nits device",
           a_seed_shaped_like_y_is_taken, shapes,
           labelled(st.sampled_from(["cpu", "meta"]), "y on the CPU or on 'meta' (no GPU here)"),
           st.sampled_from(["torch.ones(y.shape)", "torch.ones(y.shape, device=y.device)",
                            "torch.ones_like(y)", "torch.tensor(values, device=y.device)"]),
           st.sampled_from(["y.backward(v)", "torch.autograd.grad(y, x, v)"]), fails_on="'meta'")


def the_version_counts_the_lines_that_changed_it(lines, name) -> bool:
    """r44b-6 I, error-messages.md (be9cf34:1526-1528): the message's last clause says
    "how often" the saved tensor was modified, read as the number of changes the reader
    wrote: one line h[:, 0] += 1 puts it at version 2."""
    out = getattr(torch, name.lower())(torch.tensor([[0.5, 1.], [-1., 2.]], requires_grad=True))
    for line in lines:
        exec(line, {"h": out, "nn": torch.nn})
    return out._version == len(lines)


def test_r44b_6_the_version_counts_in_place_operations(real_claims):
    replay(real_claims, "reference/error-messages", "The message's last clause names a saved tensor",
           the_version_counts_the_lines_that_changed_it,
           IN_PLACE_LINES_DRAWN,
           st.sampled_from(["Exp", "Sigmoid", "Tanh"]), fails_on="h[:, 0] += 1")


def only_a_wrong_shape_raises_invalid_gradient(shape, device, built) -> bool:
    """r44b-4 G, error-messages.md (be9cf34:2467-2470): "returned an invalid gradient at
    index 0" caused by a gradient's shape, read as its only cause: a gradient of the
    input's shape built on the CPU for an input on another device ('meta' standing in
    for a GPU) raises it too."""
    class Builds(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, grad):
            return torch.zeros(shape) if built == "torch.zeros(ctx.shape)" else torch.zeros_like(grad)

    try:
        Builds.apply(torch.ones(shape, device=device, requires_grad=True)).sum().backward()
    except RuntimeError:
        return False
    return True


def test_r44b_4_a_gradient_on_another_device_is_invalid_too(real_claims):
    replay(real_claims, "reference/error-messages", "When the message goes on \"expected device\"",
           only_a_wrong_shape_raises_invalid_gradient,
           labelled(st.lists(st.integers(1, 3), max_size=3).map(tuple), "shapes of rank 0 to 3"),
           labelled(st.sampled_from(["cpu", "meta"]), "inputs on the CPU or on 'meta' (no GPU here)"),
           st.sampled_from(["torch.ones(ctx.shape, device=ctx.device)", "torch.zeros(ctx.shape)",
                            "torch.zeros(ctx.shape, device=ctx.device)"]),
           fails_on="'meta'")

# -- r44f-1: check-gradients.md, "so `gradcheck` fails" on train-mode Dropout -----------

def train_mode_dropout_fails_gradcheck(p, width, seed, form) -> bool:
    """r44f-1, check-gradients.md (be9cf34:129-130): "Dropout in train mode draws a new
    mask per evaluation, so `gradcheck` fails on a right gradient", read as certain: a
    small `p` or a narrow layer often draws the same mask every time, and it passes
    (``form``: nn.Dropout, or F.dropout in forward, since r62f-1)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        linear = torch.nn.Linear(3, width).double()
        drop = torch.nn.Dropout(p) if form == "nn.Dropout" else (lambda t: torch.nn.functional.dropout(t, p))
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        return not torch.autograd.gradcheck(lambda t: drop(linear(t)), (x,), raise_exception=False)


def test_r44f_1_train_mode_dropout_can_pass_gradcheck(real_claims):
    replay(real_claims, "how-to/check-gradients", "or pass by luck when the masks it compares happen to match",
           train_mode_dropout_fails_gradcheck, labelled(st.sampled_from([0.02, 0.05, 0.1, 0.5]), "p from 0.02 to 0.5"),
           labelled(st.integers(1, 4), "Linear(3, width), width 1 to 4"), labelled(SEEDS, "seeds"),
           labelled(st.sampled_from(["nn.Dropout", "F.dropout"]),
                    "nn.Dropout, or F.dropout(t, p) in forward (training left True)"), fails_on="")

# -- r47c-3: differentiation-apis.md, linearize's "`x` and the weights stay as they are" --

def first_call_reads_x_and_the_weights(net, step_x, seed) -> bool:
    """r47c-3, differentiation-apis.md (68e5c17:3048-3049): "and `x` and the weights stay
    as they are until the first call of that function", read as naming all that the
    first call reads: after a training step, J u at the new weights and x with the
    running statistics linearize saw. A BatchNorm's moved statistics are read too."""
    torch.manual_seed(seed)
    at, u = torch.randn(2, 5, net.in_features, dtype=torch.double)
    net.eval()
    _value, jvp_fn = torch.func.linearize(net, at)
    statistics = {name: buffer.clone() for name, buffer in net.named_buffers()}
    net.train()(at).square().sum().backward()
    torch.optim.SGD(net.parameters(), lr=0.5).step()
    at.mul_(1.5 if step_x else 1.0)
    unmoved = copy.deepcopy(net.eval())
    unmoved.load_state_dict({**net.state_dict(), **statistics})
    return torch.allclose(jvp_fn(u), torch.func.jvp(unmoved, (at,), (u,))[1], atol=1e-6)


def test_r47c_3_linearize_reads_the_buffers_at_its_first_call(real_claims):
    replay(real_claims, "reference/differentiation-apis", "and `x`, the\nweights and the buffers",
           first_call_reads_x_and_the_weights, small_networks(),
           labelled(st.booleans(), "x changed in place too, or not"),
           labelled(st.integers(0, 2**16), "seeds of x and u"), fails_on="BatchNorm1d")


# -- r47d-2: error-messages.md, the version counts from the tensor's creation ----------

IN_PLACE_COUNTS = {"h.mul_(1)": 1, "h.unsqueeze_(0)": 1, "h += 1": 1, "h[0] = 0.": 1,
                   "nn.ReLU(inplace=True)(h)": 1, "h[:, 0] += 1": 2}
IN_PLACE_LINES_DRAWN = labelled(st.lists(st.sampled_from(sorted(IN_PLACE_COUNTS)), min_size=1, max_size=3),
                                "1 to 3 lines of in-place operations (mul_, unsqueeze_, +=, index assignment, "
                                "ReLU(inplace=True), h[:, 0] += 1)")


def the_version_is_the_changes_after_saving(lines, name) -> bool:
    """r47d-2 I, error-messages.md (68e5c17:1526-1529): "says which saved tensor changed
    and how many in-place operations changed it", read as the version N of "is at version
    N": a tensor an in-place ReLU saved is at version 1 or more when saved, and N counts
    from its creation."""
    out = getattr(torch, name.lower())(torch.tensor([[0.5, 1.], [-1., 2.]], requires_grad=True))
    after = 0
    for at, line in enumerate(lines):
        exec(line, {"h": out, "nn": torch.nn})
        after = 0 if "ReLU" in line and at < len(lines) - 1 else after + IN_PLACE_COUNTS[line]
    return out._version == after


def test_r47d_2_the_version_counts_from_the_tensor_s_creation(real_claims):
    replay(real_claims, "reference/error-messages", "The message's last clause names a saved tensor",
           the_version_is_the_changes_after_saving,
           IN_PLACE_LINES_DRAWN,
           st.sampled_from(["Exp", "Sigmoid", "Tanh"]), fails_on="nn.ReLU(inplace=True)(h)")


# -- m56a-1: error-messages.md, the version counts in-place operations, not writes -----

WRITES = {**IN_PLACE_COUNTS, "h.unsqueeze_(0)": 0}


def the_version_difference_counts_the_writes(lines, name) -> bool:
    """m56a-1 I, error-messages.md (2639d3d:1572-1576): "its version less the expected
    one counts the in-place writes to it after it was saved", read as values written:
    h.unsqueeze_(0) writes none and still adds one to the version."""
    out = getattr(torch, name.lower())(torch.tensor([[0.5, 1.], [-1., 2.]], requires_grad=True))
    writes = 0
    for at, line in enumerate(lines):
        exec(line, {"h": out, "nn": torch.nn})
        writes = 0 if "ReLU" in line and at < len(lines) - 1 else writes + WRITES[line]
    try:
        out.sum().backward()
    except RuntimeError as error:
        now, expected = re.search(r"is at version (\d+); expected version (\d+)", str(error)).groups()
        return int(now) - int(expected) == writes
    return writes == 0


def test_m56a_1_the_version_counts_shape_only_operations_too(real_claims):
    replay(real_claims, "reference/error-messages", "The message's last clause names a saved tensor",
           the_version_difference_counts_the_writes, IN_PLACE_LINES_DRAWN,
           st.sampled_from(["Exp", "Sigmoid", "Tanh"]), fails_on="h.unsqueeze_(0)")


# -- r47a-3 / r49a-1: glossary.md, an input changed in place in a compiled region --------

def an_input_returned_skips_the_region(breaks, alias) -> bool:
    """r47a-3, r49a-1, glossary.md (68e5c17:2606-2608): AOTAutograd's exception, "an
    output that is an input ... which eager autograd sees as that input itself", read
    as the region left out of its backward: an input the region changed in place is
    itself, its grad_fn a CopyBackwards over the region's CompiledFunctionBackward."""
    def body(x):  # the graph breaks split the region before x is returned: left out
        return (x + 1).sum(), ((x[0:2] if alias.startswith("x[0:2]") else x).mul_(2) if "in place" in alias else x)

    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True).clone()
    torch.compile(body)(x)
    edges = [node.name() for node, _ in x.grad_fn.next_functions if node is not None]
    torch._dynamo.reset()
    return "CompiledFunctionBackward" not in edges


def test_r49a_1_an_input_changed_in_place_runs_the_region(real_claims):
    aliases = ["x.view(3, 1)", "x[0:2]", "x.view(3, 1).t()", "x itself", "x.mul_(2), x changed in place",
               "x[0:2].mul_(2), x changed in place"]
    replay(real_claims, "reference/glossary", "AOTAutograd The part of `torch.compile`'s default backend",
           an_input_returned_skips_the_region, labelled(st.integers(0, 2), "0 to 2 graph breaks"),
           labelled(st.sampled_from(sorted(aliases)), "x, a view of x, or x changed in place also returned"),
           fails_on="x changed in place")

# -- r56b: backpropagate-from-a-non-scalar-output.md; r56a-1: pass-options-to-torch-func-transforms.md --

def per_device_means_give_the_whole_batch_loss(setting, devices, seed) -> bool:
    """r56b-1 G, backpropagate-from-a-non-scalar-output.md (68e5c17:896-899): "reduce the
    per-device losses ... with the same reduction your loss would use on the whole batch",
    read as giving the whole-batch loss: with BatchNorm in training mode each device
    normalizes its own chunk, and the mean of the equal chunks' means is another number."""
    from families import _vector

    model = copy.deepcopy(setting.model)
    chunks = [setting.inputs.detach()] + [_vector(seed + k, *setting.inputs.shape) for k in range(1, devices)]
    wanted = _vector(seed, devices * chunks[0].shape[0], 1)
    per_device = torch.stack([((model(chunk) - part) ** 2).mean()
                              for chunk, part in zip(chunks, wanted.chunk(devices))]).mean()
    return bool(torch.isclose(per_device, ((model(torch.cat(chunks)) - wanted) ** 2).mean()))


def test_r56b_1_batch_norm_chunks_are_not_the_whole_batch(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "With BatchNorm in training mode each device",
           per_device_means_give_the_whole_batch_loss, batch_norm_models(),
           labelled(st.integers(2, 3), "2 or 3 devices, equal chunks"), labelled(SEEDS, "seeds"), fails_on="")


def batchmean_is_the_mean_of_the_unreduced_loss(shape, log_target, seed) -> bool:
    """r56b-2 I, backpropagate-from-a-non-scalar-output.md (68e5c17:1131-1132): "Reduce it
    yourself, as the built-in reduction would: `per_sample_loss.mean()`", read for
    KLDivLoss(reduction='batchmean'): it divides the sum by size(0), not by numel."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(shape, dtype=torch.float64, generator=generator).log_softmax(-1)
    target = torch.randn(shape, dtype=torch.float64, generator=generator).log_softmax(-1)
    target = target if log_target else target.exp()

    def reduced(reduction):
        return torch.nn.KLDivLoss(reduction=reduction, log_target=log_target)(scores, target)
    return bool(torch.isclose(reduced("none").mean(), reduced("batchmean")))


def test_r56b_2_kl_batchmean_is_not_the_mean(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output", "`KLDivLoss`'s",
           batchmean_is_the_mean_of_the_unreduced_loss,
           labelled(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), "shapes of rank 1 to 4"),
           labelled(st.booleans(), "log_target either"), labelled(SEEDS, "seeds"), fails_on="")


# The families of the clamped weighted mean's check (backpropagate-from-a-non-scalar-output.md)
CLAMPED_MASKS = (LAYOUTS_44, labelled(st.integers(2, 5), "batch sizes B"),
                 labelled(st.sampled_from(["none", "one", "some", "all"]),
                          "0/1 weights keeping no, one, some or all samples"),
                 labelled(st.booleans(), "(B,) weights viewed, or weights shaped like the loss"),
                 labelled(SEEDS, "seeds"))


def every_process_can_run_the_weighted_mean(layout, rows, kept, shaped_like_loss, seed) -> bool:
    """r56b-4 G, backpropagate-from-a-non-scalar-output.md (68e5c17:1148-1149): "skip such
    a batch before `backward`", the one route given: under DistributedDataParallel every
    process must run the backward, and the unclamped divisor gives it nan there."""
    loss = torch.rand(rows, generator=torch.Generator().manual_seed(seed), dtype=torch.float64, requires_grad=True)
    mask = {"none": torch.zeros(rows), "all": torch.ones(rows), "one": torch.eye(rows)[0],
            "some": torch.randint(0, 2, (rows,), generator=torch.Generator().manual_seed(seed)).float()}[kept]
    (grad,) = torch.autograd.grad((loss * mask).sum() / mask.sum(), loss)
    return bool(grad.isfinite().all())


def test_r56b_4_a_skipped_batch_desynchronizes_ddp(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "divide by `weights.expand_as(per_sample_loss).sum().clamp(min=1)`",
           every_process_can_run_the_weighted_mean, *CLAMPED_MASKS, fails_on="'none'")


def a_masked_batch_gets_a_zero_gradient(layout, rows, kept, shaped_like_loss, seed) -> bool:
    """n56c-1 I, backpropagate-from-a-non-scalar-output.md (53d2a84:1185-1186): "gives
    such a batch a zero gradient", read for every loss: a masked-out inf loss (CTCLoss's
    for a sample it cannot align) makes the clamped mean and its gradient 0 × inf, nan."""
    chance = torch.rand(rows, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    chance = chance.index_fill(0, torch.tensor([0]), 0.0).requires_grad_()
    loss = -chance.log()                                  # inf for the sample it cannot fit
    mask = torch.zeros(rows, dtype=torch.float64) if kept == "none" else torch.ones(rows, dtype=torch.float64)
    (grad,) = torch.autograd.grad((loss * mask).sum() / mask.sum().clamp(min=1), chance)
    return kept != "none" or bool(grad.eq(0).all())


def test_n56c_1_a_masked_inf_loss_gives_nan(real_claims):
    replay(real_claims, "how-to/backpropagate-from-a-non-scalar-output",
           "divide by `weights.expand_as(per_sample_loss).sum().clamp(min=1)`",
           a_masked_batch_gets_a_zero_gradient, *CLAMPED_MASKS, fails_on="'none'")


def grad_then_f_differs_only_in_cost(setting, seed) -> bool:
    """r56a-1 G, pass-options-to-torch-func-transforms.md (68e5c17:227-228): "calling `grad`
    and then the function costs two runs", read as cost alone: in training mode the
    second run's value comes from another Dropout mask, and BatchNorm counts it."""
    from torch.func import functional_call, grad, grad_and_value

    def route(together):
        model = copy.deepcopy(setting.model)
        buffers = dict(model.named_buffers())

        def f(params, buffers):
            return functional_call(model, (params, buffers), (setting.inputs.detach(),)).pow(2).mean()
        params = {name: p.detach() for name, p in model.named_parameters()}
        torch.manual_seed(seed)
        value = grad_and_value(f)(params, buffers)[1] if together else (grad(f)(params, buffers), f(params, buffers))[1]
        return value, [b.clone() for b in buffers.values()]
    (v_one, b_one), (v_two, b_two) = route(True), route(False)
    return bool(v_one == v_two) and all(torch.equal(a, b) for a, b in zip(b_one, b_two))


def test_r56a_1_grad_then_f_runs_train_mode_layers_twice(real_claims):
    replay(real_claims, "how-to/pass-options-to-torch-func-transforms", "and in training mode the second run",
           grad_then_f_differs_only_in_cost, train_mode_models(layers=("Dropout",)), labelled(SEEDS, "seeds"),
           fails_on="")

# -- r56e-1: stop-gradients.md, "the optimizer skips a parameter whose .grad is None" ----

def the_optimizer_skips_a_frozen_none(net, trained_steps, given=None, line_search=None) -> bool:
    """r56e-1, stop-gradients.md (68e5c17:1083-1084): "and the optimizer skips a
    parameter whose `.grad` is `None`", read of LBFGS too: trained, then the first layer
    frozen and zero_grad()-ed as the page says, LBFGS still moves it."""
    batch = torch.linspace(-2, 2, 3 * net.in_features, dtype=torch.float64).reshape(3, net.in_features)
    target = torch.tensor([[1.0], [-1.0], [0.5]], dtype=torch.float64)
    optimizer = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=2, line_search_fn=line_search)

    def closure():
        optimizer.zero_grad()
        loss = (net(batch) - target).pow(2).sum()
        loss.backward()
        return loss
    for _step in range(trained_steps):
        optimizer.step(closure)
    net[0].requires_grad_(False)
    optimizer.zero_grad()
    if given == "the trained parameters":  # n56d-1: the old LBFGS "given only the parameters you train"
        optimizer.param_groups[0]["params"] = [p for p in net.parameters() if p.requires_grad]
    before = net[0].weight.detach().clone()
    optimizer.step(closure)
    return torch.equal(net[0].weight.detach(), before)


# The families of stop-gradients.md's LBFGS check
LBFGS_FREEZES = (small_networks(batchnorm=False), labelled(st.integers(1, 3), "training steps before freezing, from 1 to 3"),
                 labelled(st.sampled_from(["every parameter", "the trained parameters"]),
                          "the new LBFGS given every parameter or only the trained ones"),
                 labelled(st.sampled_from([None, "strong_wolfe"]), "line_search_fn None or 'strong_wolfe'"))


def test_r56e_1_lbfgs_moves_a_frozen_parameter_whose_grad_is_none(real_claims):
    replay(real_claims, "how-to/stop-gradients", "(LBFGS can move it even then",
           the_optimizer_skips_a_frozen_none, *LBFGS_FREEZES, fails_on="Linear")


def test_n56d_1_the_old_lbfgs_given_fewer_parameters_still_moves_it(real_claims):
    """n56d-1 I, stop-gradients.md (53d2a84:1161, 1522-1523): "give LBFGS only the
    parameters you train", read as editing the old LBFGS's param_groups: it keeps the
    parameters and history it was made with, and the frozen weight still moves."""
    replay(real_claims, "how-to/stop-gradients", "call `zero_grad()` after freezing and, with LBFGS",
           lambda net, steps, given, line_search: the_optimizer_skips_a_frozen_none(
               net, steps, "the trained parameters", line_search), *LBFGS_FREEZES, fails_on="Linear")


# -- r56c-2: look-up page, a second backward through a compiled sum, by backend ------------

def compiled_both_raise_on_a_second_pass(name, backend) -> bool:
    """r56c-2 I, look-up-the-questions-people-ask.md (68e5c17:436-437): "compiled, both of
    them raise", read for any backend. With backend="eager" (dynamo alone, the eager graph)
    x.sum() saves no tensor and survives the second backward."""
    torch._dynamo.reset()
    return second_backward_raises(torch.compile(lambda t: t.sum() if name == "x.sum()" else (10 * t).sum(),
                                                backend=backend)(torch.ones(2, requires_grad=True)))


def test_r56c_2_backend_eager_keeps_x_sum_s_second_pass(real_claims):
    replay(real_claims, "reference/look-up-the-questions-people-ask", "compiled by the\ndefault backend",
           compiled_both_raise_on_a_second_pass,
           labelled(st.sampled_from(["(10 * x).sum()", "x.sum()"]), "x.sum(), (10 * x).sum()"),
           labelled(st.sampled_from(["inductor", "aot_eager", "eager"]),
                    "backends inductor (the default), aot_eager and eager"), fails_on="'eager'")


# -- p56a-1: error-messages.md, a write to the tensor a slice came from counts too ----------

def only_writes_to_it_or_its_views_count(dim, saved_pair, write, name) -> bool:
    """p56a-1 M, error-messages.md (30dc7aa:1572-1576): the version "counts the in-place
    operations on it or on a view of it", read as only those: a write to another slice
    of the tensor a saved slice came from, or to that tensor, would leave backward running."""
    qkv = torch.linspace(-1, 1, 36).reshape(6, 6).requires_grad_() * 1

    def at(k, listed=False):
        columns = [2 * k, 2 * k + 1] if listed else slice(2 * k, 2 * k + 2)
        return (slice(None), columns) if dim else (columns,)

    slices = [qkv[at(k)] for k in range(3)]
    first, second = (slices[i] for i in saved_pair)
    saved = (getattr(torch, name.lower())(first) if name != "none" else first) * second
    other = 3 - sum(saved_pair)
    {"v.add_(1)": lambda: slices[other].add_(1), "v[0] = 0.": lambda: slices[other].__setitem__(0, 0.),
     "qkv[:, 4:] += 1": lambda: qkv.__setitem__(at(other), qkv[at(other)].__iadd__(1)),
     "qkv[:, [4, 5]] = 0.": lambda: qkv.__setitem__(at(other, listed=True), 0.),
     "qkv.mul_(2)": lambda: qkv.mul_(2)}[write]()
    try:
        saved.sum().backward()
    except RuntimeError:
        return False
    return True


def test_p56a_1_a_write_to_the_sliced_tensor_counts(real_claims):
    replay(real_claims, "reference/error-messages", "a slice shares its counter with the tensor",
           only_writes_to_it_or_its_views_count,
           labelled(st.sampled_from([0, 1]), "three slices of qkv along rows or columns"),
           labelled(st.sampled_from([(0, 1), (0, 2), (1, 2)]), "the two slices saved"),
           labelled(st.sampled_from(["qkv.mul_(2)", "qkv[:, 4:] += 1", "qkv[:, [4, 5]] = 0.", "v.add_(1)",
                                     "v[0] = 0."]),
                    "v.add_(1), v[0] = 0. on the third slice; qkv[:, 4:] += 1, qkv[:, [4, 5]] = 0., qkv.mul_(2)"),
           labelled(st.sampled_from(["Exp", "Sigmoid", "Tanh", "none"]),
                    "sigmoid, exp, tanh or nothing before the product"), fails_on="(0, 1)")
