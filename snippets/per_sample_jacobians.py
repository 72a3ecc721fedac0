"""Per-sample Jacobians with ``vmap`` of ``jacfwd`` or ``jacrev`` of a model that has
Dropout or BatchNorm1d: when the mapped call raises, and what works instead.

``vmap(jac(model))`` calls ``model`` on one sample at a time. With Dropout in
training mode that raises ("called random operation": vmap refuses random draws by
default); after ``model.eval()`` it runs. BatchNorm1d refuses a single unbatched
sample in either mode ("expected 2D or 3D input"), and in training mode it mixes
the samples (each output depends on every sample); after ``model.eval()``, mapping
``lambda row: model(row[None])[0]`` runs. Either way the result is each sample's
Jacobian, the one a loop over the samples gives. The drawn model gets a head of
three outputs, so each sample's Jacobian has several rows.
"""

import torch
from families import seeded
from oracle import check_close

REFUSALS = {"Dropout": "called random operation", "BatchNorm1d": "expected 2D or 3D input"}


def vmap_after_eval_and_one_row_at_a_time_for_batchnorm(setting, jac=torch.func.jacfwd):
    """``setting``: a ``reader_settings.train_mode_models()`` member. True when
    ``vmap(jac(model))`` raises as said (in training mode; for BatchNorm1d in eval
    mode too) and the fixed call gives each sample's Jacobian after ``eval()``."""
    with seeded(0):
        head = torch.nn.Linear(1, 3, dtype=setting.inputs.dtype)  # several outputs per sample
    model, batch = torch.nn.Sequential(*setting.model, head).train(), setting.inputs.detach()
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
    if setting.kind == "BatchNorm1d":  # in training mode each output reads every sample
        model.train()
        whole = torch.autograd.functional.jacobian(model, batch)  # (B, outputs, B, F)
        others = [whole[i, :, j] for i in range(len(batch)) for j in range(len(batch)) if i != j]
        assert torch.stack(others).abs().max() > 1e-6, "train-mode BatchNorm1d left the samples apart"
    model.eval()
    looped = torch.stack([jac(one_row)(row) for row in batch])
    fixed = torch.func.vmap(jac(one_row if setting.kind == "BatchNorm1d" else model))
    check_close(fixed(batch), looped, "after eval(): each sample's Jacobian")
    model.train()
    return True


def train_mode_dropout_gives_one_mask_per_sample(net, jac, seed):
    """``net``: a ``families.small_networks(batchnorm=False)`` member, given Dropout(0.5)
    before its last layer, in training mode. The default ``vmap`` raises; with
    ``randomness="different"`` (and ``jacfwd``'s own ``randomness="same"``) each
    sample's Jacobian is ``W diag(mask) J_hidden`` for one 0/2 mask of its own, and
    the masks are not all the same."""
    dropped = torch.nn.Sequential(*net[:-1], torch.nn.Dropout(0.5), net[-1]).train()
    with seeded(seed):
        points = torch.randn(6, net.in_features, dtype=torch.float64)
    try:
        torch.func.vmap(jac(dropped))(points)
    except RuntimeError as error:
        assert REFUSALS["Dropout"] in str(error), error
    else:
        return False
    inner = jac(dropped, randomness="same") if jac is torch.func.jacfwd else jac(dropped)
    with seeded(seed):
        per_sample = torch.func.vmap(inner, randomness="different")(points)
    hidden = torch.func.vmap(torch.func.jacfwd(torch.nn.Sequential(*net[:-1])))(points)
    width = hidden.shape[1]
    bits = (torch.arange(2**width)[:, None] >> torch.arange(width)) & 1
    masks = 2.0 * bits.double()  # every 0/2 mask Dropout(0.5) can draw
    weight = net[-1].weight.detach()
    candidates = torch.einsum("ok,mk,bki->bmoi", weight, masks, hidden)
    error = (candidates - per_sample[:, None]).abs().flatten(2).amax(-1)  # (B, masks)
    fits = error < 1e-9
    assert fits.any(1).all(), "a sample's Jacobian is no single mask's"
    assert not fits.all(0).any(), "one mask fits every sample: the draws are shared"
    return True


def conv_batchnorm2d_on_images(batch, seed):
    """Conv2d-BatchNorm2d-ReLU in eval mode and an image batch (batch, 3, 6, 6)."""
    with seeded(seed):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                    torch.nn.ReLU()).eval()
        return model, torch.randn(batch, 3, 6, 6)


def batchnorm2d_image_batch_needs_one_row_at_a_time(batch, seed, jac=torch.func.jacrev):
    """An image batch through ``conv_batchnorm2d_on_images``' model in eval mode:
    ``vmap(jac(model))`` raises (BatchNorm2d wants 4D input, vmap passes 3D), and
    mapping ``lambda row: model(row[None])[0]`` gives each image's Jacobian."""
    model, images = conv_batchnorm2d_on_images(batch, seed)
    try:
        torch.func.vmap(jac(model))(images)
    except ValueError as error:
        assert "expected 4D input" in str(error), error
    else:
        return False
    one_row = lambda row: model(row[None])[0]  # noqa: E731 (the page's own words)
    looped = torch.stack([jac(one_row)(image) for image in images])
    check_close(torch.func.vmap(jac(one_row))(images), looped, "each image's Jacobian")
    return True


