"""A forward pass run after an optimizer step under CPU autocast. An autocast block
keeps its casts of the weights until it ends, so a forward pass inside a block that
also holds the step uses the weights from before the step, with no error; with a
block per forward pass (the step outside them) it uses the new weights."""
import copy
from contextlib import nullcontext

import torch
from families import labelled
from hypothesis import strategies as st

BLOCKS = ("one block holds the step", "a block per forward pass")
AUTOCAST_BLOCKS = labelled(st.sampled_from(BLOCKS), "autocast blocks: one around the step, one per forward pass")


def _outer(blocks, dtype):
    return torch.autocast("cpu", dtype=dtype) if blocks == BLOCKS[0] else nullcontext()


def _cast(dtype):
    return torch.autocast("cpu", dtype=dtype)


def rerun_after_step(dtype, blocks, seed):
    """The two-loss cell, its forward pass run again after the step: whether the re-run
    output equals the output before the step, and whether the second loss's gradient
    is the one at the new weights (a copy of the stepped net in a fresh block)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
        batch = torch.randn(4, 2)
    with _outer(blocks, dtype):
        with _cast(dtype):
            out = net(batch)
        out.float().sum().backward()
        torch.optim.SGD(net.parameters(), lr=0.1).step()
        net.zero_grad()
        with _cast(dtype):
            again = net(batch)
        (again.float() ** 2).sum().backward()
    stepped = copy.deepcopy(net)
    stepped.zero_grad()
    with _cast(dtype):
        (stepped(batch).float() ** 2).sum().backward()
    new_weights = all(torch.equal(p.grad, q.grad) for p, q in zip(net.parameters(), stepped.parameters()))
    return torch.equal(again, out), new_weights


def generator_gradient_after_d_step(dtype, blocks, seed):
    """The GAN cell under autocast, D stepped before the generator's pass: whether G's
    gradient is the one against D before its step, and whether it is the one against
    D after it (copies of G and D in a fresh block)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        G, D = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        z = torch.randn(4, 2)
    G_initial, D_before = copy.deepcopy(G), copy.deepcopy(D)
    with _outer(blocks, dtype):
        with _cast(dtype):
            fake = G(z)
            d_out = D(fake.detach())
        d_out.float().mean().backward()
        torch.optim.SGD(D.parameters(), lr=0.5).step()
        with _cast(dtype):
            g_out = D(fake)
        (-g_out.float().mean()).backward()

    def against(discriminator):
        generator = copy.deepcopy(G_initial)
        with _cast(dtype):
            (-discriminator(generator(z)).float().mean()).backward()
        return generator.weight.grad

    return (torch.equal(G.weight.grad, against(D_before)),
            torch.equal(G.weight.grad, against(copy.deepcopy(D))))


def detached_loop_after_steps(dtype, blocks, seed):
    """The detach loop (h = tanh(cell(h.detach()) + 1), SGD steps), three steps, with
    cell(ones) read in each forward block: whether every read equals the first, and
    whether each read differs from the one before it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cell = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)
    h, reads = torch.zeros(1, 2), []
    with _outer(blocks, dtype):
        for _step in range(3):
            with _cast(dtype):
                reads.append(cell(torch.ones(1, 2)))
                h = torch.tanh(cell(h.detach()) + 1)
            optimizer.zero_grad()
            h.float().sum().backward()
            optimizer.step()
    return (all(torch.equal(read, reads[0]) for read in reads),
            all(not torch.equal(a, b) for a, b in zip(reads, reads[1:])))


def sees_the_step_only_outside_a_block_holding_it(run, dtype, blocks, seed):
    """``run`` gives (old result, new result): (True, False) in one block holding the
    step, (False, True) with a block per forward pass."""
    expected = (True, False) if blocks == BLOCKS[0] else (False, True)
    got = run(dtype, blocks, seed)
    assert got == expected, f"{run.__name__}, {blocks}: {got}"


if __name__ == "__main__":
    for dtype in (torch.bfloat16, torch.float16):
        for run in (rerun_after_step, generator_gradient_after_d_step, detached_loop_after_steps):
            for blocks in BLOCKS:
                sees_the_step_only_outside_a_block_holding_it(run, dtype, blocks, 0)
    print("a block around the step keeps the old casts; a block per forward pass sees the step")
