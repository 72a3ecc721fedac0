"""Families that general sentences are checked over, as Hypothesis strategies.

A sentence such as "for every elementwise f, the ones seed gives every dy_i/dx_i"
is checked with ``oracle.check_property`` over ``elementwise_maps()``; a sentence
about "any f whose inputs each feed one output" over a family that also holds the
maps that would break it (``permutation_maps()``, ``mixing_maps()``). A drawn map
is a ``Map``: callable, named for the counterexample a failure prints (``flip(x)
* c``), with the size of the input it takes. Tensors are made from Hypothesis's
draws or from a drawn seed in a ``torch.Generator`` of their own, never from
torch's global random state, so a check does not change what a page computes.

Run this file to see a few members of each family; ``tests/test_families.py``
checks that every member is what its family says.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

# Hypothesis caches what it reads of local modules under .hypothesis/ in the
# working folder, which for a page is docs/: keep it out of the repository.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      os.path.join(tempfile.gettempdir(), "autograd-docs-hypothesis"))

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SIZES = st.integers(min_value=2, max_value=6)
SEEDS = st.integers(min_value=0, max_value=2**31 - 1)
BATCH_SIZES = st.integers(min_value=2, max_value=5)  # BatchNorm in training needs two
DTYPE = torch.float64  # what a property compares in, unless it draws a dtype

# How every property check draws: the same members on every build and machine
# (derandomized, no example database), a bounded number of them, and nothing
# timed (the explain phase and the health checks time what they run: a busy
# machine would draw, or fail, differently).
CLAIM_SETTINGS = settings(
    max_examples=12, derandomize=True, database=None, deadline=None, print_blob=False,
    report_multiple_bugs=False, phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck))


@dataclass(frozen=True)
class Map:
    """A function of one tensor, named as a failure prints it."""

    name: str
    fn: Callable[[torch.Tensor], torch.Tensor] = field(repr=False, compare=False)
    n: int  # the length of the input it takes (a vector, or a batch of rows of n)
    kind: str  # the family it was drawn from
    # an elementwise map's slope as a function of its output y (exp: y, tanh: 1 - y**2),
    # as PyTorch's own backward of exp, tanh and sigmoid computes it; None if it has none
    slope_from_output: Callable[[torch.Tensor], torch.Tensor] | None = field(
        default=None, repr=False, compare=False)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)

    def __repr__(self) -> str:
        return f"{self.name} (n={self.n})"

    def point(self, seed: int = 0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        """A point to evaluate at: n standard normal entries, from ``seed``."""
        return torch.randn(self.n, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def named(family: str | Callable[..., str]):
    """Label the strategies a factory makes with the family's name: a property
    check's record says what it ran over. ``family`` may be a function of the
    factory's arguments, for a factory whose arguments narrow what it draws."""
    def decorate(factory):
        @functools.wraps(factory)
        def make(*args, **kwargs) -> st.SearchStrategy:
            strategy = factory(*args, **kwargs)
            strategy.family_name = family(*args, **kwargs) if callable(family) else family
            return strategy
        make.family_name = family() if callable(family) else family
        return make
    return decorate


def _vector(generator_seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=DTYPE, generator=torch.Generator().manual_seed(generator_seed))


@contextlib.contextmanager
def seeded(seed: int):
    """Run the block with torch's CPU generator seeded (module initialisers draw
    from it), and give torch's random state back afterwards. Not
    ``torch.manual_seed``: on a machine without a GPU it queues a lazy CUDA, XPU
    and MTIA seeding with a stack trace each, 1.7 ms a call."""
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        yield


@functools.cache
def exactly(entries: st.SearchStrategy, size: int) -> st.SearchStrategy[list]:
    """Lists of ``size`` members of ``entries``, built once per size: a strategy
    made inside a draw is validated again on every draw (half of a draw's time)."""
    return st.lists(entries, min_size=size, max_size=size)


# -- Maps R^n -> R^n (one output per input) -----------------------------------------

ELEMENTWISE = {
    "sin(x)": torch.sin,
    "tanh(x)": torch.tanh,
    "exp(x)": torch.exp,
    "x**2": lambda x: x**2,
    "x**3 - x": lambda x: x**3 - x,
    "sigmoid(x)": torch.sigmoid,
    "relu(x)": torch.relu,  # a kink at 0
    "abs(x)": torch.abs,  # a kink at 0
    "softplus(x)": torch.nn.functional.softplus,
    "x": lambda x: x,
}


