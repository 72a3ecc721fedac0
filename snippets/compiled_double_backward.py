"""What differentiating a gradient again through ``torch.compile`` gives.

A first derivative taken through a compiled region (``backend="aot_eager"``) with
``create_graph=True`` cannot be differentiated again. Which error says so depends
on the input and on what the compiled backward reads: a contiguous leaf through a
backward that reuses it (``(t * t).sum()``, ``(t.sin() * t).sum()``) gives
"torch.compile with aot_autograd does not currently support double backward",
while a view as input (such as ``torch.linspace(...).unsqueeze(1)``) or a backward
that reads only the outputs (``tanh(t).sum()``, ``exp(t).sum()``) gives "appears
to not have been used in the graph". In that
second case ``allow_unused=True`` returns ``None`` and ``materialize_grads=True``
returns zeros, although the true second derivative is not zero.

Run this file to see both messages and the silent zeros.
"""
import torch
import torch._dynamo

DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
NOT_USED = "The differentiated Tensor at index 0 appears to not have been used in the graph"


def second_grad_through_compile(function, inputs, compiled=True, backend="aot_eager", wrt=None, **grad_options):
    """The second ``grad`` of ``function`` (compiled with ``backend`` unless
    ``compiled=False``) at ``inputs``, seeded with ones: the error message it raised,
    or what it returned. With ``wrt`` (a list of tensors, such as ``inputs`` and a
    layer's weight, as a gradient penalty differentiates), the first derivative's
    gradient with respect to each, flattened into one tensor."""
    if compiled:
        torch._dynamo.reset()  # compile afresh: one input's graph must not serve another
        function = torch.compile(function, backend=backend)
    out = function(inputs)
    (first,) = torch.autograd.grad(out, inputs, torch.ones_like(out), create_graph=True)
    try:
        second = torch.autograd.grad(first, inputs if wrt is None else wrt, torch.ones_like(first), **grad_options)
    except RuntimeError as error:
        return str(error)
    return second[0] if wrt is None else torch.cat([part.flatten() for part in second])


def main() -> None:
    def energy(t):
        return (t.sin() * t).sum()

    leaf = torch.tensor([0.5, 1.0], requires_grad=True)
    view = torch.linspace(0.5, 1.0, 2).unsqueeze(1).requires_grad_(True)
    assert second_grad_through_compile(energy, leaf).startswith(DOUBLE_BACKWARD)
    assert second_grad_through_compile(energy, view).startswith(NOT_USED)
    assert second_grad_through_compile(energy, view, allow_unused=True) is None
    zeros = second_grad_through_compile(energy, view, materialize_grads=True)
    true = second_grad_through_compile(energy, view, compiled=False)
    assert bool((zeros == 0).all()) and bool((true != 0).all()), (zeros, true)
    print("leaf:", DOUBLE_BACKWARD)
    print("view:", NOT_USED, "; materialize_grads:", zeros.flatten().tolist(),
          "true:", true.flatten().tolist())


if __name__ == "__main__":
    main()


# For the pages' "cannot be differentiated again" sentences: functions whose
# second derivative is not zero, so a second grad has something to find.
CURVED = ("sin(x)", "tanh(x)", "exp(x)", "x**2", "x**3 - x", "sigmoid(x)", "softplus(x)")


# For "one grad per order": maps whose derivatives turn constant, recorded (x**2 and
# x**3 - x above keep pow's backward in the graph) or not: t * t * t's third, t * t's
# second, 3 * t's first come with no grad_fn; a Linear layer's first has its weight's.
TURNING_CONSTANT = {"t * t * t": lambda t: t * t * t, "t * t": lambda t: t * t, "3 * t": lambda t: 3 * t,
                    "Linear(t)": lambda t: _LAYER_BEFORE[t.shape[-1]](t)}


