"""The settings readers paste a recipe into, as families ``check_property`` draws from.

A how-to recipe shown on a toy (one input feature, a 2-D batch, float32, one loss
term) is checked here in the setups readers actually have: inputs with several
features ``(x, t)``, image batches ``(B, C, H, W)``, models with Dropout or
BatchNorm in training mode, losses with several terms, float16 and bfloat16
autocast, a module under ``torch.compile(backend="aot_eager")`` (or inductor), and
inputs that are not leaves. Each member is a small real setup, built in a few milliseconds
(a compiled module compiles on its first call, once per process), named as a
failure prints it, with its seed (the reveal counts members by name, so two draws
that differ only in their seed count as two). Like ``families.py``, members are made from drawn seeds in
generators of their own, never from torch's global random state.

Run this file to see a few members of each family; ``tests/test_reader_settings.py``
checks that every member is what its family says.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from families import BATCH_SIZES, DTYPE, SEEDS, _vector, members, named, seeded
from hypothesis import strategies as st

FEATURE_COUNTS = st.integers(1, 3)  # one input feature, and the (x, t) and (x, y, t) of a PINN
TERM_COUNTS = st.integers(1, 3)  # terms beside the one under study


@dataclass(frozen=True)
class Setting:
    """A model and the batch it takes, named as a counterexample prints it."""

    name: str
    model: torch.nn.Module = field(repr=False, compare=False)
    inputs: torch.Tensor = field(repr=False, compare=False)  # a leaf that requires grad
    kind: str

    def __repr__(self) -> str:
        return self.name


def _mlp(features: int, *middle: torch.nn.Module, outputs: int = 1, seed: int = 0,
         width: int = 8) -> torch.nn.Sequential:
    """Linear · Tanh · [middle] · Linear, in float64 and training mode."""
    with seeded(seed):
        return torch.nn.Sequential(torch.nn.Linear(features, width), torch.nn.Tanh(),
                                   *middle, torch.nn.Linear(width, outputs)).to(DTYPE)


def _leaf(seed: int, *shape: int) -> torch.Tensor:
    return _vector(seed, *shape).requires_grad_(True)


FEATURE_NAMES = {1: "one feature x", 2: "two features (x, t)", 3: "three features (x, y, t)"}


def _feature_words(features: st.SearchStrategy[int] = FEATURE_COUNTS) -> str:
    """The family's name for the feature counts ``features`` draws (``st.just(n)``
    or ``st.integers(a, b)``, read off its repr): a one-feature family is not
    called "several features"."""
    shown = repr(features)
    if just := re.fullmatch(r"just\((\d+)\)", shown):
        counts = [int(just[1])]
    elif span := re.fullmatch(r"integers\(min_value=(\d+), max_value=(\d+)\)", shown):
        counts = list(range(int(span[1]), int(span[2]) + 1))
    else:
        return f"tanh MLPs on inputs (4, F), F drawn from {shown}"
    words = [FEATURE_NAMES.get(count, f"{count} features") for count in counts]
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    return f"tanh MLPs on inputs with {listed}"


@named(_feature_words)
@st.composite
def multi_feature_inputs(draw, features: st.SearchStrategy[int] = FEATURE_COUNTS
                         ) -> Setting:
    """A smooth MLP u = net(x, t, ...) on a batch (N, F): one output per sample.
    Named with its seed: draws with other seeds are other networks and inputs."""
    count, seed = draw(features), draw(SEEDS)
    return Setting(f"tanh MLP on (4, {count}) inputs, seed {seed}", _mlp(count, seed=seed),
                   _leaf(seed, 4, count), "features")


@named("image batches (B, C, H, W)")
@st.composite
def image_batches(draw) -> Setting:
    """A conv critic scoring each image of a (B, C, H, W) batch with one number."""
    batch, channels, side, seed = (draw(BATCH_SIZES), draw(st.integers(1, 3)),
                                   draw(st.integers(3, 6)), draw(SEEDS))
    with seeded(seed):
        critic = torch.nn.Sequential(
            torch.nn.Conv2d(channels, 2, 3, padding=1), torch.nn.Tanh(), torch.nn.Flatten(),
            torch.nn.Linear(2 * side * side, 1)).to(DTYPE)
    return Setting(f"conv critic on ({batch}, {channels}, {side}, {side}) images, seed {seed}", critic,
                   _leaf(seed, batch, channels, side, side), "images")


@named("batches of vectors and of images")
def sample_batches() -> st.SearchStrategy[Setting]:
    """A critic with its batch: rows (N, F) or images (B, C, H, W)."""
    return st.one_of(multi_feature_inputs(), image_batches())


_TRAIN_LAYERS = {
    "Dropout": lambda width: torch.nn.Dropout(0.5),
    "BatchNorm1d": torch.nn.BatchNorm1d,
    # Drawn only when asked for by name: norm layers that keep no running statistics,
    # or keep them without BatchNorm's counter of batches (InstanceNorm, on (N, C, 2)).
    "BatchNorm1d(track_running_stats=False)":
        lambda width: torch.nn.BatchNorm1d(width, track_running_stats=False),
    "InstanceNorm1d(track_running_stats=True)": lambda width: torch.nn.Sequential(
        torch.nn.Unflatten(1, (width // 2, 2)),
        torch.nn.InstanceNorm1d(width // 2, track_running_stats=True), torch.nn.Flatten()),
}
TRAIN_LAYERS = ("Dropout", "BatchNorm1d")  # what train_mode_models draws unless told


def _train_words(layers: tuple[str, ...] = TRAIN_LAYERS) -> str:
    return f"MLPs with {' or '.join(layers)} in training mode"


@named(_train_words)
@st.composite
def train_mode_models(draw, layers: tuple[str, ...] = TRAIN_LAYERS) -> Setting:
    """An MLP with a Dropout or a BatchNorm1d layer (or, named in ``layers``, any
    layer of ``_TRAIN_LAYERS``), in training mode, and its batch."""
    layer, batch, features, seed = (draw(st.sampled_from(layers)), draw(BATCH_SIZES),
                                    draw(st.integers(2, 4)), draw(SEEDS))
    model = _mlp(features, _TRAIN_LAYERS[layer](8), seed=seed).train()
    return Setting(f"MLP with {layer} (train) on ({batch}, {features}), seed {seed}", model,
                   _leaf(seed, batch, features), layer)


@named("MLPs with Dropout or BatchNorm1d in training mode, and a Linear alone or after a "
       "BatchNorm1d (train)")
@st.composite
def checkpointed_blocks(draw) -> Setting:
    """``train_mode_models``, and blocks with no nonlinearity between input and weights:
    a gradient penalty's backward through them unpacks none of their saved tensors."""
    if draw(st.booleans()):
        return draw(train_mode_models())
    norm, batch, features, seed = (draw(st.booleans()), draw(BATCH_SIZES),
                                   draw(st.integers(2, 4)), draw(SEEDS))
    with seeded(seed):
        block = torch.nn.Sequential(*[torch.nn.BatchNorm1d(features)] * norm,
                                    torch.nn.Linear(features, 1)).to(DTYPE).train()
    kind = "BatchNorm1d" if norm else "Linear"
    return Setting(f"{'BatchNorm1d, ' * norm}Linear (train) on ({batch}, {features}), seed {seed}", block,
                   _leaf(seed, batch, features), kind)