# The members of ELEMENTWISE whose slope is a function of their output y.
SLOPES_FROM_OUTPUT = {
    "exp(x)": lambda y: y,
    "tanh(x)": lambda y: 1 - y**2,
    "sigmoid(x)": lambda y: y * (1 - y),
    "softplus(x)": lambda y: -torch.expm1(-y),
    "relu(x)": lambda y: (y > 0).to(y.dtype),
    "x": torch.ones_like,
}

_ELEMENTWISE_NAMES = st.sampled_from(sorted(ELEMENTWISE))


@named("elementwise maps")
@st.composite
def elementwise_maps(draw, n: st.SearchStrategy[int] = SIZES) -> Map:
    """y_i = g(x_i), or c_i * g(x_i): J is diagonal at every point."""
    name = draw(_ELEMENTWISE_NAMES)
    g, size, slope = ELEMENTWISE[name], draw(n), SLOPES_FROM_OUTPUT.get(name)
    if draw(st.booleans()):
        c = _vector(draw(SEEDS), size)
        scaled = slope and (lambda y: c.to(y.dtype) * slope(y / c.to(y.dtype)))
        return Map(f"c * {name}", lambda x: c.to(x.dtype) * g(x), size, "elementwise", scaled)
    return Map(name, g, size, "elementwise", slope)


@named("permutations")
@st.composite
def permutations(draw, n: st.SearchStrategy[int] = SIZES) -> list[int]:
    """An order of range(n): the identity, a flip, a roll, or any other."""
    return draw(_orders(draw(n)))


@functools.cache
def _orders(size: int) -> st.SearchStrategy[list[int]]:
    return st.sampled_from([
        list(range(size)), list(range(size))[::-1],
        [(i + 1) % size for i in range(size)],
    ]) | st.permutations(list(range(size)))


_PERMUTATION_KINDS = st.sampled_from(["plain", "scaled", "composed"])


@named("permutation maps")
@st.composite
def permutation_maps(draw, n: st.SearchStrategy[int] = SIZES) -> Map:
    """y = x[p], or c * x[p], or g(x[p]): each input feeds exactly one output,
    which need not be its own."""
    order = draw(permutations(n))
    size, index = len(order), torch.tensor(order)
    label = "flip(x)" if order == list(range(size))[::-1] and size > 1 else f"x[{order}]"
    kind = draw(_PERMUTATION_KINDS)
    if kind == "scaled":
        c = torch.arange(1.0, size + 1, dtype=DTYPE)
        return Map(f"{label} * c, c = 1..{size}", lambda x: x[index] * c.to(x.dtype), size,
                   "permutation")
    if kind == "composed":
        return Map(f"sin({label})", lambda x: torch.sin(x[index]), size, "permutation")
    return Map(label, lambda x: x[index], size, "permutation")


_STRUCTURES = st.sampled_from(["dense", "triangular", "diagonal", "sparse"])


@named("linear maps")
@st.composite
def linear_maps(draw, n: st.SearchStrategy[int] = SIZES, m: st.SearchStrategy[int] | None = None
                ) -> Map:
    """x -> A x with A drawn (square unless ``m`` draws the output size): J = A."""
    size = draw(n)
    rows = draw(m) if m is not None else size
    structure = draw(_STRUCTURES)
    A = _vector(draw(SEEDS), rows, size)
    if structure == "triangular":
        A = torch.tril(A)
    elif structure == "diagonal":
        A = torch.diag_embed(torch.diagonal(A)) if rows == size else A
    elif structure == "sparse":
        A = A * (torch.rand(rows, size, generator=torch.Generator().manual_seed(draw(SEEDS)))
                 < 0.3)
    return Map(f"{structure} A @ x, A {rows}x{size}", lambda x: A.to(x.dtype) @ x, size, "linear")


