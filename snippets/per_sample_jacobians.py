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

import copy

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


def dropout_models():
    """Strategy of networks whose last layer is a Linear, in float64, with their
    ``sample_shape``: a ``families.small_networks(batchnorm=False)`` MLP, or an image
    classifier Conv2d(1 to 2 channels, 2, 3, padding=1)-ReLU-Flatten-Linear on 2x2
    images (Flatten expects the batch dimension)."""
    from families import SEEDS, labelled, small_networks
    from hypothesis import strategies as st

    @st.composite
    def classifier(draw):
        channels, outputs, seed = draw(st.integers(1, 2)), draw(st.integers(2, 3)), draw(SEEDS)
        nn = torch.nn
        with seeded(seed):
            net = nn.Sequential(nn.Conv2d(channels, 2, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                nn.Linear(8, outputs)).double()
        net.sample_shape = (channels, 2, 2)
        return net

    def mlp(net):
        net.sample_shape = (net.in_features,)
        return net

    return labelled(st.one_of(small_networks(batchnorm=False).map(mlp), classifier()),
                    "two-layer MLPs, and Conv2d-ReLU-Flatten-Linear image classifiers")


def masks_that_fit(body, last, points, per_sample):
    """For ``body``, then Dropout(0.5), then the Linear ``last``, and each sample's
    Jacobian ``per_sample`` (B, outputs, inputs, inputs flattened): which of the 0/2
    masks Dropout(0.5) can draw give each column of it, as (B, masks, inputs)
    booleans. One mask gives a sample's whole Jacobian where ``.all(-1)`` holds."""
    hidden = torch.func.vmap(torch.func.jacfwd(lambda row: body(row[None])[0]))(points).flatten(2)
    width = hidden.shape[1]
    bits = (torch.arange(2**width)[:, None] >> torch.arange(width)) & 1
    masks = 2.0 * bits.to(hidden.dtype)  # every 0/2 mask Dropout(0.5) can draw
    candidates = torch.einsum("ok,mk,bki->bmoi", last.weight.detach(), masks, hidden)
    return (candidates - per_sample.flatten(2)[:, None]).abs().amax(2) < 1e-9


def train_mode_dropout_gives_one_mask_per_sample(net, jac, seed):
    """``net``: a ``dropout_models()`` member, given Dropout(0.5) before its last
    layer, in training mode. The default ``vmap`` raises; mapping ``lambda row:
    dropped(row[None])[0]`` with ``randomness="different"`` (and ``jacfwd``'s own
    ``randomness="same"``), each sample's Jacobian is ``W diag(mask) J_hidden`` for
    one 0/2 mask of its own, and the masks are not all the same."""
    dropped = torch.nn.Sequential(*net[:-1], torch.nn.Dropout(0.5), net[-1]).train()
    one_row = lambda row: dropped(row[None])[0]  # noqa: E731 (the page's own words)
    with seeded(seed):
        points = torch.randn(6, *net.sample_shape, dtype=torch.float64)
    try:
        torch.func.vmap(jac(one_row))(points)
    except RuntimeError as error:
        assert REFUSALS["Dropout"] in str(error), error
    else:
        return False
    inner = jac(one_row, randomness="same") if jac is torch.func.jacfwd else jac(one_row)
    with seeded(seed):
        per_sample = torch.func.vmap(inner, randomness="different")(points).flatten(2)
    fits = masks_that_fit(torch.nn.Sequential(*net[:-1]), net[-1], points, per_sample).all(-1)
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
# Sequence layers, each followed by a Linear on its last step (``LastStep``).
# ``row[None]`` restores their batch dimension; what then raises is an
# operation with no vmap batching rule (RNN, GRU, LSTM in float64: an in-place
# broadcast) or no forward-mode formula (LSTM's mkldnn kernel in float32, the
# scaled-dot-product attention of TransformerEncoderLayer), on torch 2.13, CPU.
# MultiheadAttention is called with the default need_weights=True, and once with
# need_weights=False, which takes the scaled-dot-product path (no forward-mode formula);
# each as self-attention on one tensor, mha(x, x, x), and on separate tensors as
# readers pass them (``SEPARATE``): a view of the input for each, as a new row[None]
# each time, or a memory as key and value (cross-attention). The eval fast path,
# frozen, takes only the first.
SEPARATE = (", views of the input as query, key and value", ", a memory as key and value")
SEQUENCE_LAYERS = ("RNN", "GRU", "LSTM", "TransformerEncoderLayer") + tuple(
    attention + separate for attention in ("MultiheadAttention", "MultiheadAttention, need_weights=False")
    for separate in ("", *SEPARATE))


def still_raises(kind, dtype, jac, batch_first=True):
    """The page's list: under jacfwd RNN, GRU, LSTM, TransformerEncoderLayer, a
    MultiheadAttention called with need_weights=False, and a frozen one (kind
    ending ", frozen": the eval fast path, which a batch_first layer with an even
    number of heads takes) given one tensor as query, key and value raise; under jacrev RNN, GRU and a
    float64 LSTM."""
    frozen = kind.endswith(", frozen") and batch_first
    kind = kind.removesuffix(", frozen")
    if jac is torch.func.jacfwd:
        return kind in ("RNN", "GRU", "LSTM", "TransformerEncoderLayer") or "need_weights=False" in kind or (
            frozen and kind.startswith("MultiheadAttention") and not kind.endswith(SEPARATE))
    return kind in ("RNN", "GRU") or (kind == "LSTM" and dtype == torch.float64)


class LastStep(torch.nn.Module):
    """A sequence layer, then a Linear on its last step (batched or not). Attention
    gets one tensor as query, key and value, or, with ``separate`` one of
    ``SEPARATE``, a view of ``x`` for each, or ``x`` as query and a memory of 2
    steps as key and value."""

    def __init__(self, layer, head, need_weights=True, separate=""):
        super().__init__()
        self.layer, self.head, self.need_weights, self.separate = layer, head, need_weights, separate
        with seeded(1):
            self.register_buffer("memory", torch.randn(2, 4, dtype=head.weight.dtype))

    def forward(self, x):
        if isinstance(self.layer, torch.nn.MultiheadAttention):
            out = self.layer(x, *self.keys_and_values(x), need_weights=self.need_weights)[0]
        else:
            out = self.layer(x)
            out = out[0] if isinstance(out, tuple) else out
        return self.head(self.last_step(out))

    def keys_and_values(self, x):
        if not self.separate:
            return x, x
        if self.separate == SEPARATE[0]:
            return x[:], x[:]
        if self.layer.batch_first:  # the memory, repeated over x's batch
            memory = self.memory.unsqueeze(0).expand(x.shape[0], -1, -1)
        else:
            memory = self.memory.unsqueeze(1).expand(-1, x.shape[1], -1)
        return memory, memory

    @staticmethod
    def last_step(out):  # batch_first: (batch, steps, features), or one sample's (steps, features)
        return out[..., -1, :]


def _sequence_layer(kind):
    nn = torch.nn
    if kind == "TransformerEncoderLayer":
        return nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)
    if kind.startswith("MultiheadAttention"):
        return nn.MultiheadAttention(4, 2, batch_first=True)
    return getattr(nn, kind)(4, 4, batch_first=True)


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


