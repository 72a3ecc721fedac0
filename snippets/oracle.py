"""Independent oracles that every page checks its claims against.

A page's hidden cells compare what PyTorch printed with something computed another
way: a closed form, finite differences, or a different API. When the two disagree
the cell raises ``ClaimFailed`` and the build fails, naming the page and the claim.
"""

from __future__ import annotations

import sys
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


def check_raised(error_class: type[BaseException], words: str, claim: str) -> str:
    """Raise ``ClaimFailed`` unless the cell just above raised ``error_class`` with ``words``.

    For cells tagged ``raises-exception``: IPython keeps the error in
    ``sys.last_value``, so the check reads what the reader saw raised instead of
    running the call again. The message must start with ``words``. The error is
    then forgotten, so a later check cannot pass on a stale one. Returns the message.
    """
    error, sys.last_value = getattr(sys, "last_value", None), None
    if not isinstance(error, error_class):
        raise ClaimFailed(f"claim no longer holds: {claim}\n  the cell above raised {error!r}")
    check_text(str(error)[: len(words)], words, claim)
    return str(error)


def check_differs(actual, belief, claim: str, *, atol: float = 1e-4) -> None:
    """Raise ``ClaimFailed`` if a counterexample agrees with the belief it refutes."""
    actual_t = torch.as_tensor(actual).detach().double()
    belief_t = torch.as_tensor(belief).detach().double()
    if actual_t.shape == belief_t.shape and torch.allclose(
        actual_t, belief_t, atol=atol, equal_nan=True
    ):
        raise ClaimFailed(f"claim no longer holds: {claim}\n"
                          f"  both are {actual_t}: the counterexample agrees with the belief")


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
    try:
        raise ValueError("no gradient here, sorry")
    except ValueError as error:
        sys.last_value = error  # what IPython does when a cell raises
    assert check_raised(ValueError, "no gradient", "it raises") == "no gradient here, sorry"
    try:
        check_raised(ValueError, "no gradient", "it raises again")
    except ClaimFailed:
        pass
    else:
        raise AssertionError("check_raised accepted an error it had already read")
    check_differs(torch.ones(2), torch.zeros(2), "ones differ from zeros")
    try:
        check_differs(torch.ones(2), torch.ones(2), "ones differ from ones")
    except ClaimFailed:
        pass
    else:
        raise AssertionError("check_differs accepted a counterexample that agrees")
    print("✓ raised errors are read once, and agreeing counterexamples rejected")


if __name__ == "__main__":
    main()