MIXING = {
    "softmax(x)": lambda x: torch.softmax(x, -1),
    "log_softmax(x)": lambda x: torch.log_softmax(x, -1),
    "cumsum(x)": lambda x: torch.cumsum(x, -1),
    "cumprod(x)": lambda x: torch.cumprod(x, -1),
    "x - mean(x)": lambda x: x - x.mean(-1, keepdim=True),
    "layer_norm(x)": lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]),
    "rms_norm(x)": lambda x: torch.nn.functional.rms_norm(x, x.shape[-1:]),
    "normalize(x)": lambda x: torch.nn.functional.normalize(x, dim=-1),
    "sort(x)": lambda x: torch.sort(x, -1).values,
    "x * sum(x)": lambda x: x * x.sum(-1, keepdim=True),
}


_MIXING_NAMES = st.sampled_from(sorted(MIXING))


@named("maps that mix entries")
@st.composite
def mixing_maps(draw, n: st.SearchStrategy[int] = SIZES) -> Map:
    """Softmax, cumsum, normalisations and kin: y_i depends on several x_j."""
    name = draw(_MIXING_NAMES)
    return Map(name, MIXING[name], draw(n), "mixing")


@named("maps R^n -> R^n")
def vector_maps(n: st.SearchStrategy[int] = SIZES) -> st.SearchStrategy[Map]:
    """Every kind above: elementwise, permuting, linear and mixing maps."""
    return st.one_of(elementwise_maps(n), permutation_maps(n), linear_maps(n), mixing_maps(n))


# -- Networks and batches ------------------------------------------------------------

class Network(torch.nn.Sequential):
    """A small MLP that a counterexample prints on one line."""

    def __repr__(self) -> str:
        def layer(module):
            if isinstance(module, torch.nn.Linear):
                return f"Linear({module.in_features}→{module.out_features})"
            return type(module).__name__
        return " · ".join(layer(module) for module in self)


_WIDTHS, _OUTPUTS = st.integers(2, 8), st.integers(1, 3)
_ACTIVATIONS = st.sampled_from([torch.nn.Tanh, torch.nn.ReLU, torch.nn.GELU])


@named("small networks")
@st.composite
def small_networks(draw, batchnorm: bool | None = None, n: st.SearchStrategy[int] = SIZES
                   ) -> Network:
    """A two-layer MLP on n features, with BatchNorm1d between the layers when
    ``batchnorm`` is True, without when False, either when None. Its parameters
    require grad, as a module's do; it is in training mode."""
    size, width = draw(n), draw(_WIDTHS)
    with_norm = draw(st.booleans()) if batchnorm is None else batchnorm
    activation = draw(_ACTIVATIONS)
    with seeded(draw(SEEDS)):
        layers = [torch.nn.Linear(size, width)]
        layers += [torch.nn.BatchNorm1d(width)] if with_norm else []
        layers += [activation(), torch.nn.Linear(width, draw(_OUTPUTS))]
        net = Network(*layers).double()
    net.in_features = size
    return net


@named("batches")
@st.composite
def batches(draw, features: int | st.SearchStrategy[int] = SIZES,
            size: st.SearchStrategy[int] = BATCH_SIZES) -> torch.Tensor:
    """A batch of rows, (B, n), B at least 2 (BatchNorm in training needs two)."""
    n = features if isinstance(features, int) else draw(features)
    return _vector(draw(SEEDS), draw(size), n)


# -- Points and dtypes ---------------------------------------------------------------

KINKS = (0.0, -0.0, 1.0, -1.0)  # where relu, abs, clamp, sign and sqrt change rule
_ENTRY = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)
_ENTRY_OR_KINK = st.sampled_from(KINKS) | _ENTRY