def one_row_at_a_time_fixes_the_batch_dimension(member, jac=torch.func.jacfwd):
    """``member``: a ``batch_dimension_models()`` draw. Each sample's Jacobian, the
    diagonal block of the whole batch's: ``vmap(jac(model))`` raises or gives
    something else exactly when the model has a layer that expects the batch
    dimension; ``vmap(jac(lambda row: model(row[None])[0]))`` gives it for every
    model here (no sequence layer: ``sequence_models`` has those)."""
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


class SequenceModels(tuple):
    """(kind, model, batch) for each of ``SEQUENCE_LAYERS``, shown by its sizes."""

    def __repr__(self):
        kind, model, batch = self[0]
        return (f"RNN, GRU, LSTM, TransformerEncoderLayer, MultiheadAttention (need_weights True, False; "
                f"one tensor, views, a memory) on {len(batch)} sequences of {batch.shape[1]} steps")


def sequence_models():
    """Strategy of ``SequenceModels``: every one of the RNN, GRU, LSTM,
    TransformerEncoderLayer and MultiheadAttention (4 features, hidden 4, 2 heads; the
    attention called with need_weights=True and with False, each on one tensor as
    query, key and value and on the separate ones of ``SEPARATE``), then a Linear on
    the last step, in eval mode and float64 (the check runs each in float32 too), on
    one drawn batch of 2 to 4 sequences of 3 to 5 steps. Each member holds all ten:
    a draw of one kind at a time left some out."""
    from families import SEEDS, named
    from hypothesis import strategies as st

    @named("eval-mode RNN, GRU, LSTM, TransformerEncoderLayer and MultiheadAttention (need_weights "
           "True and False; on one tensor as query, key and value, and on separate ones: views of the "
           "input or a memory as key and value), each then a Linear on the last step")
    @st.composite
    def draw_one(draw):
        batch, steps, seed = draw(st.integers(2, 4)), draw(st.integers(3, 5)), draw(SEEDS)
        with seeded(seed):
            inputs = torch.randn(batch, steps, 4, dtype=torch.float64)
            return SequenceModels(
                (kind, LastStep(_sequence_layer(kind), torch.nn.Linear(4, 3),
                                need_weights="need_weights=False" not in kind,
                                separate=next((end for end in SEPARATE if kind.endswith(end)), "")
                                ).double().eval(), inputs)
                for kind in SEQUENCE_LAYERS)

    return draw_one()


