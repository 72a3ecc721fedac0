"""BatchNorm in training mode under ``vmap``: when per-sample calls raise, and what
runs instead.

``vmap(grad(loss))`` calls the model on one sample at a time (``row[None]``).
BatchNorm in training mode then raises when its running statistics are the
module's own buffers (their in-place update "would mutate a captured Tensor"),
and on rows (``BatchNorm1d``) in any case: one value per channel. An image model
(``BatchNorm2d``) given one copy of the buffers per sample (``in_dims=0``), or built
with ``track_running_stats=False``, runs as long as each BatchNorm2d sees more than
one pixel per channel (on 1×1 images it raises, as on rows), each image normalized
by its own statistics: the gradients are those of each image run alone, not of the
batch's training loss. ``vmap(jacrev(model))`` raises on any of these models, whose
training forward mixes the samples (no per-sample Jacobian exists).

``captured_change_refused_unless_vmap`` draws the in-place changes of a captured
tensor that ``torch.func`` refuses, and those it runs: the batch-norm kernel's
own update of running statistics, and under ``vmap`` a change the same for
every sample.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from families import BATCH_SIZES, DTYPE, SEEDS, _vector, labelled, named, seeded
from hypothesis import strategies as st
from oracle import check_close

OWN, COPIES, UNTRACKED = "the module's own", "a copy per sample (in_dims=0)", "not tracked"


@dataclass(frozen=True)
class BatchNormSetting:
    """A model with BatchNorm in training mode, its batch, and its statistics."""

    name: str
    model: torch.nn.Module = field(repr=False, compare=False)
    inputs: torch.Tensor = field(repr=False, compare=False)
    layer: str
    stats: str
    pixels: int = 16  # per channel of an image a BatchNorm2d sees (1: 1×1 images)

    def __repr__(self) -> str:
        return self.name


def _model(layer: str, batch: int, tracked: bool, seed: int, side: int = 4):
    with seeded(seed):
        if layer == "BatchNorm1d":
            model = torch.nn.Sequential(
                torch.nn.Linear(3, 8), torch.nn.Tanh(),
                torch.nn.BatchNorm1d(8, track_running_stats=tracked), torch.nn.Linear(8, 1))
            return model.to(DTYPE).train(), _vector(seed, batch, 3)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3, track_running_stats=tracked),
            torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(3 * side * side, 1))
        return model.to(DTYPE).train(), _vector(seed, batch, 2, side, side)


def _settings(draw, stats: tuple[str, ...], sides: tuple[int, ...] = (4,)) -> BatchNormSetting:
    layer, kept, batch, seed = (draw(st.sampled_from(["BatchNorm1d", "BatchNorm2d"])),
                                draw(st.sampled_from(stats)), draw(BATCH_SIZES), draw(SEEDS))
    side = draw(st.sampled_from(sides)) if layer == "BatchNorm2d" and len(sides) > 1 else sides[0]
    model, inputs = _model(layer, batch, kept != UNTRACKED, seed, side)
    shape = "rows" if layer == "BatchNorm1d" else f"{side}×{side} images"
    return BatchNormSetting(f"{layer} (train) on {batch} {shape}, running statistics {kept}",
                            model, inputs, layer, kept, side * side)


@named("models with BatchNorm1d or BatchNorm2d (on 4×4 or 1×1 images) in training mode, "
       "running statistics the module's own, a copy per sample or not tracked")
@st.composite
def batchnorm_statistics_settings(draw) -> BatchNormSetting:
    """Rows or images (of 4×4 or 1×1 pixels) through a train-mode BatchNorm, whose
    running statistics are the module's buffers, one copy of them per sample, or none."""
    return _settings(draw, (OWN, COPIES, UNTRACKED), sides=(4, 1))


@named("models with BatchNorm1d or BatchNorm2d in training mode, running statistics "
       "tracked or not")
@st.composite
def train_batchnorm_models(draw) -> BatchNormSetting:
    """Rows or images through a train-mode BatchNorm, tracking statistics or not."""
    return _settings(draw, (OWN, UNTRACKED))


