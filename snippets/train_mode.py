"""A network in train mode: the reader setting where a forward pass has side effects.

Dropout draws a new mask on every call and BatchNorm moves its running statistics,
so running the forward pass again gives another function and another state. Pages
check their recipes against ``train_mode_net`` (and checkpointing against
``batchnorm_updates``); run this file to see the effects.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint


def train_mode_net(seed: int = 0) -> torch.nn.Sequential:
    """Linear, BatchNorm1d, Dropout, Linear (2 inputs, 3 outputs), in train mode."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(2, 8), torch.nn.BatchNorm1d(8),
            torch.nn.Dropout(0.5), torch.nn.Linear(8, 3),
        ).train()


def first_sample(net: torch.nn.Module, others: torch.Tensor | None = None):
    """x ↦ net's output for x, first in a fixed batch (BatchNorm needs a batch): x
    then ``others``, by default four rows of two."""
    others = torch.linspace(-1, 1, 8).reshape(4, 2) if others is None else others
    return lambda x: net(torch.cat([x[None], others]))[0]


def rows_by_backward(fn, x: torch.Tensor, outputs: int, *, one_forward: bool):
    """The Jacobian of ``fn`` at ``x`` by one backward per unit seed: one forward pass
    kept with retain_graph, or a forward pass per row."""
    x = x.detach().requires_grad_()
    once, rows = fn(x) if one_forward else None, []
    for i in range(outputs):
        y = once if one_forward else fn(x)
        (row,) = torch.autograd.grad(y, x, torch.eye(outputs)[i], retain_graph=True)
        rows.append(row)
    return torch.stack(rows)


def batchnorm_updates(checkpointed: bool) -> int:
    """How often a BatchNorm in train mode moves its running statistics in one forward
    and backward pass of a block, plain or under activation checkpointing."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        block = torch.nn.Sequential(
            torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh()
        ).train()
    batch = torch.linspace(-2, 2, 64).reshape(16, 4).requires_grad_()
    output = checkpoint(block, batch, use_reentrant=False) if checkpointed else block(batch)
    output.pow(2).sum().backward()
    return int(block[1].num_batches_tracked)


if __name__ == "__main__":
    assert (batchnorm_updates(False), batchnorm_updates(True)) == (1, 2)
    net = train_mode_net()
    fn, x = first_sample(net), torch.tensor([1.0, 2.0])
    with torch.random.fork_rng():
        torch.manual_seed(0)
        again = rows_by_backward(fn, x, 3, one_forward=False)
        torch.manual_seed(0)
        once = rows_by_backward(fn, x, 3, one_forward=True)
    assert not torch.allclose(again, once), "Dropout should make the rows differ"
    assert net[1].num_batches_tracked.item() == 4  # 3 + 1 forward passes
    print("rows, a forward per row:\n", again, "\nrows, one forward:\n", once)
