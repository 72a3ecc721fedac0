"""Per-sample derivatives of a network with Dropout in training mode, and whether a
value ``u`` and a derivative ``u_x`` come from one dropout mask.

For ``u = W2 (m * tanh(W1 s + b1)) + b2``, with ``m`` a 0-or-2 mask on the hidden
units (``Dropout(0.5)`` in training mode), both ``u`` and ``du/ds`` are linear in
``m``: enumerating every mask gives every pair ``(u, u_x)`` one mask can produce.
"""
import torch
from torch.func import jacfwd, jacrev, vmap


def with_dropout(setting) -> torch.nn.Sequential:
    """The drawn tanh MLP (``reader_settings.multi_feature_inputs``) with a
    ``Dropout(0.5)`` after its Tanh, in training mode."""
    first, activation, last = setting.model
    return torch.nn.Sequential(first, activation, torch.nn.Dropout(0.5), last).train()


def u_and_u_x_in_one_call(net, samples):
    """The page's recipe: ``u`` and its per-sample derivative from one ``jacrev``
    call, ``u`` returned as the aux output, so both see the same masks."""
    def both(s):
        u = net(s)
        return u, u

    u_x, u = vmap(jacrev(both, has_aux=True), randomness="different")(samples)
    return u, u_x


def u_u_x_and_hessian_in_one_call(net, samples):
    """The page's residual recipe: ``jacrev``'s value (and its aux ``u``) returned as
    the aux output of ``jacfwd(..., randomness="same")``, so ``u``, ``u_x`` and the
    Hessian of each sample see one mask."""
    def both(s):
        u = net(s)
        return u, u

    def d1(s):
        g, u = jacrev(both, has_aux=True)(s)
        return g, (g, u)

    H, (u_x, u) = vmap(jacfwd(d1, has_aux=True, randomness="same"),
                       randomness="different")(samples)
    return u, u_x, H


def one_mask_distance(net, samples, u, u_x, hessian=None) -> torch.Tensor:
    """Per sample, the distance from ``(u, u_x)`` (and ``hessian``, if given) to the
    nearest such tuple that one mask gives (0 when one mask made them all), for a
    ``with_dropout`` net with one output. ``u=None`` or ``u_x=None`` leaves it out."""
    first, last = net[0], net[-1]
    hidden = torch.tanh(first(samples)).detach()                       # (N, H)
    masks = torch.cartesian_prod(*[torch.tensor([0.0, 2.0], dtype=hidden.dtype)]
                                 * hidden.shape[1])                    # (M, H)
    w2 = last.weight.detach()[0]
    one_u = torch.einsum("mh,nh,h->nm", masks, hidden, w2) + last.bias.detach()
    one_u_x = torch.einsum("mh,nh,h,hf->nmf", masks, 1 - hidden ** 2, w2,
                           first.weight.detach())                      # (N, M, F)
    given = [(one_u, u), (one_u_x, u_x)]
    if hessian is not None:
        # d2u/ds_a ds_b = sum_h w2_h m_h tanh''(z_h) W1_ha W1_hb
        curvature = -2 * hidden * (1 - hidden ** 2)
        W1 = first.weight.detach()
        one_H = torch.einsum("mh,nh,h,ha,hb->nmab", masks, curvature, w2, W1, W1)
        given.append((one_H, hessian))
    n, m = len(samples), len(masks)
    pairs = torch.cat([one.reshape(n, m, -1) for one, got in given if got is not None], dim=-1)
    got = torch.cat([got.detach().reshape(n, -1) for _, got in given if got is not None], dim=-1)
    return (pairs - got[:, None]).norm(dim=-1).min(dim=1).values