@named("models with BatchNorm1d or BatchNorm2d (on 4×4 or 1×1 images) in training mode, "
       "running statistics the module's own (the default)")
@st.composite
def tracked_batchnorm_models(draw) -> BatchNormSetting:
    """Rows or images through a train-mode BatchNorm that keeps its running statistics."""
    return _settings(draw, (OWN,), sides=(4, 1))


def per_sample_gradients(setting: BatchNormSetting, batch_of_one: bool = True,
                         chunk_size: int | None = None) -> dict[str, torch.Tensor]:
    """``vmap(grad(loss), chunk_size=chunk_size)`` over the batch, one ``row[None]``
    per call (the bare ``row`` unless ``batch_of_one``), with the module's buffers
    captured or (``COPIES``) passed one copy per sample. ``setting`` may also be a
    ``reader_settings.Setting`` (no ``stats``: buffers captured)."""
    model, batch = setting.model, setting.inputs.detach()
    mapped = batch[:, None] if batch_of_one else batch  # each call gets row[None], or row
    params = {name: p.detach() for name, p in model.named_parameters()}
    if getattr(setting, "stats", None) == COPIES:
        copies = {name: b.expand(len(batch), *b.shape).clone() for name, b in model.named_buffers()}
        loss = lambda p, b, row: torch.func.functional_call(model, (p, b), (row,)).sum()  # noqa: E731
        return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0),
                               chunk_size=chunk_size)(params, copies, mapped)
    loss = lambda p, row: torch.func.functional_call(model, p, (row,)).sum()  # noqa: E731
    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0), chunk_size=chunk_size)(params, mapped)


BARE = {"BatchNorm1d": "expected 2D or 3D input", "BatchNorm2d": "expected 4D input"}


def raises_on_the_bare_sample(setting: BatchNormSetting) -> bool:
    """Mapped over the bare samples (``row``, not ``row[None]``), every setting raises:
    BatchNorm checks the number of dimensions before anything else."""
    try:
        per_sample_gradients(setting, batch_of_one=False)
    except (RuntimeError, ValueError) as error:
        return BARE[setting.layer] in str(error)
    return False


REFUSALS = {OWN: "would mutate a captured Tensor", "BatchNorm1d": "Expected more than 1 value per channel"}


def _refusal(setting: BatchNormSetting) -> str | None:
    """What a batch of one raises with: the module's own buffers first, then one
    value per channel (rows, or 1×1 images), else nothing."""
    one_value = "BatchNorm1d" if setting.pixels == 1 else setting.layer
    return REFUSALS.get(setting.stats) or REFUSALS.get(one_value)


def raises_unless_images_with_copies_or_untracked(setting: BatchNormSetting) -> bool:
    """The per-sample gradients raise with the module's own buffers, and on rows or
    1×1 images in any case; otherwise each is the gradient of its image run alone
    (normalized by its own statistics), and their sum is not the batch's
    training-loss gradient."""
    refusal = _refusal(setting)
    try:
        grads = per_sample_gradients(setting)
    except (RuntimeError, ValueError) as error:
        return refusal is not None and refusal in str(error)
    if refusal is not None:
        return False
    batch = setting.inputs.detach()
    for i, image in enumerate(batch):
        alone = copy.deepcopy(setting.model)
        alone(image[None]).sum().backward()
        for name, p in alone.named_parameters():
            check_close(grads[name][i], p.grad, f"{setting}: image {i} alone, {name}")
    whole = copy.deepcopy(setting.model)
    whole(batch).sum().backward()
    return any(not torch.allclose(grads[name].sum(0), p.grad, atol=1e-6)
               for name, p in whole.named_parameters())