def curved_sums(turning_constant: bool = False):
    """Strategy of ``g(t).sum()`` for an elementwise g with g'' not 0, on t of
    length 2 to 6 (``Map.point`` gives t); with ``turning_constant``, for the maps of
    ``TURNING_CONSTANT`` too."""
    from families import ELEMENTWISE, SIZES, Map, named
    from hypothesis import strategies as st

    maps = {name: ELEMENTWISE[name] for name in CURVED} | (TURNING_CONSTANT if turning_constant else {})
    also = (", and " + ", ".join(TURNING_CONSTANT) + ", whose derivatives turn constant") if turning_constant else ""

    @named("g(t).sum() for g in " + ", ".join(CURVED) + also + "; t of length 2 to 6")
    @st.composite
    def draw_one(draw) -> Map:
        name, n = draw(st.sampled_from(tuple(maps))), draw(SIZES)
        return Map(f"{name} summed", lambda t: maps[name](t).sum(), n, "curved")

    return draw_one()


def point_seeds():
    """Strategy of the seeds ``Map.point`` draws the point t from, named as such."""
    from families import SEEDS, labelled

    return labelled(SEEDS, "seeds of the point t")


def cannot_be_differentiated_again(g, seed) -> bool:
    """For a member of ``curved_sums``: eager mode's second grad is a tensor, and the
    second grad through the compiled g raises one of the two messages."""
    at = g.point(seed).requires_grad_(True)
    compiled = second_grad_through_compile(g, at)
    return (isinstance(second_grad_through_compile(g, at, compiled=False), torch.Tensor)
            and isinstance(compiled, str) and compiled.startswith((DOUBLE_BACKWARD, NOT_USED)))


def one_feature_networks(compiled: bool = False):
    """Strategy of small networks on one input feature, with an activation or none
    (a network with no activation has a constant u_x); with ``compiled``, also
    smooth ones (Tanh) under ``torch.compile(backend="aot_eager")``."""
    from families import Network, small_networks
    from hypothesis import strategies as st

    def smooth_compiled(net):
        return torch.compile(Network(net[0], torch.nn.Tanh(), net[-1]), backend="aot_eager")

    nets = st.one_of(small_networks(batchnorm=False, n=st.just(1)),
                     small_networks(batchnorm=False, n=st.just(1)).map(lambda net: Network(net[0], net[-1])))
    nets.family_name = "small networks on one feature, with an activation or none"
    if not compiled:
        return nets
    both = st.one_of(nets, small_networks(batchnorm=False, n=st.just(1)).map(smooth_compiled))
    both.family_name = ("small networks on one feature, with an activation or none, "
                        "and smooth ones under torch.compile")
    return both


# Uncompiled terms a reader adds to a compiled function (a regulariser, a residual
# path): a constant Hessian, ones that vary with t, one off the diagonal.
UNCOMPILED_TERMS = {"(t**2).sum()": lambda t: (t**2).sum(), "(t**3).sum()": lambda t: (t**3).sum(),
                    "t.sin().sum()": lambda t: t.sin().sum(), "t[0] * t[1]": lambda t: t[0] * t[1]}


def uncompiled_terms():
    """Strategy: no term (None), or the name of an ``UNCOMPILED_TERMS`` term added to
    the compiled function, named as such."""
    from families import labelled
    from hypothesis import strategies as st

    return labelled(st.sampled_from((None, *UNCOMPILED_TERMS)), "the compiled g(t).sum() alone, or plus "
                    "an uncompiled " + ", ".join(UNCOMPILED_TERMS))


def hessian_keeps_only_uncompiled_part(g, seed, term_name) -> bool:
    """For a member of ``curved_sums``: ``functional.hessian`` of the compiled g plus
    the uncompiled term (if any) raises nothing and returns the uncompiled term's
    Hessian only (zeros with no term), which is not eager mode's."""
    from torch.autograd import functional

    at = g.point(seed)
    torch._dynamo.reset()
    compiled = torch.compile(g, backend="aot_eager")
    term = UNCOMPILED_TERMS[term_name] if term_name else (lambda t: t.sum() * 0)
    silent = functional.hessian(lambda t: compiled(t) + term(t), at)
    eager = torch.func.hessian(lambda t: g(t) + term(t))(at)
    part = torch.func.hessian(term)(at)
    return (torch.allclose(silent, part) and not torch.allclose(silent, eager)
            and bool((silent != 0).any()) == bool(term_name))


