"""The families general sentences are checked over (snippets/families.py), and the
property check that runs them (oracle.check_property).

A family is only as good as the members it holds: each test here says what every
member is (an elementwise map has a diagonal J, a permutation map feeds each input
to one output) and that the members which break the site's old sentences are in
it (``find`` fails if no member matches). The property check itself must be
deterministic, bounded, leave torch's random state alone, write nothing into the
working folder and name its smallest counterexample.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "snippets"))
import families  # noqa: E402
from oracle import ClaimFailed, check_close, check_property  # noqa: E402

SAMPLE = settings(families.CLAIM_SETTINGS, max_examples=25)


def jacobian(f: families.Map, x: torch.Tensor | None = None) -> torch.Tensor:
    return torch.autograd.functional.jacobian(f, f.point() if x is None else x)


def member(strategy, condition):
    """A member of the family that satisfies ``condition`` (fails if there is none)."""
    return find(strategy, lambda drawn: bool(condition(drawn)),
                settings=settings(families.CLAIM_SETTINGS, max_examples=500))


# -- What each family holds -------------------------------------------------------

@SAMPLE
@given(families.elementwise_maps())
def test_an_elementwise_map_has_a_diagonal_jacobian(f):
    J = jacobian(f)
    check_close(J, torch.diag(torch.diagonal(J)), f"{f} has a diagonal J")


@SAMPLE
@given(families.elementwise_maps())
def test_an_elementwise_maps_slope_from_output_is_its_slope(f):
    if f.slope_from_output is not None:
        at = f.point()
        check_close(f.slope_from_output(f(at)), torch.diagonal(jacobian(f, at)), f"{f}: slope from output")


def test_elementwise_maps_hold_maps_with_and_without_a_slope_from_output():
    assert member(families.elementwise_maps(), lambda f: f.slope_from_output is None)
    assert member(families.elementwise_maps(),
                  lambda f: f.name.startswith("c * ") and f.slope_from_output is not None)


def test_elementwise_maps_hold_kinks_and_scaled_maps():
    assert member(families.elementwise_maps(), lambda f: f.name == "relu(x)")
    assert member(families.elementwise_maps(), lambda f: f.name == "abs(x)")
    assert member(families.elementwise_maps(), lambda f: f.name.startswith("c * "))


@SAMPLE
@given(families.permutations())
def test_a_permutation_orders_every_index_once(order):
    assert sorted(order) == list(range(len(order)))


@SAMPLE
@given(families.permutation_maps())
def test_a_permutation_map_feeds_each_input_to_exactly_one_output(f):
    J = jacobian(f, f.point() + 3)  # away from sin's zeros: every entry shows
    assert ((J != 0).sum(0) == 1).all() and ((J != 0).sum(1) == 1).all(), f


def test_permutation_maps_hold_the_counterexamples_of_the_old_ones_seed_rule():
    # flip(x) * c: no input feeds two outputs, yet 1ᵀJ is not the diagonal of J.
    f = member(families.permutation_maps(), lambda f: f.name.startswith("flip(x) * c"))
    x = f.point().requires_grad_()
    f(x).backward(torch.ones(f.n, dtype=x.dtype))
    assert not torch.allclose(x.grad, torch.diagonal(jacobian(f, x.detach())))
    assert member(families.permutation_maps(), lambda f: f.name == "flip(x)")


@SAMPLE
@given(families.linear_maps())
def test_a_linear_map_has_its_matrix_as_jacobian_at_every_point(f):
    check_close(jacobian(f, f.point(1)), jacobian(f, f.point(2)), f"{f}: J is constant")


def test_linear_maps_take_other_output_sizes():
    f = member(families.linear_maps(m=st.just(3), n=st.just(5)), lambda f: True)
    assert f(f.point()).shape == (3,)


@SAMPLE
@given(families.mixing_maps())
def test_a_mixing_map_mixes_entries(f):
    J = jacobian(f, f.point(seed=1))
    assert (J - torch.diag(torch.diagonal(J))).abs().max() > 1e-6, f


@pytest.mark.parametrize("name", ["softmax(x)", "cumsum(x)", "layer_norm(x)", "rms_norm(x)",
                                  "x - mean(x)", "normalize(x)"])
def test_mixing_maps_hold_softmax_cumsum_and_the_normalisations(name):
    assert member(families.mixing_maps(), lambda f: f.name == name)


def test_vector_maps_hold_every_kind():
    for kind in ("elementwise", "permutation", "linear", "mixing"):
        assert member(families.vector_maps(), lambda f, kind=kind: f.kind == kind)


@SAMPLE
@given(st.booleans(), st.data())
def test_a_small_network_has_batchnorm_as_asked_and_trainable_parameters(with_norm, data):
    net = data.draw(families.small_networks(batchnorm=with_norm))
    batch = data.draw(families.batches(features=net.in_features))
    assert all(p.requires_grad for p in net.parameters()) and net.training
    assert any(isinstance(m, torch.nn.BatchNorm1d) for m in net.modules()) == with_norm
    assert net(batch).shape[0] == batch.shape[0]


@SAMPLE
@given(families.batches(features=4))
def test_a_batch_has_at_least_two_rows(batch):
    assert batch.shape[0] >= 2 and batch.shape[1] == 4


@SAMPLE
@given(families.points(n=5))
def test_a_point_is_a_finite_vector(x):
    assert x.shape == (5,) and torch.isfinite(x).all() and x.dtype == torch.float64


def test_points_hold_zeros_negative_zeros_and_kinks():
    assert member(families.points(n=3), lambda x: (x == 0).all()) is not None
    assert member(families.points(n=3), lambda x: ((x == 0) & x.signbit()).any()) is not None
    assert member(families.points(n=2), lambda x: (x.abs() == 1).all()) is not None


def test_dtypes_are_real_complex_or_both():
    assert set(_all(families.dtypes())) == {torch.float32, torch.float64,
                                            torch.complex64, torch.complex128}
    assert set(_all(families.dtypes(complex=False))) == {torch.float32, torch.float64}
    assert set(_all(families.dtypes(real=False))) == {torch.complex64, torch.complex128}


def _all(strategy) -> list:
    return families.members(strategy, 60)


@pytest.mark.parametrize("which", [{}, {"complex": False}, {"real": False}])
def test_a_dtypes_label_names_exactly_the_dtypes_it_draws(which):
    strategy = families.dtypes(**which)
    named = {str(dtype).removeprefix("torch.") for dtype in (*families.REAL_DTYPES,
                                                             *families.COMPLEX_DTYPES)
             if str(dtype).removeprefix("torch.") in strategy.family_name}
    assert named == {str(dtype).removeprefix("torch.") for dtype in _all(strategy)}
    assert ("complex" in strategy.family_name.split(" dtypes")[0]) == which.get("complex", True)


def test_every_family_is_named_for_the_record():
    for factory in families.FAMILIES:
        assert factory.family_name and factory().family_name == factory.family_name


# -- The property check ------------------------------------------------------------

def ones_seed_gives_the_diagonal(f: families.Map) -> None:
    x = f.point().requires_grad_()
    f(x).backward(torch.ones(f.n, dtype=x.dtype))
    check_close(x.grad, torch.diagonal(jacobian(f, x.detach())), "1ᵀJ = diag J")


def test_a_true_sentence_passes_over_its_family():
    check_property(ones_seed_gives_the_diagonal, families.elementwise_maps(),
                   quote="for an elementwise f the ones seed gives every derivative")


def test_an_error_inside_the_property_is_a_counterexample_too():
    def holds(n):
        if n > 3:
            raise RuntimeError("too big")
    with pytest.raises(ClaimFailed, match=r"counterexample: 4\n  because: RuntimeError: too big"):
        check_property(holds, st.integers(0, 10), claim="n never exceeds 3")


def test_the_same_claim_draws_the_same_members_and_another_claim_others():
    def draws(claim):
        seen = []
        check_property(lambda x: seen.append(x.tolist()), families.points(n=3), claim=claim)
        return seen
    assert draws("a claim") == draws("a claim")
    assert draws("a claim") != draws("another claim")
    assert len(draws("a claim")) <= families.CLAIM_SETTINGS.max_examples


DRAWS_BEFORE_AND_AFTER = """
import sys
sys.path.insert(0, {snippets!r})
import families
from hypothesis import strategies as st
from oracle import check_property

