"""The reader-setting families (snippets/reader_settings.py): each member is the
setup its family names, built fast, and each family holds the members that break
the toy-only recipes (several features, images, a term besides the one studied)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "snippets"))
import families  # noqa: E402
import reader_settings as rs  # noqa: E402

SAMPLE = settings(families.CLAIM_SETTINGS, max_examples=15)


def member(strategy, condition):
    """A member of the family that satisfies ``condition`` (fails if there is none)."""
    return find(strategy, lambda drawn: bool(condition(drawn)),
                settings=settings(families.CLAIM_SETTINGS, max_examples=300))


def one_score_per_sample(setting: rs.Setting) -> None:
    assert setting.inputs.is_leaf and setting.inputs.requires_grad
    assert setting.model(setting.inputs).shape == (setting.inputs.shape[0], 1)


@SAMPLE
@given(rs.multi_feature_inputs())
def test_a_multi_feature_member_maps_n_by_f_rows_to_one_output(setting):
    assert setting.inputs.ndim == 2 and 1 <= setting.inputs.shape[1] <= 3
    one_score_per_sample(setting)


def test_multi_feature_inputs_hold_one_and_several_features():
    for count in (1, 2, 3):
        assert member(rs.multi_feature_inputs(), lambda s, c=count: s.inputs.shape[1] == c)


@SAMPLE
@given(rs.image_batches())
def test_an_image_member_is_a_four_dimensional_batch_with_one_score_each(setting):
    assert setting.inputs.ndim == 4
    one_score_per_sample(setting)


def test_sample_batches_hold_rows_and_images():
    assert member(rs.sample_batches(), lambda s: s.inputs.ndim == 2)
    assert member(rs.sample_batches(), lambda s: s.inputs.ndim == 4 and s.inputs.shape[1] > 1)


@SAMPLE
@given(st.one_of(rs.train_mode_models(), rs.batch_norm_models()))
def test_a_train_mode_member_is_in_training_mode_with_its_layer(setting):
    assert setting.model.training
    assert any(type(layer).__name__ == setting.kind for layer in setting.model)
    assert setting.inputs.dim() in ((4,) if setting.kind == "BatchNorm2d" else (2, 3)), setting
    one_score_per_sample(setting)


def test_train_mode_models_hold_dropout_and_batchnorm():
    assert member(rs.train_mode_models(), lambda s: s.kind == "Dropout")
    assert member(rs.train_mode_models(), lambda s: s.kind == "BatchNorm1d")


def test_checkpointed_blocks_hold_train_mode_models_and_linear_blocks():
    for kind in ("Dropout", "BatchNorm1d", "Linear"):
        assert member(rs.checkpointed_blocks(), lambda s, kind=kind: s.kind == kind)
    assert member(rs.checkpointed_blocks(), lambda s: s.name.startswith("BatchNorm1d, Linear"))


@pytest.mark.parametrize("layers", [("Dropout", "BatchNorm1d"), ("BatchNorm1d",), ("Dropout",)])
def test_a_train_mode_label_names_only_the_layers_it_draws(layers):
    """A family narrowed to BatchNorm1d is not labelled "Dropout or BatchNorm"."""
    strategy = rs.train_mode_models(layers=layers)
    drawn = {setting.kind for setting in families.members(strategy, 30)}
    assert drawn == set(layers)
    assert {layer for layer in ("Dropout", "BatchNorm") if layer in strategy.family_name} == {
        layer for layer in ("Dropout", "BatchNorm") if any(kind.startswith(layer) for kind in drawn)}


@pytest.mark.parametrize("layer", [layer for layer in rs._TRAIN_LAYERS if layer not in rs.TRAIN_LAYERS])
def test_a_layer_drawn_by_name_keeps_running_statistics_as_named(layer):
    """The norm layers drawn only when named: the type and track_running_stats the name says."""
    strategy = rs.train_mode_models(layers=(layer,))
    assert layer in strategy.family_name
    setting = families.members(strategy, 1)[0]
    kind, _, flag = layer.partition("(track_running_stats=")
    [norm] = [module for module in setting.model.modules() if type(module).__name__ == kind]
    assert setting.kind == layer and setting.model.training
    assert norm.track_running_stats == (flag == "True)")
    one_score_per_sample(setting)


def test_batch_norm_models_hold_rows_and_image_batches():
    assert member(rs.batch_norm_models(), lambda s: s.kind == "BatchNorm1d")
    assert member(rs.batch_norm_models(), lambda s: s.kind == "BatchNorm2d")
    assert member(rs.batch_norm_models(), lambda s: s.kind == "BatchNorm1d" and s.inputs.dim() == 3)


@SAMPLE
@given(rs.multi_term_losses())
def test_a_loss_sums_its_distinct_terms(loss):
    assert 1 <= len(loss.terms) == len(set(loss.terms)) <= 3
    x = torch.tensor([0.5, -2.0], dtype=torch.float64)
    expected = sum(rs.LOSS_TERMS[term](x) for term in loss.terms)
    assert torch.allclose(loss(x), expected)


def test_multi_term_losses_can_hold_no_other_term():
    assert member(rs.multi_term_losses(terms=families.st.integers(0, 3)),
                  lambda loss: loss.terms == ())


def test_autocast_dtypes_are_float16_and_bfloat16():
    assert set(families.members(rs.autocast_dtypes(), 12)) == {torch.float16, torch.bfloat16}


def test_later_layers_cast_values_past_float16_back_where_a_linear_or_matmul_gets_them():
    assert set(families.members(rs.later_layers(), 30)) == set(rs.LATER_LAYERS)
    overflowed = {}
    for name, build in rs.LATER_LAYERS.items():
        out = torch.full((1, 2), 70000.0)
        with torch.autocast("cpu", dtype=torch.float16):
            for operation in build():
                out = operation(out)
        overflowed[name] = bool(out.isinf().any())
    assert overflowed == {"the loss": False, "a Linear": True, "a matmul": True, "`* 2`, then a Linear": True,
                          "a GELU, then a Linear": True, "a LayerNorm, then a Linear": False}


def test_amp_members_build_train_mode_mlps_and_losses_with_a_small_one():
    assert set(families.members(rs.amp_models(), 30)) == set(rs.AMP_MODELS)
    assert set(families.members(rs.amp_losses(), 30)) == set(rs.AMP_LOSSES)
    out, y = torch.randn(16, 3), torch.randn(16, 3)
    for name, build in rs.AMP_MODELS.items():
        model = build(4)
        assert model.training and model(torch.randn(16, 4)).shape == (16, 3), name
    values = {name: float(loss(out, y)) for name, loss in rs.AMP_LOSSES.items()}
    assert all(value > 0 for value in values.values()) and values["1e-6 * F.mse_loss"] < 1e-5, values

def test_a_compiled_member_runs_compiled_and_matches_its_eager_module():
    compiled = families.members(rs.compiled_modules(), 2)
    for setting in compiled:
        assert isinstance(setting.model, torch._dynamo.eval_frame.OptimizedModule)
        eager = setting.model._orig_mod
        assert torch.allclose(setting.model(setting.inputs), eager(setting.inputs))


def test_a_compiled_member_raises_once_dynamo_gave_up_on_sequential():
    # A torch.func transform of a compiled module runs it eagerly, with no error, and
    # from then on every nn.Sequential in the process: a member drawn after it is eager.
    setting = families.members(rs.compiled_modules(), 1)[0]
    try:
        torch.func.jacrev(setting.model)(setting.inputs)
        with pytest.raises(RuntimeError, match=r"no longer compiles .*torch\._dynamo\.reset\(\)"):
            families.members(rs.compiled_modules_with_inductor(), 1)
    finally:
        torch._dynamo.reset()
    assert families.members(rs.compiled_modules(), 2)  # compiled again


@SAMPLE
@given(rs.non_leaf_inputs())
def test_a_non_leaf_member_is_no_leaf_and_gets_no_grad(case):
    assert case.leaf.is_leaf and not case.tensor.is_leaf and case.tensor.grad_fn is not None
    case.tensor.sum().backward()
    assert case.leaf.grad is not None


def _seconds_of_cpu(run) -> float:
    start = time.thread_time()
    run()
    return time.thread_time() - start


@pytest.mark.parametrize("factory", [f for f in rs.FAMILIES if f is not rs.compiled_modules],
                         ids=lambda f: f.__name__)
def test_members_are_built_in_a_few_milliseconds(factory):
    drawn = 10
    # Hypothesis's and torch's first-call costs: the same draws once before (one member
    # left some of its branches' first calls to the timed run, 31 ms once under load).
    families.members(factory(), drawn)
    # CPU time of this thread, not wall time (a busy machine stretches it) nor the
    # process's (torch's worker threads spin while they wait for a core).
    # The fastest of three: a loaded machine only adds (28 to 31 ms a member once, at load 9).
    per_member = min(_seconds_of_cpu(lambda: families.members(factory(), drawn))
                     for _ in range(3)) / drawn
    assert per_member < 0.01, f"{factory.family_name}: {per_member * 1e3:.1f} ms of CPU a member"