def main() -> None:
    """Check the recipe over the train-mode models, with jacfwd and with jacrev, and
    show the unconditional sentence ("vmap(jacrev(model)) gives each sample's
    Jacobian") fail on a Dropout model in training mode."""
    from families import members
    from reader_settings import train_mode_models

    settings = members(train_mode_models(), 6)
    assert {setting.kind for setting in settings} == set(REFUSALS), "draw both kinds"
    for jac in (torch.func.jacfwd, torch.func.jacrev):
        assert all(vmap_after_eval_and_one_row_at_a_time_for_batchnorm(s, jac) for s in settings)
    dropout = next(setting for setting in settings if setting.kind == "Dropout").model.train()
    try:
        torch.func.vmap(torch.func.jacrev(dropout))(torch.ones(3, dropout[0].in_features, dtype=torch.float64))
    except RuntimeError as error:
        assert REFUSALS["Dropout"] in str(error), error
        print("unconditional sentence fails as expected:", str(error).splitlines()[0][:70])
    else:
        raise AssertionError("vmap(jacrev) of a train-mode Dropout model ran")
    print(f"per-sample Jacobian recipe holds on {len(settings)} train-mode models, jacfwd and jacrev")


if __name__ == "__main__":
    main()


# -- Layers that expect the batch dimension ----------------------------------------

BATCH_DIMENSION_LAYERS = ("Flatten", "Softmax(dim=1)", "BatchNorm1d", "BatchNorm2d", "none")


def batch_dimension_models():
    """Strategy of (name, model in eval mode, batch): models readers map with
    ``vmap(jac(model))``. Some have a layer that expects the batch dimension: an MLP
    with BatchNorm1d, a Conv2d-BatchNorm2d-ReLU, an image classifier Conv2d-ReLU-
    Flatten-Linear on 1 to 3 channels, an MLP ending in Softmax(dim=1); "none" is a
    plain MLP (Tanh), which such a mapping handles either way."""
    from families import SEEDS, named
    from hypothesis import strategies as st

    @named("eval-mode models with BatchNorm1d, Conv2d-BatchNorm2d, Conv2d-ReLU-Flatten-Linear "
           "(1 to 3 channels), a Softmax(dim=1) head, or none of these (an MLP)")
    @st.composite
    def draw_one(draw):
        kind, batch, seed = draw(st.sampled_from(BATCH_DIMENSION_LAYERS)), draw(st.integers(2, 4)), draw(SEEDS)
        channels, side, features = draw(st.integers(1, 3)), draw(st.integers(3, 5)), draw(st.integers(2, 4))
        nn = torch.nn
        with seeded(seed):
            if kind in ("BatchNorm2d", "Flatten"):
                middle = ((nn.BatchNorm2d(2), nn.ReLU()) if kind == "BatchNorm2d"
                          else (nn.ReLU(), nn.Flatten(), nn.Linear(2 * side * side, 3)))
                model = nn.Sequential(nn.Conv2d(channels, 2, 3, padding=1), *middle)
                batch_of = torch.randn(batch, channels, side, side)
            else:
                middle = (nn.BatchNorm1d(5),) if kind == "BatchNorm1d" else ()
                head = (nn.Softmax(dim=1),) if kind == "Softmax(dim=1)" else ()
                model = nn.Sequential(nn.Linear(features, 5), *middle, nn.Tanh(), nn.Linear(5, 3), *head)
                batch_of = torch.randn(batch, features)
            for module in model.modules():  # running statistics that are not 0 and 1
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    module.running_mean.uniform_(-1, 1)
                    module.running_var.uniform_(0.5, 2)
        return kind, model.double().eval(), batch_of.double()

    return draw_one()


def one_row_at_a_time_works_whatever_the_layers(member, jac=torch.func.jacfwd):
    """``member``: a ``batch_dimension_models()`` draw. Each sample's Jacobian, the
    diagonal block of the whole batch's: ``vmap(jac(model))`` raises or gives
    something else exactly when the model has a layer that expects the batch
    dimension; ``vmap(jac(lambda row: model(row[None])[0]))`` gives it for every
    model."""
    kind, model, batch = member
    whole = torch.autograd.functional.jacobian(model, batch)  # (B, *out, B, *in)
    out_dims = model(batch).dim() - 1
    own = torch.stack([whole[(b,) + (slice(None),) * out_dims + (b,)] for b in range(len(batch))])
    one_row = lambda row: model(row[None])[0]  # noqa: E731 (the page's own words)
    check_close(torch.func.vmap(jac(one_row))(batch), own, "row[None]: each sample's Jacobian")
    try:
        plain = torch.func.vmap(jac(model))(batch)
    except (RuntimeError, ValueError, IndexError):
        return kind != "none"
    breaks = plain.shape != own.shape or not torch.allclose(plain, own)
    return breaks == (kind != "none")
