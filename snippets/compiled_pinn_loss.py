"""A PINN loss whose input derivatives are taken by ``torch.func`` inside the
function ``torch.compile`` compiles, and its weight gradients compiled and eager.

Through a compiled *module*, ``autograd.grad(..., create_graph=True)`` gives a
derivative that cannot be differentiated again (``compiled_double_backward``); a
compiled *loss* that takes its derivatives with ``vmap(jacrev(net))`` and
``vmap(hessian(net))`` traces them into its own graph, and its ``backward`` runs (torch 2.13.0: for Tanh,
Softplus or GELU networks on contiguous points; with SiLU or Mish, or on non-contiguous
points, the compilation raises, see ``compile_error_in_a_fresh_process``).
"""
import copy
import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch._dynamo
from families import named
from hypothesis import strategies as st
from reader_settings import FEATURE_COUNTS, Setting, multi_feature_inputs
from torch.func import hessian, jacrev, vmap


def _activation_words(features: st.SearchStrategy[int] = FEATURE_COUNTS,
                      activations: tuple[str, ...] = ("Tanh",)) -> str:
    listed = activations[0] if len(activations) == 1 else (
        f"{', '.join(activations[:-1])} or {activations[-1]}")
    return multi_feature_inputs(features=features).family_name.replace("tanh MLPs", f"MLPs with {listed}")


@named(_activation_words)
@st.composite
def pinn_networks(draw, features: st.SearchStrategy[int] = FEATURE_COUNTS,
                  activations: tuple[str, ...] = ("Tanh",)) -> Setting:
    """``multi_feature_inputs``' members with their Tanh replaced by an activation
    drawn from ``activations`` (a ``torch.nn`` name): the smooth ones a PINN uses."""
    setting, activation = draw(multi_feature_inputs(features=features)), draw(st.sampled_from(activations))
    model = copy.deepcopy(setting.model)
    model[1] = getattr(torch.nn, activation)()
    return dataclasses.replace(setting, name=setting.name.replace("tanh", activation, 1), model=model)


def heat_residual(net):
    """The mean square of ``u_t - u_xx`` per sample, ``x`` the first input column and
    ``t`` the last, for a ``net`` with one output per sample."""
    def loss(points):
        du = vmap(jacrev(net))(points)[:, 0]
        H = vmap(hessian(net))(points)[:, 0]
        return (du[:, -1] - H[:, 0, 0]).pow(2).mean()

    return loss


def compiled_and_eager_gradients(net, points):
    """The weight gradients of ``heat_residual(net)`` at ``points``, compiled with
    ``aot_eager`` (afresh) and eager; an unused parameter gets zeros."""
    params, loss = list(net.parameters()), heat_residual(net)
    torch._dynamo.reset()
    compiled = torch.autograd.grad(torch.compile(loss, backend="aot_eager")(points), params,
                                   materialize_grads=True)
    eager = torch.autograd.grad(loss(points), params, materialize_grads=True)
    return compiled, eager


def column_slice(points: torch.Tensor) -> torch.Tensor:
    """The points as the first columns of a data tensor with one more column after
    them (a measured u, as in ``data[:, :2]``): the same values, not contiguous."""
    return torch.cat([points, points[:, :1]], dim=1)[:, :points.shape[1]]


def transposed(points: torch.Tensor) -> torch.Tensor:
    """The points as the transpose of a features-by-samples tensor (``data.T``): the
    same values, not contiguous."""
    return points.T.contiguous().T


def row_step(points: torch.Tensor) -> torch.Tensor:
    """The points as every second row of a data tensor (``data[::2]``): the same
    values, not contiguous."""
    return torch.stack([points, points], dim=1).flatten(0, 1)[::2]


def expanded(points: torch.Tensor) -> torch.Tensor:
    """The first point repeated by ``expand`` (stride 0) over one more row than
    ``points`` has: not contiguous."""
    return points[:1].expand(len(points) + 1, -1)


NON_CONTIGUOUS = {"column slice": column_slice, "transposed": transposed, "row step": row_step,
                  "expanded": expanded}
NON_CONTIGUOUS_WORDS = "a column slice, transposed points, a row step, or an expanded point"


def _compile_error(net, points) -> str:
    """What compiling ``heat_residual(net)`` with aot_eager and running it, forward
    and backward, at ``points`` raises ('' if nothing)."""
    loss = torch.compile(heat_residual(net), backend="aot_eager")
    try:
        torch.autograd.grad(loss(points), list(net.parameters()), materialize_grads=True)
    except Exception as error:  # noqa: BLE001 - the error is the answer
        return f"{type(error).__name__}: {error}"
    return ""


def compile_error_in_a_fresh_process(net, points) -> str:
    """``_compile_error(net, points)``, run in a new Python process (``points`` keep
    their strides through ``torch.save``). A compilation that failed leaves state
    behind: after a few, a later compile of another loss in the same process can
    raise "FakeTensorDeviceMismatchError" (seen on torch 2.13.0), so a check that
    shows a failure must not share the page's process."""
    with tempfile.TemporaryDirectory() as folder:
        case = Path(folder) / "case.pt"
        torch.save((net, points), case)
        run = subprocess.run([sys.executable, __file__, str(case)], capture_output=True, text=True,
                             timeout=600, check=False)
        if run.returncode:
            raise RuntimeError(f"the fresh process failed:\n{run.stderr[-2000:]}")
        return (Path(folder) / "error.txt").read_text(encoding="utf8")


if __name__ == "__main__":
    if len(sys.argv) == 2:  # the fresh process of compile_error_in_a_fresh_process
        case = Path(sys.argv[1])
        (case.parent / "error.txt").write_text(_compile_error(*torch.load(case, weights_only=False)),
                                               encoding="utf8")
    else:  # run on its own: each layout is not contiguous, and keeps the points' values
        points = torch.randn(4, 2)
        for layout, arrange in NON_CONTIGUOUS.items():
            arranged = arrange(points)
            assert not arranged.is_contiguous(), layout
            assert torch.equal(arranged, points[:1].expand_as(arranged) if layout == "expanded" else points), layout