@named("points with kinks and zeros")
@st.composite
def points(draw, n: int | st.SearchStrategy[int] = SIZES, kinks: bool = True,
           dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """A vector of n finite entries; with ``kinks``, entries drawn from 0, -0.0 and
    +-1 (where piecewise functions switch) as well as anywhere else."""
    size = n if isinstance(n, int) else draw(n)
    entry = _ENTRY_OR_KINK if kinks else _ENTRY
    return torch.tensor(draw(exactly(entry, size)), dtype=dtype)


REAL_DTYPES = (torch.float32, torch.float64)
COMPLEX_DTYPES = (torch.complex64, torch.complex128)


def _dtype_words(real: bool = True, complex: bool = True) -> str:
    chosen = (REAL_DTYPES if real else ()) + (COMPLEX_DTYPES if complex else ())
    kind = {(True, True): "real and complex", (True, False): "real", (False, True): "complex"}
    names = [str(dtype).removeprefix("torch.") for dtype in chosen]
    return f"{kind[real, complex]} dtypes: {', '.join(names[:-1])} and {names[-1]}"


@named(_dtype_words)
def dtypes(real: bool = True, complex: bool = True) -> st.SearchStrategy[torch.dtype]:
    """Floating dtypes that can require grad: real, complex, or both."""
    chosen = (REAL_DTYPES if real else ()) + (COMPLEX_DTYPES if complex else ())
    return st.sampled_from(chosen)


@contextlib.contextmanager
def from_the_seed_alone():
    """Keep Hypothesis from mixing numbers into the draw that it reads from the
    source of every local module loaded (``providers._get_local_constants``: the
    snippets, the engine, the fork server's modules). With them, the members a
    claim's seed gives would depend on what else the process imported, so a replay
    outside the page's kernel (tests/test_old_sentences.py) would draw others, and a
    literal added to any snippet would change what every page importing it draws."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    read_from_modules, nothing = providers._get_local_constants, Constants()
    providers._get_local_constants = lambda: nothing
    providers.CONSTANTS_CACHE.cache.clear()  # it holds the local constants per draw kind
    try:
        yield
    finally:
        providers._get_local_constants = read_from_modules
        providers.CONSTANTS_CACHE.cache.clear()


def members(strategy: st.SearchStrategy, count: int) -> list:
    """The first ``count`` members a family's derandomized draw gives (as
    ``oracle.check_property`` draws them: from the seed alone)."""
    drawn = []

    @settings(CLAIM_SETTINGS, max_examples=count)
    @given(strategy)
    def draw(member):
        drawn.append(member)

    with from_the_seed_alone():
        draw()
    return drawn


# -- Maps between tensors of any shape -------------------------------------------------

TENSOR_SHAPES = st.lists(st.integers(1, 3), max_size=3).map(tuple)  # () is a 0-d tensor


@dataclass(frozen=True)
class ShapedMap:
    """y = sin(A x) from tensors of one drawn shape to another, its Jacobian known
    in closed form, shaped ``y.shape + x.shape`` as the Jacobian APIs return it."""

    name: str
    A: torch.Tensor = field(repr=False, compare=False)
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.A.to(x.dtype) @ x.reshape(-1)).reshape(self.y_shape)

    def __repr__(self) -> str:
        return self.name

    def point(self, seed: int = 0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        return torch.randn(self.x_shape, dtype=dtype,
                           generator=torch.Generator().manual_seed(seed))

    def jacobian(self, x: torch.Tensor) -> torch.Tensor:
        """cos(A x) A, by the chain rule and not by autograd."""
        A = self.A.to(x.dtype)
        return (torch.cos(A @ x.reshape(-1))[:, None] * A).reshape(self.y_shape + self.x_shape)


@named("y = sin(A x), x and y each of 0 to 3 dimensions of 1 to 3 entries (0-d included)")
@st.composite
def shaped_maps(draw) -> ShapedMap:
    """x and y each of 0 to 3 dimensions of 1 to 3 entries: vectors, matrices,
    batches, scalars."""
    x_shape, y_shape = draw(TENSOR_SHAPES), draw(TENSOR_SHAPES)
    size = lambda shape: int(torch.Size(shape).numel())  # noqa: E731
    A = _vector(draw(SEEDS), size(y_shape), size(x_shape))
    return ShapedMap(f"sin(A x): {x_shape} -> {y_shape}", A, x_shape, y_shape)


@named("batches of 2 to 4 random normal seeds v, not unit vectors (count, generator seed)")
def seed_batches() -> st.SearchStrategy[tuple[int, int]]:
    """How many seeds to stack for one batched backward, and the generator seed to draw
    them from: seeds that are not unit vectors, so vᵀJ is not a row of J."""
    return st.tuples(st.integers(2, 4), SEEDS).map(tuple)  # a fresh strategy: tuples() is cached


def labelled(strategy: st.SearchStrategy, name: str) -> st.SearchStrategy:
    """``strategy`` drawing the same members, shown to readers as ``name`` (a check's
    record names its families). A fresh object: Hypothesis caches ``st.integers(0, 12)``
    and kin, so naming the cached one would rename every other use of it on the page."""
    fresh = strategy.map(lambda member: member)
    fresh.family_name = name
    return fresh


# -- Where a gradient is inf or nan (anomaly mode's cases) ----------------------------

# f and a point where f's backward makes an inf or a nan: in one backward function,
# further back (sqrt(x**2)), in one whose NaN the later nodes pass on (sqrt(exp(3x-1)-2)),
# or where autograd adds what two uses of x send back (+inf and -inf), at a leaf or at
# an intermediate h that passes the sum on.
NON_FINITE_GRADIENTS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], float]] = {
    "sqrt at 0": (torch.sqrt, 0.0), "sqrt at -1": (torch.sqrt, -1.0),
    "log at 0": (torch.log, 0.0), "log at -1": (torch.log, -1.0),
    "1/x at 0": (torch.reciprocal, 0.0), "acos at 1": (torch.acos, 1.0),
    "asin at 2": (torch.asin, 2.0), "x**0.5 at 0": (lambda t: t ** 0.5, 0.0),
    "sqrt(x)*0 at 0": (lambda t: torch.sqrt(t) * 0, 0.0),
    "sqrt(exp(3x-1)-2) at 0.5": (lambda t: torch.sqrt(torch.exp(t * 3 - 1) - 2), 0.5),
    "sqrt(x**2) at 0": (lambda t: torch.sqrt(t ** 2), 0.0),
    "sqrt(x) - sqrt(2x) at 0": (lambda t: torch.sqrt(t) - torch.sqrt(2 * t), 0.0),
    "log(x) - log(3x) at 0": (lambda t: torch.log(t) - torch.log(3 * t), 0.0),
    "1/x - 1/(2x) at 0": (lambda t: torch.reciprocal(t) - torch.reciprocal(2 * t), 0.0),
    "h = x * 1.0, sqrt(h) - sqrt(2h) at 0": (
        lambda t: (lambda h: torch.sqrt(h) - torch.sqrt(2 * h))(t * 1.0), 0.0),
    "h = x.clone(), log(h) - log(3h) at 0": (
        lambda t: (lambda h: torch.log(h) - torch.log(3 * h))(t.clone()), 0.0),
}


def non_finite_gradients() -> st.SearchStrategy[str]:
    """A name of ``NON_FINITE_GRADIENTS``."""
    return labelled(st.sampled_from(sorted(NON_FINITE_GRADIENTS)),
                    "functions at a point where a gradient is inf or nan, "
                    "some adding +inf and -inf from two uses of x")


# -- Classification losses with class-index targets (class weight= and ignore_index) --

def _nll_loss_of_log_softmax(scores: torch.Tensor, targets: torch.Tensor, **kwargs) -> torch.Tensor:
    return torch.nn.functional.nll_loss(scores.log_softmax(1), targets, **kwargs)


# Each takes (scores, class-index targets, weight=, reduction=); its 'mean' divides the
# summed losses by the weights of the targets it counts, label smoothing or not.
CLASS_INDEX_LOSSES: dict[str, Callable[..., torch.Tensor]] = {
    "cross_entropy": torch.nn.functional.cross_entropy,
    "cross_entropy, label_smoothing=0.1": functools.partial(torch.nn.functional.cross_entropy,
                                                            label_smoothing=0.1),
    "log_softmax + nll_loss": _nll_loss_of_log_softmax,
}


def class_index_losses() -> st.SearchStrategy[str]:
    """A name of ``CLASS_INDEX_LOSSES``."""
    return labelled(st.sampled_from(sorted(CLASS_INDEX_LOSSES)),
                    "cross_entropy (label_smoothing 0 or 0.1) and log_softmax + nll_loss")


def main() -> None:
    """Show a few members of each family (tests/test_families.py checks them)."""
    for factory in FAMILIES:
        print(f"{factory.family_name}: {'; '.join(map(repr, members(factory(), 4)))}"[:160])


FAMILIES = (elementwise_maps, permutations, permutation_maps, linear_maps, mixing_maps,
            vector_maps, small_networks, batches, points, dtypes, shaped_maps)

if __name__ == "__main__":
    main()