def draws():
    seen = []
    check_property(lambda *members: seen.append(members), families.SEEDS,
                   st.floats(-10, 10), claim="a claim", examples=30)
    return seen

before = draws()
sys.path.insert(0, {folder!r})
import many_numbers  # a local module: Hypothesis reads the numbers in its source
print(draws() == before)
"""


def test_the_members_do_not_depend_on_what_else_the_process_imported(tmp_path):
    """Hypothesis mixes numbers it reads from the source of the local modules loaded
    into its draws. A page's kernel and a replay of its check elsewhere load other
    modules; both must draw the same members from the claim's seed."""
    numbers = [f"{k / 7:.5f}" for k in range(-70, 70) if k] + [str(k) for k in range(100, 1000, 7)]
    (tmp_path / "many_numbers.py").write_text(f"NUMBERS = [{', '.join(numbers)}]\n",
                                             encoding="utf8")
    code = DRAWS_BEFORE_AND_AFTER.format(snippets=str(Path(families.__file__).parent),
                                         folder=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.stdout.strip() == "True", result.stdout + result.stderr


def test_a_property_check_leaves_torch_random_state_and_the_folder_alone(tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    check_property(lambda net: torch.rand(1) is not None, families.small_networks(),
                   claim="a network draws", examples=5)
    assert torch.equal(torch.rand(3), expected)
    assert list(tmp_path.iterdir()) == []  # no .hypothesis folder in the page's folder


def test_a_quote_must_name_a_sentence():
    with pytest.raises(ValueError, match="too short"):
        check_close(1.0, 1.0, quote="it works")
    with pytest.raises(TypeError, match="say what the check proves"):
        check_close(1.0, 1.0)


def test_a_check_inside_a_property_publishes_no_record_of_its_own(monkeypatch):
    # Published per member, the inner checks' records would stand for the sentence
    # beside the property's, on the property's line (the reveal showed them so).
    import IPython
    import IPython.display
    import oracle

    published = []
    monkeypatch.setenv(oracle.PUBLISHED_WHEN, "1")
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display",
                        lambda data, raw: published.append(data[oracle.CLAIM_MIMETYPE]["check"]))

    def doubling_doubles(x):
        check_close(2 * x, x + x, quote="twice a number is the number added to itself")
    check_property(doubling_doubles, st.integers(0, 9), examples=5,
                   quote="twice a number is the number added to itself")
    assert published == ["check_property"]


@SAMPLE
@given(families.shaped_maps())
def test_a_shaped_map_has_its_closed_form_jacobian_in_y_shape_plus_x_shape(f):
    from oracle import finite_difference_jacobian

    x = f.point()
    check_close(f.jacobian(x), finite_difference_jacobian(f, x), f"{f}: cos(A x) A")


def test_shaped_maps_hold_0_d_and_multi_dimensional_inputs_and_outputs():
    assert member(families.shaped_maps(), lambda f: f.x_shape == () and len(f.y_shape) >= 2)
    assert member(families.shaped_maps(), lambda f: len(f.x_shape) >= 2 and f.y_shape == ())


def test_a_labelled_range_is_named_in_the_reveal_and_the_shared_range_is_not():
    """families.labelled names what a range's members are; Hypothesis caches
    st.integers(2, 5), so naming it in place would rename every other use."""
    from oracle import family_name

    named = families.labelled(st.integers(2, 5), "batch sizes from 2 to 5")
    assert family_name(named) == "batch sizes from 2 to 5"
    assert family_name(st.integers(2, 5)) == "integers from 2 to 5"
    from hypothesis.errors import NoSuchExample

    assert member(named, lambda n: n == 5) == 5  # the same members as the range
    with pytest.raises(NoSuchExample):
        member(named, lambda n: n > 5)