# Trained layers a compiled function applies around the call: before it, one per
# length of t (2 to 6); after it, on the call's (scalar) result.
with torch.random.fork_rng():
    torch.manual_seed(0)
    _LAYER_BEFORE = {n: torch.nn.Linear(n, n).double() for n in range(2, 7)}
    _LAYER_AFTER = torch.nn.Linear(1, 1).double()


def _no_weights(n):
    return []


class _ScaledBy(torch.nn.Module):
    """w * E(t), w a module's parameter (a learnable temperature or loss weight) or its
    buffer (a fixed weight: a tensor that does not require grad)."""

    def __init__(self, w, E):
        super().__init__()
        self.E = E
        if isinstance(w, torch.nn.Parameter):
            self.w = w
        else:
            self.register_buffer("w", w)

    def forward(self, t):
        return self.w * self.E(t)


_LEARNED_SCALE = torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64))


# What a compiled function does around a call to a torch.compiler.disable'd E:
# name -> (outer function of E, whether it only scales the call's result by constants or
# adds such results, the weights it trains for t of length n).
AROUND = {"2 * E(t)": (lambda E: lambda t: 2 * E(t), True, _no_weights),
          "E(t) - E(t) / 3": (lambda E: lambda t: E(t) - E(t) / 3, True, _no_weights),
          "buffer w * E(t)": (lambda E: _ScaledBy(torch.tensor(2.0, dtype=torch.float64), E), True, _no_weights),
          "nn.Parameter w * E(t)": (lambda E: _ScaledBy(_LEARNED_SCALE, E), False, lambda n: [_LEARNED_SCALE]),
          "E(2 * t)": (lambda E: lambda t: E(2 * t), False, _no_weights),
          "E(t / 255)": (lambda E: lambda t: E(t / 255), False, _no_weights),
          "E(Linear(t))": (lambda E: lambda t: E(_LAYER_BEFORE[t.shape[-1]](t)), False,
                           lambda n: [_LAYER_BEFORE[n].weight]),
          "Linear(E(t))": (lambda E: lambda t: _LAYER_AFTER(E(t).reshape(1)).sum(), False,
                           lambda n: [_LAYER_AFTER.weight]),
          "tanh(E(t))": (lambda E: lambda t: torch.tanh(E(t)), False, _no_weights),
          "exp(E(t))": (lambda E: lambda t: torch.exp(E(t)), False, _no_weights),
          "E(t) ** 2": (lambda E: lambda t: E(t) ** 2, False, _no_weights),
          "E(t.sin())": (lambda E: lambda t: E(t.sin()), False, _no_weights),
          "E(t) + (t ** 3).sum()": (lambda E: lambda t: E(t) + (t**3).sum(), False, _no_weights)}


def around_the_call(results_only: bool = False):
    """Strategy of names in ``AROUND`` (with ``results_only``, only those that scale
    the call's result by constants or add such results)."""
    from families import labelled
    from hypothesis import strategies as st

    names = [name for name, (_, on_results, _) in AROUND.items() if on_results or not results_only]
    what = ("compiled work that only scales the call's results by constants or adds them" if results_only
            else "compiled work")
    return labelled(st.sampled_from(names), f"{what} around the call: " + ", ".join(names))


# For "functional.hvp and vhp of a compiled function raise or return zeros":
# scalar functions of t, with a second derivative that is not zero.
with torch.random.fork_rng():
    torch.manual_seed(0)
    _NETWORK = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def _tanh_network(t):
    return _NETWORK(t).sum()


SECOND_ORDER = {"tanh(t).sum()": lambda t: t.tanh().sum(),
                "(sin(t) * t).sum()": lambda t: (t.sin() * t).sum(),
                "a Tanh network": _tanh_network}


# What a torch.func transform does to a compiled function: Dynamo gives up on its
# frame, and every later call, these included, runs eagerly.
FUNC_FIRST = {"torch.func.grad": lambda c, at: torch.func.grad(c)(at),
              "torch.func.jacrev": lambda c, at: torch.func.jacrev(c)(at),
              "torch.func.vmap": lambda c, at: torch.func.vmap(c)(at.unsqueeze(0)),
              "torch.func.jvp": lambda c, at: torch.func.jvp(c, (at,), (at,))}