def each_samples_jacobian(model, batch):
    """The diagonal blocks of the whole batch's Jacobian: each sample's own."""
    whole = torch.autograd.functional.jacobian(model, batch)  # (B, *out, B, *in)
    out_dims = model(batch).dim() - 1
    return torch.stack([whole[(b,) + (slice(None),) * out_dims + (b,)] for b in range(len(batch))])


def _row_none_on_a_sequence_model(model, batch, jac):
    """``vmap(jac(lambda row: model(row[None])[0]))`` raises exactly where the page
    says (``still_raises``); where it runs it gives each sample's Jacobian, and
    where it raises a loop of ``jacrev`` over the samples does."""
    own = each_samples_jacobian(model, batch)
    tolerance = {"atol": 1e-4, "rtol": 1e-4} if batch.dtype == torch.float32 else {}
    one_row = lambda row: model(row[None])[0]  # noqa: E731 (the page's own words)
    try:
        mapped = torch.func.vmap(jac(one_row))(batch)
    except (RuntimeError, NotImplementedError):
        looped = torch.stack([torch.func.jacrev(one_row)(row) for row in batch])
        check_close(looped, own, "a loop of jacrev over the samples", **tolerance)
        return still_raises(model.kind, batch.dtype, jac)
    check_close(mapped, own, "row[None]: each sample's Jacobian", **tolerance)
    return not still_raises(model.kind, batch.dtype, jac)


def one_row_at_a_time_raises_for_the_layers_named(models):
    """``models``: a ``sequence_models()`` draw, each run in float64 and float32
    under jacfwd and jacrev (the page names both): ``vmap(jac(lambda row:
    model(row[None])[0]))`` raises for exactly the layers the page lists
    (``still_raises``) and otherwise gives each sample's Jacobian; where it raises,
    a loop of ``jacrev`` over the samples gives it. Each model also runs with its
    parameters frozen (``requires_grad_(False)``), as for a pretrained model's input
    Jacobians: eval-mode attention then takes its fast path."""
    for kind, model, batch in models:
        for frozen in (False, True):
            for dtype in (torch.float64, torch.float32):
                typed = copy.deepcopy(model).to(dtype).requires_grad_(not frozen)
                typed.kind = kind + (", frozen" if frozen else "")
                for jac in (torch.func.jacfwd, torch.func.jacrev):
                    if not _row_none_on_a_sequence_model(typed, batch.to(dtype), jac):
                        ran = still_raises(typed.kind, dtype, jac)
                        raise AssertionError(f"{typed.kind}, {dtype}, {jac.__name__}: "
                                             f"{'ran' if ran else 'raised'}")
    return True