def mixes_samples_and_vmap_jacrev_raises(setting: BatchNormSetting) -> bool:
    """Each output of the training forward reads every sample (no per-sample
    Jacobian), and ``vmap(jacrev(model), randomness="different")`` raises."""
    model, batch = copy.deepcopy(setting.model), setting.inputs.detach()
    whole = torch.autograd.functional.jacobian(model, batch)  # (B, 1, B, ...)
    others = [whole[i, :, j] for i in range(len(batch)) for j in range(len(batch)) if i != j]
    if torch.stack(others).abs().max() < 1e-6:
        return False
    try:
        torch.func.vmap(torch.func.jacrev(model), randomness="different")(batch)
    except ValueError as error:
        return "expected" in str(error) and "input" in str(error)
    return False


def row_none_jacobians_raise_unless_untracked_images(setting: BatchNormSetting) -> bool:
    """``vmap(jacrev(lambda row: model(row[None])[0]), randomness="different")`` in
    training mode raises with the module's own running statistics, and on rows in any
    case; an image model with ``track_running_stats=False`` runs, and each image's
    Jacobian is that of the image alone (its own statistics), not the batch's block."""
    model, batch = copy.deepcopy(setting.model), setting.inputs.detach()
    refusal = _refusal(setting)
    one_row = torch.func.jacrev(lambda row: model(row[None])[0])
    try:
        per_sample = torch.func.vmap(one_row, randomness="different")(batch)
    except (RuntimeError, ValueError) as error:
        return refusal is not None and refusal in str(error)
    if refusal is not None:
        return False
    for i, image in enumerate(batch):
        alone = torch.autograd.functional.jacobian(lambda x: model(x[None])[0], image)
        check_close(per_sample[i], alone, f"{setting}: image {i}'s Jacobian is the image's alone")
    whole = torch.autograd.functional.jacobian(model, batch)  # (B, 1, B, ...)
    blocks = torch.stack([whole[i, :, i] for i in range(len(batch))])
    return not torch.allclose(per_sample, blocks, atol=1e-6)


# -- In-place changes of a captured tensor under torch.func ---------------------------
# get-a-full-jacobian-or-hessian.md and differentiate-elementwise-functions-at-many-points.md
# draw these: the transforms refuse every change but the batch-norm kernel's own update
# of running statistics, a write through out= of a value that does not require grad and
# a torch._foreach_*_ write, and vmap refuses exactly the per-sample writes.

def optimizer_steps(params, optimizer: type[torch.optim.Optimizer], **options) -> None:
    """Two optimizer.step()s on params, as a training loop makes them (gradient 1, lr 1):
    the second reads the state (Adam's moments) that the first made."""
    params = list(params)
    for p in params:
        p.grad = torch.ones_like(p)
    step = optimizer(params, lr=1.0, **options).step
    step()
    step()