def _batch_norm_words(sides: tuple[int, int] = (3, 6)) -> str:
    return ("models with BatchNorm in training mode: BatchNorm1d on rows (N, F) and on "
            "sequences (N, C, L), BatchNorm2d on image batches (B, C, H, W)"
            + ("" if sides == (3, 6) else f", L and H = W from {sides[0]} to {sides[1]}"))


@named(_batch_norm_words)
@st.composite
def batch_norm_models(draw, sides: tuple[int, int] = (3, 6)) -> Setting:
    """BatchNorm as readers use it: BatchNorm1d in an MLP, or after a Conv1d on
    sequences, or BatchNorm2d after a conv on images. With the default sides (3 to
    6) a sequence's or an image's batch of one still holds L or H * W values per
    channel; ``sides=(1, 6)`` also draws L = 1 and 1x1 images, which hold one."""
    layout = draw(st.sampled_from(("rows", "images", "sequences")))
    if layout == "rows":
        return draw(train_mode_models(layers=("BatchNorm1d",)))
    dims = 1 if layout == "sequences" else 2  # L, or H and W
    conv, norm = ((torch.nn.Conv1d, torch.nn.BatchNorm1d) if dims == 1
                  else (torch.nn.Conv2d, torch.nn.BatchNorm2d))
    batch, channels, side, seed = (draw(BATCH_SIZES), draw(st.integers(1, 3)),
                                   draw(st.integers(*sides)), draw(SEEDS))
    with seeded(seed):
        model = torch.nn.Sequential(
            conv(channels, 2, 3, padding=1), norm(2), torch.nn.Tanh(), torch.nn.Flatten(),
            torch.nn.Linear(2 * side**dims, 1)).to(DTYPE).train()
    shape = (batch, channels) + (side,) * dims
    return Setting(f"conv with {norm.__name__} (train) on {shape} {layout}, seed {seed}",
                   model, _leaf(seed, *shape), norm.__name__)