class StepsFirstLastStep(LastStep):
    """``LastStep``'s layer rebuilt with the default ``batch_first=False`` (the same
    weights): input (steps, batch, features), a Linear on the last step."""

    def __init__(self, batch_first_model):
        old = batch_first_model.layer
        nn = torch.nn
        if isinstance(old, nn.MultiheadAttention):
            layer = nn.MultiheadAttention(4, 2)
        elif isinstance(old, nn.TransformerEncoderLayer):
            layer = nn.TransformerEncoderLayer(4, 2, 8)
        else:
            layer = type(old)(4, 4)
        assert getattr(layer, "batch_first", False) is False  # the default
        layer.load_state_dict(old.state_dict())
        layer = layer.to(old.in_proj_weight.dtype if hasattr(old, "in_proj_weight")
                         else next(old.parameters()).dtype)
        super().__init__(layer, batch_first_model.head, batch_first_model.need_weights,
                         batch_first_model.separate)
        self.memory = batch_first_model.memory
        self.eval()

    @staticmethod
    def last_step(out):  # (steps, batch, features)
        return out[-1]


def default_layout_raises_or_gives_wrong_jacobians(models):
    """``models``: a ``sequence_models()`` draw, each layer rebuilt with the default
    ``batch_first=False`` and fed (steps, batch, features), in float64 and float32,
    under jacfwd and jacrev: ``vmap(jac(lambda row: model(row[None])[0]))`` raises
    for the same layers as with ``batch_first=True`` (``still_raises``), and where it
    runs (MultiheadAttention always, frozen or not: its fast path needs batch_first)
    its result is not each sample's Jacobian."""
    for kind, model, batch in models:
        for frozen in (False, True):
            for dtype in (torch.float64, torch.float32):
                typed = StepsFirstLastStep(copy.deepcopy(model).to(dtype)).requires_grad_(not frozen)
                _default_layout_one(kind + (", frozen" if frozen else ""), typed, batch.to(dtype))
    return True


def _default_layout_one(kind, typed, batch):
    """One layer in one dtype: see ``default_layout_raises_or_gives_wrong_jacobians``."""
    steps_first = batch.transpose(0, 1)
    own = each_samples_jacobian(lambda b: typed(b.transpose(0, 1)), batch)
    one_row = lambda row: typed(row[None])[0]  # noqa: E731 (the page's own words)
    for jac in (torch.func.jacfwd, torch.func.jacrev):
        where = f"{kind}, {batch.dtype}, {jac.__name__}"
        try:
            mapped = torch.func.vmap(jac(one_row))(steps_first)
        except (RuntimeError, NotImplementedError):
            assert still_raises(kind, batch.dtype, jac, batch_first=False), f"{where}: raised"
            continue
        assert not still_raises(kind, batch.dtype, jac, batch_first=False), f"{where}: ran"
        same = mapped.shape == own.shape and torch.allclose(mapped, own, atol=1e-4)
        assert not same, f"{where}: each sample's Jacobian"


def trainable_attention_under_no_grad_raises_under_jacfwd(seed, need_weights):
    """The other way onto the fast path: trainable self-attention in eval mode under
    torch.no_grad() (jacfwd raises), and jacrev, the loop's transform, runs."""
    with seeded(seed):
        attention, batch = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval(), torch.randn(3, 5, 4)

    def one_row(row):
        same = row[None]  # one tensor object as query, key and value
        return attention(same, same, same, need_weights=need_weights)[0][0]

    with torch.no_grad():
        torch.func.vmap(torch.func.jacrev(one_row))(batch)
        try:
            torch.func.vmap(torch.func.jacfwd(one_row))(batch)
        except NotImplementedError as error:
            return "forward AD" in str(error)
    return False