# Each change of a captured tensor b (or of a captured norm layer's running statistics,
# layers[name] in training mode, or of a captured Linear's nn.Parameters, layer["Linear"])
# made by f(t), called as a method, an operator, a function or with inplace=True;
# PER_SAMPLE: those whose written value
# depends on t, i.e. is batched under vmap; IN_KERNEL: updates made inside the
# batch-norm kernel, which only vmap refuses; OUT_WRITES: writes through out= and
# torch._foreach_*_ writes (SGD's and Adam's steps with foreach=True are some), which the
# derivative transforms run too.
IN_PLACE = {"add_": lambda b, t, layer: b.add_(1.0), "mul_": lambda b, t, layer: b.mul_(2.0),
            "zero_": lambda b, t, layer: b.zero_(),
            "item assignment": lambda b, t, layer: b.__setitem__(0, 5.0),
            "b += 1": lambda b, t, layer: b.__iadd__(1.0),
            "torch.relu_(b)": lambda b, t, layer: torch.relu_(b),
            "F.relu(b, inplace=True)": lambda b, t, layer: torch.nn.functional.relu(b, inplace=True),
            "torch.nn.init.ones_(b)": lambda b, t, layer: torch.nn.init.ones_(b),
            "add_ under no_grad": lambda b, t, layer: torch.no_grad()(b.add_)(1.0),
            "copy_": lambda b, t, layer: b.copy_(t),
            "copy_ of a detached value": lambda b, t, layer: b.copy_(t.detach()),
            "add_(t)": lambda b, t, layer: b.add_(t),
            "add_(t.detach())": lambda b, t, layer: b.add_(t.detach()),
            "mul_(t)": lambda b, t, layer: b.mul_(t),
            "item assignment of t[0]": lambda b, t, layer: b.__setitem__(0, t[0]),
            "BatchNorm1d in training mode": lambda b, t, layer: layer["BatchNorm1d"](torch.stack([t, 2 * t])),
            "BatchNorm1d with num_batches_tracked None":
                lambda b, t, layer: layer["uncounted"](torch.stack([t, 2 * t])),
            "InstanceNorm1d(track_running_stats=True) in training mode":
                lambda b, t, layer: layer["InstanceNorm1d"](torch.stack([t, 2 * t], -1)[None]),
            "F.batch_norm(x, b, var, training=True)": lambda b, t, layer: torch.nn.functional.batch_norm(
                torch.stack([t, 2 * t]), b, torch.ones(3), training=True),
            "torch.add(b, 1, out=b)": lambda b, t, layer: torch.add(b, 1.0, out=b),
            "torch.cumsum(ones, 0, out=b)": lambda b, t, layer: torch.cumsum(torch.ones(3), 0, out=b),
            "torch.add(t.detach(), 1, out=b)": lambda b, t, layer: torch.add(t.detach(), 1.0, out=b),
            "torch._foreach_add_([b], 1)": lambda b, t, layer: torch._foreach_add_([b], 1.0),
            "SGD([b], foreach=True).step()":
                lambda b, t, layer: optimizer_steps([b], torch.optim.SGD, foreach=True),
            "SGD([b], foreach=False).step()":
                lambda b, t, layer: optimizer_steps([b], torch.optim.SGD, foreach=False),
            "torch.optim.Adam(linear.parameters(), foreach=True).step()":
                lambda b, t, layer: optimizer_steps(layer["Linear"].parameters(), torch.optim.Adam,
                                                    foreach=True),
            # the CPU default is a for loop over the parameters: its param.addcdiv_ is refused
            "torch.optim.Adam(linear.parameters()).step(), the CPU default":
                lambda b, t, layer: optimizer_steps(layer["Linear"].parameters(), torch.optim.Adam)}
IN_KERNEL = {"BatchNorm1d with num_batches_tracked None",
             "InstanceNorm1d(track_running_stats=True) in training mode",
             "F.batch_norm(x, b, var, training=True)"}
OUT_WRITES = {"torch.add(b, 1, out=b)", "torch.cumsum(ones, 0, out=b)", "torch.add(t.detach(), 1, out=b)",
              "torch._foreach_add_([b], 1)", "SGD([b], foreach=True).step()",
              "torch.optim.Adam(linear.parameters(), foreach=True).step()"}
PER_SAMPLE = {"copy_", "copy_ of a detached value", "add_(t)", "add_(t.detach())", "mul_(t)",
              "item assignment of t[0]", "BatchNorm1d in training mode",
              "torch.add(t.detach(), 1, out=b)"} | IN_KERNEL
GRAD_TRANSFORM_REFUSAL = "During a grad (vjp, jvp, grad, etc) transform, the function "
in_place_changes = labelled(st.sampled_from(sorted(IN_PLACE)), "in-place changes of a captured tensor")
# Each transform the sentence names, run as a reader calls it on a changing f.
_ones = torch.ones(3)
RUN_TRANSFORM = {
    "grad": lambda f: torch.func.grad(lambda t: f(t).sum())(_ones),
    "vjp": lambda f: torch.func.vjp(f, _ones)[1](_ones),
    "jvp": lambda f: torch.func.jvp(f, (_ones,), (_ones,)),
    "jacrev": lambda f: torch.func.jacrev(f)(_ones),
    "jacfwd": lambda f: torch.func.jacfwd(f)(_ones),
    "hessian": lambda f: torch.func.hessian(lambda t: f(t).sum())(_ones),
    "vmap": lambda f: torch.func.vmap(f)(torch.ones(2, 3)),
}
func_transforms = labelled(st.sampled_from(sorted(RUN_TRANSFORM)), "torch.func transforms, vmap included")


