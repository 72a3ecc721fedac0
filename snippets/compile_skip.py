"""A torch.func transform run on a compiled function makes Dynamo skip its code for
the rest of the process (until torch._dynamo.reset()), not only the compiled object."""

import torch
from compiled_double_backward import FUNC_FIRST, SECOND_ORDER


class _TanhModule(torch.nn.Module):
    """A module class whose instances share one forward code object."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 8)

    def forward(self, t):
        return torch.tanh(self.layer(t)).sum()


# What a reader compiles anew after a torch.func transform ran a compiled function:
# the same function, or another instance of the module class.
FRESH = {"a new torch.compile of the same function": "function",
         "a new torch.compile of another instance of the same module class": "module"}


def skip_outlives_the_compiled_object(case) -> bool:
    """After FUNC_FIRST[first] ran a compiled function (or module instance), a new
    torch.compile of the same function (or of another instance of its class) compiles
    no frame at two new input shapes and gives eager values; without the transform it
    compiles, and after torch._dynamo.reset() it compiles again."""
    from torch._dynamo.testing import CompileCounterWithBackend

    name, first, fresh, transform_first = case
    at = torch.tensor([0.5, 1.0])
    later = (torch.tensor([[0.5, 1.0], [0.2, -0.3], [1.0, 2.0]]), torch.tensor([[0.1, 0.3]] * 5))
    make = ((lambda: SECOND_ORDER[name]) if FRESH[fresh] == "function" else _TanhModule)

    def frames_of_a_new_compile():
        counter, target = CompileCounterWithBackend("aot_eager"), make()
        compiled = torch.compile(target, backend=counter)
        values = [compiled(t) for t in later]
        eager = [target(t) for t in later]
        return counter.frame_count, all(torch.allclose(v, e) for v, e in zip(values, eager, strict=True))

    torch._dynamo.reset()
    if transform_first:
        FUNC_FIRST[first](torch.compile(make(), backend="aot_eager"), at)
    frames, same = frames_of_a_new_compile()
    torch._dynamo.reset()
    after_reset, _ = frames_of_a_new_compile()
    torch._dynamo.reset()
    return same and after_reset >= 1 and (frames == 0) == transform_first


def fresh_compile_cases():
    """Strategy of (function, transform, fresh compile, transform ran first?)."""
    from hypothesis import strategies as st

    cases = st.tuples(st.sampled_from(sorted(SECOND_ORDER)), st.sampled_from(list(FUNC_FIRST)),
                      st.sampled_from(list(FRESH)), st.booleans())
    cases.family_name = ("tanh(t).sum(), (sin(t) * t).sum(), a Tanh network and a Tanh module class, "
                         "compiled with aot_eager, run by " + ", ".join(FUNC_FIRST) + " or not, then "
                         + " or ".join(FRESH) + " called at two new shapes, and again after "
                         "torch._dynamo.reset()")
    return cases
