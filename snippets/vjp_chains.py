"""The three-step chains of explanation/reverse-mode-is-a-chain-of-vjps, as a family.

The page's chain rule, J = J3 J2 J1 with a seed v shaped like y entering from the left,
is checked over these chains, and tests/test_old_sentences.py replays the sentence it
replaced ("from the left or from the right") over the same members.
"""

from __future__ import annotations

from families import SEEDS, Map, elementwise_maps, named
from hypothesis import strategies as st


@named("chains x -> a = Wx -> b = g(Ba) -> y = Ub, g elementwise, sizes n, k + 1, k, m with n != m")
@st.composite
def three_step_chains(draw) -> tuple[int, Map, int, int]:
    """(n, g, m, seed): x in R^n -> a -> b -> y in R^m, with W, B and U drawn from
    ``seed`` and k = g.n; m != n so that a seed shaped like y and one shaped like x
    differ, and a, b of different sizes so that their cotangents cannot be confused."""
    n = draw(st.integers(1, 5))
    m = draw(st.integers(1, 5).filter(lambda size: size != n))
    return n, draw(elementwise_maps(st.integers(2, 5))), m, draw(SEEDS)