def batch_norm_models_with_one_value() -> st.SearchStrategy[Setting]:
    """``batch_norm_models`` with sides 2 to 4, and the length-1 sequences and 1x1
    images its first 20 draws with side 1 give: a batch of one holds one value
    per channel there."""
    from families import labelled, members
    one_value = [s for s in members(batch_norm_models(sides=(1, 1)), 20) if s.inputs.dim() > 2]
    assert {s.inputs.dim() for s in one_value} == {3, 4}, one_value  # sequences and images
    return labelled(st.one_of(st.sampled_from(one_value), batch_norm_models(sides=(2, 4))),
                    "models with BatchNorm in training mode: BatchNorm1d on rows (N, F) and on "
                    "sequences (N, C, L), BatchNorm2d on images (B, C, H, W); L = 1 and 1x1 "
                    "images among them")


@dataclass(frozen=True)
class Loss:
    """A loss of several terms, each a scalar function of the same tensor."""

    terms: tuple[str, ...]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        terms = {**LOSS_TERMS, **LINEAR_LOSS_TERMS}
        return sum((terms[term](x) for term in self.terms), torch.zeros((), dtype=x.dtype))

    def __repr__(self) -> str:
        return " + ".join(self.terms) or "no other term"


LOSS_TERMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "(x**2).sum()": lambda x: (x**2).sum(),
    "x.sin().sum()": lambda x: x.sin().sum(),
    "x.abs().mean()": lambda x: x.abs().mean(),
    "(x - 1).exp().mean()": lambda x: (x - 1).exp().mean(),
}


@named("losses with several terms")
@st.composite
def multi_term_losses(draw, terms: st.SearchStrategy[int] = TERM_COUNTS) -> Loss:
    """Terms a reader adds next to the one under study (a data term, a regulariser)."""
    return Loss(tuple(draw(st.permutations(sorted(LOSS_TERMS)))[: draw(terms)]))


LINEAR_LOSS_TERMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x.sum()": lambda x: x.sum(),
    "3 * x.mean()": lambda x: 3 * x.mean(),
}


@named("losses with several terms, linear ones (x.sum(), 3 * x.mean()) among them")
@st.composite
def losses_with_linear_terms(draw, terms: st.SearchStrategy[int] = TERM_COUNTS) -> Loss:
    """``multi_term_losses``' terms and terms linear in x with constant coefficients,
    whose gradient does not depend on x. Half the draws take linear terms only, so a
    rule that tells the two kinds apart meets both (a mixed pool rarely draws that case)."""
    linear_only = draw(st.booleans())
    pool = sorted(LINEAR_LOSS_TERMS) + ([] if linear_only else sorted(LOSS_TERMS))
    return Loss(tuple(draw(st.permutations(pool))[: draw(terms)]))


def _logits_loss(scores: torch.Tensor, label: float) -> torch.Tensor:
    return torch.nn.functional.binary_cross_entropy_with_logits(scores, torch.full_like(scores, label))


# A GAN's two losses, from the discriminator's scores: (D's loss on real and fake scores, G's loss
# on fake scores). Two losses of one forward pass G(z) that must not both train G.
GAN_LOSSES: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                            Callable[[torch.Tensor], torch.Tensor]]] = {
    "binary cross-entropy": (lambda real, fake: _logits_loss(real, 1.0) + _logits_loss(fake, 0.0),
                             lambda fake: _logits_loss(fake, 1.0)),
    "Wasserstein": (lambda real, fake: fake.mean() - real.mean(), lambda fake: -fake.mean()),
}