# What a training step runs through the compiled function first: a backward compiles
# its backward graph for one ordinary pass (with buffers it may free), which a later
# create_graph=True pass then meets.
TRAINING_FIRST = {"a forward": lambda c, at: c(at.clone().requires_grad_()),
                  "a forward and backward": lambda c, at: c(at.clone().requires_grad_()).backward()}


def functional_through_compile(name, backend, api, first=None, batch=False):
    """``functional.<api>`` (hvp, vhp or hessian) of SECOND_ORDER[name] compiled
    afresh with ``backend``, at t = [0.5, 1.0] with u = [1, -1] (with ``batch``, at a
    batch t of shape (4, 2) and a u like it), called first, or after
    ``FUNC_FIRST[first]`` or ``TRAINING_FIRST[first]`` ran the compiled function:
    "raises" for the double-backward error, "error" for another RuntimeError, "zeros"
    for zeros where eager mode's result is not zero, "eager" for eager mode's values
    with no frame compiled, else "other"."""
    from torch._dynamo.utils import counters
    from torch.autograd import functional

    at, u = torch.tensor([0.5, 1.0]), torch.tensor([1.0, -1.0])
    if batch:
        at, u = torch.randn(2, 4, 2, generator=torch.Generator().manual_seed(0))
    f = SECOND_ORDER[name]
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(f, backend=backend)
    if first is not None:
        {**FUNC_FIRST, **TRAINING_FIRST}[first](compiled, at)

    def call(g):
        return functional.hessian(g, at) if api == "hessian" else getattr(functional, api)(g, at, u)[1]

    try:
        result = call(compiled)
    except RuntimeError as error:
        return "raises" if str(error).startswith(DOUBLE_BACKWARD) else "error"
    eager = call(f)
    if bool((result == 0).all()) and bool((eager != 0).any()):
        return "zeros"
    return "eager" if torch.allclose(result, eager) and counters["frames"]["ok"] == 0 else "other"


def as_the_history_says(case) -> bool:
    """Called first, or after a training step's forward (and backward) ran it, a
    compiled function's hvp, vhp and hessian raise an error or give zeros; after a
    torch.func transform ran it, each gives eager values, uncompiled."""
    name, backend, api, first, *batch = case
    outcome = functional_through_compile(name, backend, api, first, *batch)
    if first in FUNC_FIRST:
        return outcome == "eager"
    return outcome in ("raises", "error", "zeros")


def functional_cases(history: bool = False, after_func: bool = False):
    """Strategy of (function, backend, api) for functional_through_compile; with
    ``history``, (function, backend, api, first, batch) with hessian too, first None
    or a training step's forward (and backward) run before, on t or on a batch; with
    ``after_func``, (function, backend, api, first), first a torch.func transform."""
    from hypothesis import strategies as st

    names, backends = st.sampled_from(sorted(SECOND_ORDER)), st.sampled_from(["aot_eager", "inductor"])
    apis = st.sampled_from(["hvp", "vhp", "hessian"])
    if not history:
        cases = st.tuples(names, backends, st.sampled_from(["hvp", "vhp"]))
        cases.family_name = ("hvp and vhp of tanh(t).sum(), (sin(t) * t).sum() and a Tanh network, "
                             "compiled with aot_eager or inductor")
        return cases
    functions = ("hvp, vhp and hessian of tanh(t).sum(), (sin(t) * t).sum() and a Tanh network, "
                 "compiled with aot_eager or inductor, called ")
    if after_func:
        cases = st.tuples(names, backends, apis, st.sampled_from(list(FUNC_FIRST)))
        cases.family_name = functions + "after " + ", ".join(FUNC_FIRST) + " ran it"
        return cases
    cases = st.tuples(names, backends, apis, st.sampled_from([None, *TRAINING_FIRST]), st.booleans())
    cases.family_name = (functions + "first or after " + " or ".join(TRAINING_FIRST)
                         + " ran it, on t of shape (2,) or a batch (4, 2)")
    return cases
