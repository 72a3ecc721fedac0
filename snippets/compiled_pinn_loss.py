"""A PINN loss whose input derivatives are taken by ``torch.func`` inside the
function ``torch.compile`` compiles, and its weight gradients compiled and eager.

Through a compiled *module*, ``autograd.grad(..., create_graph=True)`` gives a
derivative that cannot be differentiated again (``compiled_double_backward``); a
compiled *loss* that takes its derivatives with ``vmap(jacrev(net))`` and
``vmap(hessian(net))`` traces them into its own graph, and its ``backward`` runs.
"""
import torch
import torch._dynamo
from torch.func import hessian, jacrev, vmap


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