def generator_for(setting: Setting, seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """A GAN's generator G for the discriminator ``setting.model`` (a Linear on the last
    dimension of its batch), and the noise z that G maps to a batch of fakes."""
    width = setting.inputs.shape[-1]
    with seeded(seed):
        generator = torch.nn.Linear(width, width).to(DTYPE)
    return generator, _vector(seed, *setting.inputs.shape)


AUTOCAST_DTYPES = (torch.float16, torch.bfloat16)


@named("float16 and bfloat16 autocast")
def autocast_dtypes() -> st.SearchStrategy[torch.dtype]:
    """The dtypes ``torch.autocast`` runs a mixed-precision forward pass in."""
    return st.sampled_from(AUTOCAST_DTYPES)


_nn = torch.nn
# MLPs on n features, in training mode, that an AMP loop (CPU autocast) trains.
AMP_MODELS: dict[str, Callable[[int], torch.nn.Module]] = {
    "Linear, Tanh, Linear": lambda n: _nn.Sequential(_nn.Linear(n, 8), _nn.Tanh(), _nn.Linear(8, 3)),
    "Linear, LayerNorm, Tanh, Linear": lambda n: _nn.Sequential(_nn.Linear(n, 8), _nn.LayerNorm(8),
                                                                _nn.Tanh(), _nn.Linear(8, 3)),
    "Linear, ReLU, Dropout, Linear": lambda n: _nn.Sequential(_nn.Linear(n, 8), _nn.ReLU(),
                                                              _nn.Dropout(0.2), _nn.Linear(8, 3)),
    "Linear, BatchNorm1d, ReLU, Linear": lambda n: _nn.Sequential(_nn.Linear(n, 8), _nn.BatchNorm1d(8),
                                                                  _nn.ReLU(), _nn.Linear(8, 3)),
}
# Losses of (N, 3) float32 outputs and targets; the last one's gradients are small
# enough to round to 0 in float16 without a loss scale.
AMP_LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "squared error, summed": lambda out, y: ((out - y) ** 2).sum(),
    "F.mse_loss": lambda out, y: torch.nn.functional.mse_loss(out, y),
    "F.cross_entropy": lambda out, y: torch.nn.functional.cross_entropy(out, y.argmax(-1)),
    "F.mse_loss + F.l1_loss": lambda out, y: (torch.nn.functional.mse_loss(out, y)
                                              + torch.nn.functional.l1_loss(out, y)),
    "1e-6 * F.mse_loss": lambda out, y: 1e-6 * torch.nn.functional.mse_loss(out, y),
}


@named("MLPs with Tanh, LayerNorm, Dropout, BatchNorm1d")
def amp_models() -> st.SearchStrategy[str]:
    """Names of ``AMP_MODELS`` (``AMP_MODELS[name](features)`` builds one)."""
    return st.sampled_from(sorted(AMP_MODELS))


@named("sum of squares, F.mse_loss, F.cross_entropy, F.mse_loss + F.l1_loss, 1e-6 * F.mse_loss")
def amp_losses() -> st.SearchStrategy[str]:
    """Names of ``AMP_LOSSES``, one of them small (``AMP_LOSSES[name](out, y)``)."""
    return st.sampled_from(sorted(AMP_LOSSES))

def _small_linear(features: int = 2) -> torch.nn.Linear:
    """A Linear to one output with weights 1e-3: it brings values of 70000 back to 140."""
    layer = torch.nn.Linear(features, 1)
    with torch.no_grad():
        layer.weight.fill_(1e-3)
        layer.bias.zero_()
    return layer


# What takes a (1, 2) activation next, as fresh layers: a float32 value past float16's
# range that reaches a Linear or a matmul under float16 autocast is cast back and overflows.
LATER_LAYERS: dict[str, Callable[[], list[Callable[[torch.Tensor], torch.Tensor]]]] = {
    "the loss": lambda: [],
    "a Linear": lambda: [_small_linear()],
    "a matmul": lambda: [lambda t: t @ torch.full((2, 1), 1e-3)],
    "`* 2`, then a Linear": lambda: [lambda t: t * 2, _small_linear()],
    "a GELU, then a Linear": lambda: [torch.nn.GELU(), _small_linear()],
    "a LayerNorm, then a Linear": lambda: [torch.nn.LayerNorm(2), _small_linear()],
}


@named("what takes the activation: the loss, a Linear, a matmul, or `* 2`, a GELU or a "
       "LayerNorm before a Linear")
def later_layers() -> st.SearchStrategy[str]:
    """Names of ``LATER_LAYERS``: a recipe for one operation is read in a model where
    others follow it (``LATER_LAYERS[name]()`` builds them afresh)."""
    return st.sampled_from(list(LATER_LAYERS))


