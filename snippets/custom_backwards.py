"""Custom Functions whose ``backward`` is built from PyTorch operations, and when that
backward can itself be differentiated (``gradgradcheck``).

A second derivative differentiates the tensors ``backward`` computed. It follows
them back to the Function's saved inputs and outputs, which are in the graph, but
not to a tensor made in ``forward`` or ``setup_context`` (grad mode is off in both,
so it is a constant), nor through an operation autograd does not record (the
``torch.special`` Bessel functions), nor through a ``detach`` or NumPy. Each of those
backwards still gives the right first derivative, and ``gradgradcheck`` fails, except
where the terms it misses are below its tolerance (at x = 0, say, or pi/2 for x sin x).

``custom_backwards()`` draws them, each named by where its backward reads from; run
this file to see which pass ``gradcheck`` and ``gradgradcheck``.
"""

from __future__ import annotations

import math

import torch
from families import named
from hypothesis import strategies as st
from torch.autograd.function import once_differentiable


class SinFromInput(torch.autograd.Function):
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


class SigmoidFromOutput(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


class SinCosFromSetupContext(SinFromInput):
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0].cos())  # grad mode is off: a constant

    @staticmethod
    def backward(ctx, grad_output):
        (cos,) = ctx.saved_tensors
        return grad_output * cos


