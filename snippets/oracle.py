"""Independent oracles that every page checks its claims against.

A page's hidden cells compare what PyTorch printed with something computed another
way: a closed form, finite differences, or a different API. When the two disagree
the cell raises ``ClaimFailed`` and the build fails, naming the page and the claim.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class ClaimFailed(AssertionError):
    """A sentence on the page is no longer true of what PyTorch computes."""


def finite_difference_jacobian(
    f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """The Jacobian of ``f`` at ``x`` by central differences, in float64.

    Shape ``f(x).shape + x.shape``, like ``torch.autograd.functional.jacobian``.
    Autograd is not involved: ``f`` is only ever evaluated.
    """
    with torch.no_grad():
        x = x.detach().to(torch.float64)
        flat = x.reshape(-1)
        columns = []
        for i in range(flat.numel()):
            step = torch.zeros_like(flat)
            step[i] = eps
            forward = f((flat + step).reshape(x.shape))
            backward = f((flat - step).reshape(x.shape))
            columns.append(((forward - backward) / (2 * eps)).reshape(-1))
        output_shape = f(x).shape
        return torch.stack(columns, dim=-1).reshape(output_shape + x.shape)


def check_close(
    actual,
    expected,
    claim: str,
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    show: bool = False,
) -> None:
    """Raise ``ClaimFailed`` unless ``actual`` matches ``expected`` in shape and value.

    ``claim`` is the sentence the page relies on, quoted in the failure so the
    author knows which prose to revisit. With ``show=True`` a passing check prints
    a line for readers (use it in ``remove-input`` cells).
    """
    actual_t = torch.as_tensor(actual).detach()
    expected_t = torch.as_tensor(expected).detach()
    if actual_t.shape != expected_t.shape:
        _fail(claim, actual_t, expected_t, f"shape {tuple(actual_t.shape)} "
              f"!= expected {tuple(expected_t.shape)}")
    dtype = torch.promote_types(
        torch.promote_types(actual_t.dtype, expected_t.dtype), torch.float64
    )
    a, e = actual_t.to(dtype), expected_t.to(dtype)
    if not torch.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True):
        worst = (a - e).abs().nan_to_num(nan=float("inf")).max().item()
        _fail(claim, actual_t, expected_t, f"largest difference {worst:.3g}")
    if show:
        print(f"✓ {claim}")


def check_text(actual: str, expected: str, claim: str, *, show: bool = False) -> None:
    """Raise ``ClaimFailed`` unless two printed representations are identical."""
    if actual != expected:
        raise ClaimFailed(
            f"claim no longer holds: {claim}\n"
            f"  PyTorch printed: {actual!r}\n"
            f"  the page says:   {expected!r}"
        )
    if show:
        print(f"✓ {claim}")


def _fail(claim: str, actual, expected, why: str):
    raise ClaimFailed(
        f"claim no longer holds: {claim}\n"
        f"  PyTorch computed: {actual}\n"
        f"  the oracle says:  {expected}\n"
        f"  ({why})"
    )


def main() -> None:
    """Check the oracles against derivatives known in closed form."""
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    check_close(finite_difference_jacobian(torch.sin, x), torch.diag(torch.cos(x)),
                "d sin = cos on the diagonal", show=True)
    A = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    check_close(finite_difference_jacobian(lambda v: A @ v, x), A,
                "the Jacobian of x -> Ax is A", show=True)
    try:
        check_close(torch.ones(3), torch.zeros(3), "ones are zeros")
    except ClaimFailed as failure:
        assert "ones are zeros" in str(failure)
    else:
        raise AssertionError("check_close accepted a false claim")
    print("✓ a false claim is rejected, and named in the message")


if __name__ == "__main__":
    main()