@functools.cache
def _compiled(features: int, seed: int, backend: str = "aot_eager", layer: str = "") -> torch.nn.Module:
    # Once per process: every call of a new module would compile again.
    if layer == "BatchNorm2d":  # on (4, features, 4, 4) images
        with seeded(seed):
            model = torch.nn.Sequential(
                torch.nn.Conv2d(features, 2, 3, padding=1), torch.nn.BatchNorm2d(2), torch.nn.Tanh(),
                torch.nn.Flatten(), torch.nn.Linear(2 * 4 * 4, 1)).to(DTYPE)
    else:
        model = _mlp(features, *([_TRAIN_LAYERS[layer](8)] if layer else []), seed=seed)
    return torch.compile(model.train(), backend=backend)


def _compiled_setting(name: str, features: int, seed: int, backend: str = "aot_eager",
                      layer: str = "") -> Setting:
    """The member, once a call on a probe leaf shows it still runs compiled: after
    dynamo gives up on a frame (a torch.func transform of a compiled module does, with
    no error), nn.Sequential's forward runs eagerly in the whole process, and a check
    would prove on eager behaviour what the site says of compiled modules."""
    model = _compiled(features, seed, backend, layer)
    shape = (4, features, 4, 4) if layer == "BatchNorm2d" else (4, features)
    with torch.enable_grad():
        grad_fn = model(_leaf(seed, *shape)).grad_fn
    if "CompiledFunction" not in type(grad_fn).__name__:
        raise RuntimeError(
            f"{name}: dynamo no longer compiles this module in this process (its output's "
            f"grad_fn is {type(grad_fn).__name__}), e.g. after a torch.func transform of a "
            "compiled module; call torch._dynamo.reset() before the check")
    return Setting(name, model, _leaf(seed, *shape), layer or "compiled")


@named('modules under torch.compile(backend="aot_eager")')
@st.composite
def compiled_modules(draw) -> Setting:
    """A small MLP compiled with aot_eager (autograd's compiled path, no codegen)."""
    features, seed = draw(st.sampled_from([(2, 0), (3, 1)]))
    return _compiled_setting(f"compiled MLP on (4, {features})", features, seed)


def _compiled_words(batch_norm: bool = False) -> str:
    return ('modules under torch.compile: backend "aot_eager", and the default, "inductor"'
            + ('; under aot_eager, BatchNorm1d on rows and BatchNorm2d on images (4, 2, 4, 4) '
               'in training mode' if batch_norm else ""))


@named(_compiled_words)
@st.composite
def compiled_modules_with_inductor(draw, batch_norm: bool = False) -> Setting:
    """``compiled_modules``' two members and a third under inductor, the backend
    ``torch.compile`` uses by default (it generates and compiles C++: seconds); with
    ``batch_norm``, an MLP with BatchNorm1d and a conv with BatchNorm2d on images, in
    training mode, under aot_eager."""
    features, seed, backend, layer = draw(st.sampled_from(
        [(2, 0, "inductor", ""), (2, 0, "aot_eager", ""), (3, 1, "aot_eager", "")]
        + [(3, 1, "aot_eager", "BatchNorm1d"), (2, 0, "aot_eager", "BatchNorm2d")] * batch_norm))
    what = {"": f"MLP on (4, {features})", "BatchNorm1d": f"MLP with BatchNorm1d (train) on (4, {features})",
            "BatchNorm2d": f"conv with BatchNorm2d (train) on (4, {features}, 4, 4) images"}[layer]
    name = f"{'inductor-' if backend == 'inductor' else ''}compiled {what}"
    return _compiled_setting(name, features, seed, backend, layer)


@dataclass(frozen=True)
class NonLeaf:
    """A tensor made from a leaf by an operation readers do not see as one (or, for a
    move that changes nothing, the leaf itself)."""

    name: str
    leaf: torch.Tensor = field(repr=False, compare=False)
    tensor: torch.Tensor = field(repr=False, compare=False)

    def __repr__(self) -> str:
        return self.name


NON_LEAF_WAYS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x.to(torch.float64)": lambda x: x.to(torch.float64),
    "x.double()": lambda x: x.double(),
    "x * 1": lambda x: x * 1,
    "x.reshape(-1)": lambda x: x.reshape(-1),
    "x[:2]": lambda x: x[:2],
    "x.clone()": lambda x: x.clone(),
}