class SinCosFromForward(torch.autograd.Function):
    """The older form, ``forward(ctx, x)``, saving what it computed."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.cos())  # grad mode is off: a constant
        return x.sin()

    backward = SinCosFromSetupContext.backward


class BesselJ0(SinFromInput):  # saves its input as SinFromInput does
    @staticmethod
    def forward(x):
        return torch.special.bessel_j0(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return -grad_output * torch.special.bessel_j1(x)  # not recorded


class SigmoidDetached(SigmoidFromOutput):
    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        y = y.detach()
        return grad_output * y * (1 - y)


class NumpyCube(SinFromInput):  # saves its input as SinFromInput does
    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.from_numpy(3 * x.detach().numpy() ** 2)  # not recorded


# name -> (the Function, whether its backward is differentiable)
CUSTOM_BACKWARDS: dict[str, tuple[type[torch.autograd.Function], bool]] = {
    "sin, backward from the saved input": (SinFromInput, True),
    "sigmoid, backward from the saved output": (SigmoidFromOutput, True),
    "sin, cos(x) saved in setup_context": (SinCosFromSetupContext, False),
    "sin, cos(x) saved in forward(ctx, x)": (SinCosFromForward, False),
    "J0, backward calls bessel_j1": (BesselJ0, False),
    "sigmoid, backward from a detached output": (SigmoidDetached, False),
    "x³, backward through NumPy, @once_differentiable": (NumpyCube, False),
}


@named("custom Functions whose backward reads saved inputs, saved outputs, tensors "
       "made in setup_context or forward, bessel_j1, a detach, NumPy")
def custom_backwards() -> st.SearchStrategy[str]:
    """Names of ``CUSTOM_BACKWARDS``, every kind of backward built from torch operations."""
    return st.sampled_from(sorted(CUSTOM_BACKWARDS))


def with_vmap_support(function: type[torch.autograd.Function], jvp_factor: float | None = 1.0,
                      vmap_rule: bool | str = True) -> type[torch.autograd.Function]:
    """``function`` as a reader makes it run under ``torch.func`` transforms: with
    ``generate_vmap_rule = True`` (unless ``vmap_rule`` is False, or names one of
    ``OWN_VMAP_RULES``, its own ``vmap`` staticmethod) and a ``jvp`` that is its own
    ``backward`` (the same product, as every Function here is elementwise) times
    ``jvp_factor``: right at 1, wrong otherwise, and left out at None. A Function in
    the older ``forward(ctx, x)`` form cannot have them: it comes back as it is."""
    if function.setup_context is torch.autograd.Function.setup_context:
        return function

    class WithVmapSupport(function):
        generate_vmap_rule = vmap_rule is True

        @staticmethod
        def setup_context(ctx, inputs, output):
            function.setup_context(ctx, inputs, output)
            ctx.save_for_forward(*ctx.to_save)  # what backward reads, for jvp

    if jvp_factor is not None:
        WithVmapSupport.jvp = staticmethod(lambda ctx, tangent: jvp_factor * function.backward(ctx, tangent))
    if vmap_rule in OWN_VMAP_RULES:
        flip = OWN_VMAP_RULES[vmap_rule]

        def vmap(info, in_dims, x):  # elementwise: apply to the whole batch, in its order or flipped
            return WithVmapSupport.apply(x.flip(in_dims[0]) if flip else x), in_dims[0]
        WithVmapSupport.vmap = staticmethod(vmap)
    return WithVmapSupport


# an own vmap staticmethod -> whether it flips the batch (wrong; right without)
OWN_VMAP_RULES = {"own vmap rule": False, "own vmap rule, batch flipped": True}


@named("jvps equal to the backward's product (right), or it times 2, -1 or 0 (wrong)")
def jvp_factors() -> st.SearchStrategy[float]:
    """Factors for ``with_vmap_support``: 1 gives the right ``jvp``."""
    return st.sampled_from([1.0, 2.0, -1.0, 0.0])


class XSinXMixed(torch.autograd.Function):
    """x sin x: backward reads its input and sin(x) made in setup_context."""

    @staticmethod
    def forward(x):
        return x * x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.sin_x = inputs[0].sin()  # grad mode is off: a constant

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (ctx.sin_x + x * x.cos())


# Where a term some backward above misses vanishes: 0 (every one but J0's), pi/2 (the
# cos x that x sin x misses), J1's turning point (the J1' that J0 misses), pi (sin x).
VANISHING = (0.0, math.pi / 2, 1.8411837813406593, math.pi)


@named(lambda vanishing=False: "points of 1 to 4 entries in [0.25, 3]" + (
    ", or 0, pi/2, 1.8412 (where J1 turns) and pi, where a missed term vanishes" if vanishing else ""))
def backward_points(vanishing: bool = False) -> st.SearchStrategy[list[float]]:
    """Away from 0, where sin's second derivative is 0 whatever the backward reads;
    with ``vanishing``, entries at ``VANISHING`` too, often one alone."""
    if not vanishing:
        return st.lists(st.floats(0.25, 3.0), min_size=1, max_size=4)
    return (st.lists(st.floats(0.25, 3.0) | st.sampled_from(VANISHING), min_size=1, max_size=4)
            | st.sampled_from(VANISHING).map(lambda at: [at]))


@named("grad_outputs of 4 entries in [-1, 1], as gradgradcheck draws them (the first len(x) used)")
def grad_outputs() -> st.SearchStrategy[list[float]]:
    return st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4)


def gradgradcheck_against_what_it_misses(function, values, seed):
    """gradgradcheck's verdict on ``function`` at x = ``values`` with grad_outputs v =
    ``seed`` (its first len(x) entries), and the largest ratio of a term autograd
    misses (the true Jacobian of (x, v) -> the backward's v J(x), by finite
    differences, minus autograd's) to gradgradcheck's tolerance there (atol 1e-5 +
    rtol 1e-3 times the true term)."""
    from oracle import finite_difference_jacobian

    n = len(values)
    point = torch.tensor([*values, *seed[:n]], dtype=torch.float64)

    def backward(z):  # what the Function's backward returns for x = z[:n], v = z[n:]
        with torch.enable_grad():
            x = z[:n].detach().requires_grad_() if not z.requires_grad else z[:n]
            return torch.autograd.grad(function.apply(x), x, z[n:], create_graph=True)[0]

    true = finite_difference_jacobian(lambda z: backward(z).detach(), point)
    try:
        recorded = torch.autograd.functional.jacobian(backward, point)
    except RuntimeError:  # @once_differentiable: a second pass raises
        recorded = torch.zeros_like(true)
    ratio = ((true - recorded).abs() / (1e-5 + 1e-3 * true.abs())).max()
    x, v = (piece.clone().requires_grad_() for piece in point.split(n))
    return torch.autograd.gradgradcheck(function.apply, (x,), (v,), raise_exception=False), float(ratio)


def gradgradcheck_within_its_tolerance(function, values, seed, differentiable: bool, outcomes: set) -> bool:
    """gradgradcheck passes a recorded backward. On one that misses terms it fails where
    a missed term is over twice its tolerance (atol + rtol |true term|), and passes where
    every one is under half of it; ``outcomes`` collects which of the two were drawn."""
    passes, missed = gradgradcheck_against_what_it_misses(function, values, seed)
    if differentiable:
        return passes and missed < 1e-2
    if missed > 2:
        outcomes.add("caught")
        return not passes
    if missed < 0.5:
        outcomes.add("passed, missing small terms")
        return passes
    return True


# torch's bessel_j0 and bessel_j1 switch formulas at |x| = 5 (ATen/native/Math.h, x <= 5)
# and jump there by about 4e-7: finite differences with gradcheck's step, 1e-6, across the
# jump are off by about 0.2, so gradcheck and gradgradcheck fail there on a right backward.
BESSEL_JUMPS = (-5.0, 5.0)


def off_the_bessel_jumps(value: float) -> bool:
    """Farther than gradcheck's step (1e-6) from where torch's J0 and J1 jump."""
    return all(abs(value - jump) >= 1e-6 for jump in BESSEL_JUMPS)


@named("points of 1 to 4 entries in [-30, 30], with 0, subnormals and |x| < 1e-8 among them "
       "(none within 1e-6 of ±5, where torch's J0 and J1 jump)")
def points_through_0() -> st.SearchStrategy[list[float]]:
    """Where a formula with x in a denominator (J1' = J0 - J1/x) needs its limit."""
    return st.lists(st.one_of(st.just(0.0), st.floats(-1e-8, 1e-8),
                              st.floats(-30.0, 30.0).filter(off_the_bessel_jumps)),
                    min_size=1, max_size=4)


@named("points of 0 to 3 entries in [-30, 30] and one within 1e-6 of 5 or -5")
def points_at_a_bessel_jump() -> st.SearchStrategy[list[float]]:
    """Where torch's J0 and J1 jump: one entry within gradcheck's step of ±5."""
    return st.builds(lambda others, jump, offset: [*others, jump + offset],
                     st.lists(st.floats(-30.0, 30.0).filter(off_the_bessel_jumps), max_size=3),
                     st.sampled_from(BESSEL_JUMPS), st.floats(-0.99e-6, 0.99e-6))


def cube_whose_backward_calls(factor: float) -> type[torch.autograd.Function]:
    """x³ with a right backward, ``grad_output * 3x²``, where 3x² is a Function whose own
    backward returns ``factor * 6x``: its second derivative is wrong unless factor is 1."""

    class ThreeSquared(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return 3 * x**2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * factor * 6 * ctx.saved_tensors[0]

    class Cube(SinFromInput):  # saves its input as SinFromInput does
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ThreeSquared.apply(ctx.saved_tensors[0])

    return Cube


# name -> x³ whose backward is differentiable, its second derivative right or scaled
CUBES_THROUGH_A_FUNCTION: dict[str, type[torch.autograd.Function]] = {
    f"x³, backward through 3x² whose derivative is {factor} · 6x": cube_whose_backward_calls(factor)
    for factor in (1, 2, 0.5, -1, 0)
}


@named("custom Functions with a right first derivative: backwards reading saved inputs, saved "
       "outputs, tensors made in setup_context or forward, bessel_j1, a detach, NumPy; x³ whose "
       "backward calls a 3x² with its derivative right or scaled by 2, 0.5, -1, 0")
def second_derivative_cases() -> st.SearchStrategy[str]:
    """Names of ``CUSTOM_BACKWARDS`` and ``CUBES_THROUGH_A_FUNCTION`` (``function_named``)."""
    return st.sampled_from(sorted(CUSTOM_BACKWARDS) + sorted(CUBES_THROUGH_A_FUNCTION))


def function_named(name: str) -> type[torch.autograd.Function]:
    return CUBES_THROUGH_A_FUNCTION.get(name) or CUSTOM_BACKWARDS[name][0]


def passes_gradgradcheck(name: str, values: list[float]) -> bool:
    function, _ = CUSTOM_BACKWARDS[name]
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return torch.autograd.gradgradcheck(function.apply, (x,), raise_exception=False)


def forward_mode_verdicts(function: type[torch.autograd.Function], values: list[float]) -> tuple[bool, bool]:
    """``gradcheck(..., check_forward_ad=True)`` (the ``jvp`` against finite differences)
    and ``gradgradcheck(..., check_fwd_over_rev=True)`` (forward mode over the
    ``backward``) at x = ``values``; a Function without a ``jvp`` fails both."""
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    try:
        return (torch.autograd.gradcheck(function.apply, (x,), check_forward_ad=True, raise_exception=False),
                torch.autograd.gradgradcheck(function.apply, (x,), check_fwd_over_rev=True, raise_exception=False))
    except NotImplementedError:  # "You must implement the jvp function ..."
        return False, False


def passes_forward_mode_checks(function: type[torch.autograd.Function], values: list[float]) -> bool:
    """Both ``forward_mode_verdicts``."""
    return all(forward_mode_verdicts(function, values))


class Around:
    """Where a reader applies the Function: ``before`` maps x to the Function's input,
    ``after`` maps its output to the loss term (``sum``: straight into the loss).
    Each ``Linear`` is a layer being trained (its weights require grad)."""

    NONLINEAR = ("sin", "x * x", "relu", "Linear -> ReLU")

    def __init__(self, before: str, after: str) -> None:
        self.before, self.after = before, after

    def __repr__(self) -> str:
        return f"{self.before} -> Function -> {self.after}"

    @property
    def nonlinear(self) -> bool:
        """Something besides the Function is nonlinear in x."""
        return self.before in self.NONLINEAR or self.after in ("sin", "relu")

    @property
    def trained_layer(self) -> bool:
        return "Linear" in self.before or "Linear" in self.after

    def loss(self, function, x: torch.Tensor) -> torch.Tensor:
        """after(function(before(x))) summed; layers seeded, so every call builds the same."""
        n = x.shape[-1]
        torch.manual_seed(0)
        first, last = torch.nn.Linear(n, n).double(), torch.nn.Linear(n, 1).double()
        self.layers = (first, last)  # the last call's trained layers, to read their .grad
        u = {"x": lambda t: t, "sin": torch.sin, "x * x": lambda t: t * t,
             "relu": torch.relu, "Linear": first,
             "Linear -> ReLU": lambda t: torch.relu(first(t))}[self.before](x)
        y = function(u)
        return {"sum": lambda t: t, "sin": torch.sin, "relu": torch.relu,
                "Linear": last}[self.after](y).sum()


@named("the Function straight on x or after sin, x * x, relu, Linear, Linear -> ReLU; "
       "its output summed, or through sin, relu or Linear")
def around_the_function() -> st.SearchStrategy[Around]:
    """Maps and trained layers a reader puts before and after a custom Function."""
    return st.builds(Around, st.sampled_from(["x", *Around.NONLINEAR, "Linear"]),
                     st.sampled_from(["sum", "sin", "relu", "Linear"]))



def returning_none(wants_grad: list[bool], returns_none: list[bool], other_paths: bool):
    """Inputs (ones(2), requiring grad where ``wants_grad`` says) and a loss of them: a
    Function, sum of t_i * (i + 1), whose ``backward`` returns None for the inputs
    ``returns_none`` marks, plus, with ``other_paths``, a plain sum of each input."""
    returns_none = returns_none[:len(wants_grad)] + [False] * (len(wants_grad) - len(returns_none))

    class Weighted(torch.autograd.Function):
        @staticmethod
        def forward(*inputs):
            return sum(t * (i + 1) for i, t in enumerate(inputs))

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad_output):
            return tuple(None if none else grad_output * (i + 1) for i, none in enumerate(returns_none))
    inputs = [torch.ones(2, requires_grad=wants) for wants in wants_grad]

    def loss() -> torch.Tensor:
        return Weighted.apply(*inputs).sum() + (sum(t.sum() for t in inputs) if other_paths else 0)
    return inputs, returns_none, loss

def main() -> None:
    x = torch.tensor([0.5, 1.0, 2.5], dtype=torch.float64, requires_grad=True)
    for name, (function, differentiable) in CUSTOM_BACKWARDS.items():
        first = torch.autograd.gradcheck(function.apply, (x,))
        second = passes_gradgradcheck(name, x.tolist())
        assert first and second == differentiable, name
        print(f"{name:50} gradcheck {first}, gradgradcheck {second}")
    for name, function in CUBES_THROUGH_A_FUNCTION.items():
        first = torch.autograd.gradcheck(function.apply, (x,))
        second = torch.autograd.gradgradcheck(function.apply, (x,), raise_exception=False)
        assert first and second == name.endswith(" 1 · 6x"), name
        print(f"{name:50} gradcheck {first}, gradgradcheck {second}")


if __name__ == "__main__":
    main()
