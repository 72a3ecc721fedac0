"""Per-sample Jacobians with ``vmap`` of ``jacfwd`` or ``jacrev`` of a model that has
Dropout or BatchNorm1d: when the mapped call raises, and what works instead.

``vmap(jac(model))`` calls ``model`` on one sample at a time. With Dropout in
training mode that raises ("called random operation": vmap refuses random draws by
default); after ``model.eval()`` it runs. BatchNorm1d refuses a single unbatched
sample in either mode ("expected 2D or 3D input"); after ``model.eval()``, mapping
``lambda row: model(row[None])[0]`` runs. Either way the result is each sample's
Jacobian, the one a loop over the samples gives.
"""

import torch
from oracle import check_close

REFUSALS = {"Dropout": "called random operation", "BatchNorm1d": "expected 2D or 3D input"}


def vmap_after_eval_and_one_row_at_a_time_for_batchnorm(setting, jac=torch.func.jacfwd):
    """``setting``: a ``reader_settings.train_mode_models()`` member. True when
    ``vmap(jac(model))`` raises as said (in training mode; for BatchNorm1d in eval
    mode too) and the fixed call gives each sample's Jacobian after ``eval()``."""
    model, batch = setting.model, setting.inputs.detach()
    one_row = lambda row: model(row[None])[0]  # noqa: E731 (the page's own words)
    mapped = torch.func.vmap(jac(model))
    modes = ("train", "eval") if setting.kind == "BatchNorm1d" else ("train",)
    for mode in modes:
        getattr(model, mode)()
        try:
            mapped(batch)
        except (RuntimeError, ValueError) as error:
            assert REFUSALS[setting.kind] in str(error), error
        else:
            return False
    model.eval()
    looped = torch.stack([jac(one_row)(row) for row in batch])
    fixed = torch.func.vmap(jac(one_row if setting.kind == "BatchNorm1d" else model))
    check_close(fixed(batch), looped, "after eval(): each sample's Jacobian")
    model.train()
    return True
