"""A gradient penalty through a critic compiled with ``backend="aot_eager"``, after
what a GAN's training loop may already have run through that critic.

Compiled afresh and used first by the penalty (or after a critic step whose inputs
need no grad), the critic gives the penalty's first ``grad``, and the penalty's
backward raises "torch.compile with aot_autograd does not currently support double
backward". After a generator step (a backward through the critic for fakes that
require grad) the region's backward was compiled for an ordinary pass, and already
the penalty's first ``grad`` with ``create_graph=True`` raises "This backward
function was compiled with non-empty donated buffers". Uncompiled, the same critic
trains with the penalty.

Run this file to see the three outcomes.
"""
import copy

import torch
import torch._dynamo

DONATED = "This backward function was compiled with non-empty donated buffers"

# What runs through the critic before the penalty: (critic, fake, real) -> None.
BEFORE_THE_PENALTY = {
    "nothing": lambda critic, fake, real: None,
    "a critic step": lambda critic, fake, real: (critic(fake.detach()).mean() - critic(real).mean()).backward(),
    "a generator step": lambda critic, fake, real: (-critic(fake).mean()).backward(),
}


def before_the_penalty():
    """Strategy of ``BEFORE_THE_PENALTY``'s names, named as such."""
    from families import labelled
    from hypothesis import strategies as st

    return labelled(st.sampled_from(list(BEFORE_THE_PENALTY)),
                    "a fresh compile, used first by the penalty, or after a critic step (inputs that "
                    "need no grad) or a generator step (fakes that require grad)")


def penalty_through_a_critic(setting, before: str = "nothing", compiled: bool = True):
    """A copy of ``setting.model``'s module, compiled afresh with aot_eager (or not),
    runs ``BEFORE_THE_PENALTY[before]`` with a generator's fakes and the setting's
    inputs as the real batch, then the gradient penalty at the real batch: returns
    (where, message, module): where it raised, "first grad" or "backward" (or "runs"),
    the error's message, and the uncompiled module, its ``.grad`` from the penalty."""
    from reader_settings import generator_for

    torch._dynamo.reset()  # past the recompile limit a compiled module would run eagerly
    module = copy.deepcopy(getattr(setting.model, "_orig_mod", setting.model))
    critic = torch.compile(module, backend="aot_eager") if compiled else module
    generator, z = generator_for(setting, 0)
    real = setting.inputs.detach()
    BEFORE_THE_PENALTY[before](critic, generator(z), real)
    module.zero_grad()
    x_hat = real.clone().requires_grad_()
    scores = critic(x_hat)
    try:
        (gradients,) = torch.autograd.grad(scores, x_hat, torch.ones_like(scores), create_graph=True)
    except RuntimeError as error:
        return "first grad", str(error), module
    try:
        ((gradients.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
    except RuntimeError as error:
        return "backward", str(error), module
    return "runs", "", module


def main() -> None:
    from compiled_double_backward import DOUBLE_BACKWARD
    from families import members
    from reader_settings import compiled_modules

    setting = members(compiled_modules(), 1)[0]
    for before in BEFORE_THE_PENALTY:
        where, message, _ = penalty_through_a_critic(setting, before)
        print(f"after {before}: {where} raises {message[:len(DONATED)]!r}")
        assert (where, message.startswith(DONATED if before == "a generator step" else DOUBLE_BACKWARD)) == (
            "first grad" if before == "a generator step" else "backward", True)
        where, _, module = penalty_through_a_critic(setting, before, compiled=False)
        assert where == "runs" and all(p.grad is not None for p in module.parameters() if p.dim() >= 2)
    print("uncompiled: the penalty runs after each")


if __name__ == "__main__":
    main()
