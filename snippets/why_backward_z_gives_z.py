"""The Stack Overflow question that started this site, as a script you can run.

``y = z`` is the identity, so its Jacobian is the identity matrix I, and
``y.backward(z)`` accumulates the vector-Jacobian product zᵀI = z into ``z.grad``:
the seed comes back unchanged, not the derivative 1.
"""

import torch


def main() -> None:
    # [start-question]
    z = torch.linspace(-1, 1, steps=5, requires_grad=True)
    y = z
    y.backward(z)
    print("Z tensor is: {} \n Gradient of y with respect to z is: {}".format(z, z.grad))
    # [end-question]
    assert torch.equal(z.grad, z.detach()), "the seed z should come back unchanged"

    # [start-what-was-wanted]
    z = torch.linspace(-1, 1, steps=5, requires_grad=True)
    y = z
    y.backward(torch.ones_like(y))  # seed with ones: 1ᵀJ, the column sums of J
    print(z.grad)
    # [end-what-was-wanted]
    assert torch.equal(z.grad, torch.ones(5)), "dy_i/dz_i = 1 for the identity"


if __name__ == "__main__":
    main()