@named("non-leaf inputs")
@st.composite
def non_leaf_inputs(draw) -> NonLeaf:
    """x = torch.randn(..., requires_grad=True), then a copy, a cast or a view of it,
    as ``.to(device)`` or ``.cuda()`` after ``requires_grad`` makes one."""
    way, seed = draw(st.sampled_from(sorted(NON_LEAF_WAYS))), draw(SEEDS)
    leaf = torch.randn(3, 2, generator=torch.Generator().manual_seed(seed), requires_grad=True)
    return NonLeaf(f"randn(3, 2, requires_grad=True) then {way}", leaf, NON_LEAF_WAYS[way](leaf))


# .to(), .float(), .double() on a float32 CPU leaf x: a copy when the dtype or device
# changes, and x itself (still a leaf) when nothing changes. With no GPU here, the
# device change is to "meta" (a tensor without data: backward cannot run through it).
MOVES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x.to('meta')": lambda x: x.to("meta"),
    "x.to(float64)": lambda x: x.to(torch.float64),
    "x.double()": lambda x: x.double(),
    "x.to('cpu', float64)": lambda x: x.to("cpu", torch.float64),
    "x.to(float32)": lambda x: x.to(torch.float32),
    "x.float()": lambda x: x.float(),
    "x.to('cpu')": lambda x: x.to("cpu"),
}
# .to() on an image batch (B, C, H, W) that keeps the dtype and device: a copy in
# another memory format, or one asked for; x itself for the format it already has.
FORMAT_MOVES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x.to(memory_format=channels_last)": lambda x: x.to(memory_format=torch.channels_last),
    "x.to(float32, memory_format=channels_last)": lambda x: x.to(torch.float32,
                                                                 memory_format=torch.channels_last),
    "x.to(memory_format=contiguous_format)": lambda x: x.to(memory_format=torch.contiguous_format),
    "x.to('cpu', copy=True)": lambda x: x.to("cpu", copy=True),
}


def _move_words(formats: bool = False) -> str:
    if not formats:
        return ("x = randn(3, 2, requires_grad=True), float32 on the CPU, then .to(), .float() "
                "or .double(): to another dtype or device, or to its own")
    return ("x = randn(2, 3, 2, 2, requires_grad=True), an image batch, float32 on the CPU, then "
            ".to(), .float() or .double(): to another dtype, device or memory format, a copy "
            "(copy=True), or to its own")


@named(_move_words)
def moved_leaves(formats: bool = False) -> st.SearchStrategy[NonLeaf]:
    """A leaf moved as the checklist of "why is .grad None" says: each member named by
    the call alone (a reveal shows it whole), the leaf fresh for every draw. With
    ``formats``, the leaf is an image batch and the moves include ``FORMAT_MOVES``."""
    ways = list(MOVES) + (list(FORMAT_MOVES) if formats else [])
    return st.sampled_from(ways).map(lambda way: _moved(way, formats))


def _moved(way: str, formats: bool = False) -> NonLeaf:
    shape = (2, 3, 2, 2) if formats else (3, 2)
    leaf = torch.randn(*shape, generator=torch.Generator().manual_seed(0), requires_grad=True)
    return NonLeaf(way, leaf, {**MOVES, **FORMAT_MOVES}[way](leaf))


@named("vectors, rows (N, F) and image batches (B, C, H, W), with a dim of each")
def shapes_and_dims() -> st.SearchStrategy[tuple[tuple[int, ...], int]]:
    """A shape a reader normalizes, and one of its dimensions (negative ones too):
    a recipe that names no dim (F.normalize's default dim=1, x.norm()'s whole
    tensor) is right for one of them only."""
    shapes = st.sampled_from([(4,), (3, 4), (2, 3, 4, 5)])
    return shapes.flatmap(lambda shape: st.tuples(
        st.just(shape), st.integers(-len(shape), len(shape) - 1)))


FAMILIES = (multi_feature_inputs, image_batches, sample_batches, train_mode_models, checkpointed_blocks,
            batch_norm_models, multi_term_losses, losses_with_linear_terms, autocast_dtypes,
            later_layers, amp_models, amp_losses, compiled_modules, non_leaf_inputs, moved_leaves,
            shapes_and_dims)


def main() -> None:
    """Show a few members of each family (tests/test_reader_settings.py checks them)."""
    for factory in FAMILIES:
        print(f"{factory.family_name}: {'; '.join(map(repr, members(factory(), 4)))}"[:160])


if __name__ == "__main__":
    main()