def run_captured_change(change: str, transform: str) -> tuple[RuntimeError | None, bool]:
    """Run ``transform`` on an f(t) that makes ``change`` (a name in ``IN_PLACE``) to a
    captured tensor, to captured norm layers or to a captured Linear: the error it raised
    (None if it ran), and whether the tensor, the Linear's weight or the layers' running
    means changed."""
    captured = torch.zeros(3)
    layer = {"BatchNorm1d": torch.nn.BatchNorm1d(3), "uncounted": torch.nn.BatchNorm1d(3),
             "InstanceNorm1d": torch.nn.InstanceNorm1d(3, track_running_stats=True),
             "Linear": torch.nn.Linear(3, 3)}
    layer["uncounted"].num_batches_tracked = None

    def statistics():
        return torch.cat([captured, layer["Linear"].weight.detach().flatten()]
                         + [m.running_mean for m in layer.values() if hasattr(m, "running_mean")])
    before = statistics().clone()

    def changing(t):
        IN_PLACE[change](captured, t, layer)
        return t * 2
    try:
        RUN_TRANSFORM[transform](changing)
    except RuntimeError as error:
        return error, not torch.equal(statistics(), before)
    return None, not torch.equal(statistics(), before)


def captured_change_refused_unless_vmap(change: str, transform: str) -> bool:
    """``run_captured_change``: vmap refuses exactly the per-sample writes; grad, vjp,
    jvp, jacrev, jacfwd and hessian refuse every change but the running-statistics
    update made inside the batch-norm kernel, the writes through out= and the
    torch._foreach_*_ writes, which run and change the statistics or the tensor silently."""
    error, changed = run_captured_change(change, transform)
    runs = IN_KERNEL | OUT_WRITES  # what the derivative transforms let through
    if error is not None:
        expected = (("inplace arithmetic", "doesn't match the broadcast shape",
                     "Batch norm got a batched tensor", "Batching rule not implemented for aten::add.out")
                    if transform == "vmap"
                    else ("that would mutate a captured Tensor",))
        assert any(words in str(error) for words in expected), (change, transform, str(error)[:80])
        assert transform == "vmap" or str(error).startswith(GRAD_TRANSFORM_REFUSAL), str(error)[:80]
        if change == "BatchNorm1d in training mode" and transform != "vmap":
            assert "(aten::add_.Tensor)" in str(error), str(error)  # num_batches_tracked.add_(1)
        # vmap refuses exactly the changes that write a per-sample (batched) value;
        # the others refuse every change but those inside the batch-norm kernel, out= and foreach
        return change in PER_SAMPLE if transform == "vmap" else change not in runs
    if change in runs:  # ran: the running statistics or the tensor changed, silently
        assert changed, (change, transform, "the running statistics or the tensor did not change")
        return transform != "vmap" or change not in PER_SAMPLE
    return transform == "vmap" and change not in PER_SAMPLE

def main() -> None:
    """Check both properties on a few members, and show the old glossary sentence
    ("raises under vmap", whatever the statistics) fail on a BatchNorm2d member."""
    from families import members

    settings = members(batchnorm_statistics_settings(), 8)
    assert all(raises_unless_images_with_copies_or_untracked(s) for s in settings)
    assert all(mixes_samples_and_vmap_jacrev_raises(s) for s in members(train_batchnorm_models(), 4))
    runs = [s for s in settings if s.layer == "BatchNorm2d" and s.pixels > 1 and s.stats != OWN]
    assert runs, "draw an image model with copies or untracked statistics"
    per_sample_gradients(runs[0])
    assert all(captured_change_refused_unless_vmap(change, "grad") for change in IN_PLACE)
    print(f"holds on {len(settings)} members; runs under vmap: {runs[0]}")


if __name__ == "__main__":
    main()
