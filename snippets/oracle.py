"""Independent oracles that every page checks its claims against.

A page's hidden cells compare what PyTorch printed with something computed another
way: a closed form, finite differences, or a different API. When the two disagree
the cell raises ``ClaimFailed`` and the build fails, naming the page and the claim.

A check names the sentence it proves with ``quote=``: a verbatim excerpt of the
page's prose (line breaks and runs of spaces match any whitespace). A passing
check publishes a record of it (``CLAIM_MIMETYPE``) that the build reads: it
fails at the check's line when the quote is no longer in the page's prose, so a
checked sentence cannot change without its check being revisited, and it shows
readers which sentences were proved (``autograd_docs/execution/claims.py``).
A sentence stated over a family (every elementwise map, every point, every dtype)
is checked over that family by ``check_property``, with Hypothesis drawing the
members (``families.py`` holds the families).

Each record says, in a reader's words, what the check compared and over what
(``scope``: ``example`` or ``family``; ``compared``: both sides by the source the
check's call wrote, their values shortened, the tolerance; or the error and the
words matched; for a family its name and the members drawn), so the reveal can
say "checked on this example" or "checked over N members of ..." and never more.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import zlib
from collections.abc import Callable

import torch

from autograd_docs.claim_record import MIMETYPE as CLAIM_MIMETYPE
from autograd_docs.claim_record import PUBLISHED_WHEN

# A quote names a sentence or a clause: a word or two would match by accident.
MIN_QUOTE_WORDS = 4


class ClaimFailed(AssertionError):
    """A sentence on the page is no longer true of what PyTorch computes.

    From ``check_property``, it also says which members broke the sentence
    (``shown``, as its message names them) and why (``because``; empty when
    the sentence's check returned False)."""

    shown: str = ""
    because: str = ""


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
    claim: str | None = None,
    *,
    quote: str | None = None,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    show: bool = False,
) -> None:
    """Raise ``ClaimFailed`` unless ``actual`` matches ``expected`` in shape and value.

    ``claim`` is what the page relies on, said in the failure so the author knows
    which prose to revisit; ``quote`` is the sentence of the page it proves,
    verbatim (then ``claim`` may be left out). With ``show=True`` a passing check
    prints a line for readers (use it in ``remove-input`` cells).
    """
    claim = _claim(claim, quote)
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
    _proved("check_close", claim, quote, show, compared=lambda a, e: (
        f"{_side(a, actual_t)} against {_side(e, expected_t, quote=quote)}, "
        f"equal within {atol:g} + {rtol:g} × |expected|"))


def check_text(actual: str, expected: str, claim: str | None = None, *,
               quote: str | None = None, show: bool = False) -> None:
    """Raise ``ClaimFailed`` unless two printed representations are identical."""
    claim = _claim(claim, quote)
    if actual != expected:
        raise ClaimFailed(
            f"claim no longer holds: {claim}\n"
            f"  PyTorch printed: {actual!r}\n"
            f"  the page says:   {expected!r}"
        )
    _proved("check_text", claim, quote, show, compared=lambda a, e: _text_compared(a, actual, e))


def check_raised(error_class: type[BaseException], words: str, claim: str | None = None,
                 *, quote: str | None = None) -> str:
    """Raise ``ClaimFailed`` unless the cell just above raised ``error_class`` with ``words``.

    For cells tagged ``raises-exception``: IPython keeps the error in
    ``sys.last_value``, so the check reads what the reader saw raised instead of
    running the call again. The message must start with ``words``. The error is
    then forgotten, so a later check cannot pass on a stale one. Returns the message.
    """
    claim = _claim(claim, quote)
    error, sys.last_value = getattr(sys, "last_value", None), None
    if not isinstance(error, error_class):
        raise ClaimFailed(f"claim no longer holds: {claim}\n  the cell above raised {error!r}")
    if str(error)[: len(words)] != words:
        check_text(str(error)[: len(words)], words, claim)
    _proved("check_raised", claim, quote, False, compared=lambda *_: (
        f"the cell above raised {type(error).__name__}, its message starting "
        f"{_short(words)!r}"))
    return str(error)


def check_differs(actual, belief, claim: str | None = None, *, quote: str | None = None,
                  atol: float = 1e-4) -> None:
    """Raise ``ClaimFailed`` if a counterexample agrees with the belief it refutes."""
    claim = _claim(claim, quote)
    actual_t = torch.as_tensor(actual).detach().double()
    belief_t = torch.as_tensor(belief).detach().double()
    if actual_t.shape == belief_t.shape and torch.allclose(
        actual_t, belief_t, atol=atol, equal_nan=True
    ):
        raise ClaimFailed(f"claim no longer holds: {claim}\n"
                          f"  both are {actual_t}: the counterexample agrees with the belief")
    _proved("check_differs", claim, quote, False, compared=lambda a, b: (
        f"the counterexample {_side(a, actual_t)} differs from the belief "
        f"{_side(b, belief_t)} by more than {atol:g}"))


def shown_members(members: tuple) -> str:
    """How ``check_property``'s failure names the members that broke the sentence."""
    return ", ".join(repr(member) for member in members)


def check_property(holds: Callable[..., bool | None], *families, claim: str | None = None,
                   quote: str | None = None, examples: int | None = None,
                   fixed: str | None = None, shrink: bool = True) -> None:
    """Raise ``ClaimFailed`` unless ``holds(*members)`` for every member of the families.

    For a sentence stated over a family ("for every elementwise f", "at any
    point", "whatever the dtype"): each of ``families`` is a Hypothesis strategy
    (``families.py``), ``holds`` returns ``False`` or raises (an ``assert``, a
    ``check_*``) when the sentence is false of what it was given. The failure
    names the smallest counterexample Hypothesis found. The draw is derandomized
    (``families.CLAIM_SETTINGS``: the same members on every build and machine, no
    example database), bounded by ``examples``, and leaves torch's random state as
    it found it, so a hidden check never changes what the visible cells compute.
    ``fixed`` says, in a reader's words, what ``holds`` keeps the same for every
    member (a seed of ones, one dtype): the reveal shows it beside the family, so a
    sentence that says more than the family varies reads as such. ``shrink=False``
    names the first member drawn that breaks the sentence instead of a smaller one
    Hypothesis makes from it: a member the check itself draws, found without the
    shrinker's extra runs (``tests/test_old_sentences.py`` replays so).
    """
    from families import CLAIM_SETTINGS, from_the_seed_alone
    from hypothesis import Phase, given, seed, settings
    from hypothesis import strategies as st

    claim = _claim(claim, quote)
    examples = examples or CLAIM_SETTINGS.max_examples
    failures: list[tuple[tuple, BaseException | None]] = []
    drawn: list[tuple] = []  # every member run, in the order Hypothesis drew them

    phases = CLAIM_SETTINGS.phases if shrink else (Phase.explicit, Phase.generate)

    # Seeded by the claim: the same members every build, and each claim its own.
    @seed(zlib.crc32(claim.encode()))
    @settings(CLAIM_SETTINGS, max_examples=examples, phases=phases)
    @given(st.tuples(*families))
    def property_holds(members):
        drawn.append(members)
        try:
            ok = holds(*members)
        except Exception as failure:  # an error is a counterexample too: say which
            failures.append((members, failure))
            raise
        if ok is False:
            failures.append((members, None))
            raise AssertionError
    global _inside_property
    outer, _inside_property = _inside_property, True
    with torch.random.fork_rng(devices=[]), from_the_seed_alone():
        try:
            property_holds()
        except Exception:
            if not failures:
                raise  # the families themselves failed to draw: not a counterexample
            # Hypothesis replays the counterexample it reports last.
            members, failure = failures[-1]
            failed = ClaimFailed()
            failed.shown = shown_members(members)
            failed.because = "" if failure is None else (
                str(failure).strip() if isinstance(failure, AssertionError)
                else f"{type(failure).__name__}: {failure}")
            why = f"\n  because: {failed.because}" if failed.because else ""
            failed.args = (f"claim no longer holds: {claim}\n"
                           f"  counterexample: {failed.shown}{why}",)
            raise failed from None
        finally:
            _inside_property = outer
    names = [family_name(family) for family in families]
    _proved("check_property", claim, quote, False, scope="family", examples=examples,
            families=names, **_members(drawn), **({"fixed": fixed} if fixed else {}),
            compared=lambda source, *_: (f"`{_whole(source)}`" if source else "the check")
            + " held for every member drawn")


def family_name(strategy) -> str:
    """What a reader calls a family: its name (``families.named``), else what it
    draws in words ("integers from 0 to 5", "one of [m, -m] for m among floats
    from 0.001 to 1000.0"), never Hypothesis's repr."""
    named = getattr(strategy, "family_name", None)
    if named:
        return named
    base, how = _transformed(strategy)
    if base is not None:
        return f"{_function_words(how, base)} for {_parameter(how)} among {family_name(base)}"
    if isinstance(options := getattr(strategy, "original_strategies", None), (list, tuple)):
        return " or ".join(family_name(option) for option in options)  # a | b, one_of(a, b)
    if _lists_of(strategy) is not None:
        return f"lists of {family_name(_lists_of(strategy))}"
    try:
        return _strategy_words(ast.parse(repr(strategy), mode="eval").body)
    except (SyntaxError, RecursionError):
        return _parts_in_words(strategy)


def _parts_in_words(strategy) -> str:
    """A strategy whose repr is no Python (a lambda Hypothesis cannot show, members
    that print as words), said from its parts: what it picks from, what it lists."""
    if getattr(strategy, "_transformations", None):
        return "values Hypothesis draws"
    if type(strategy).__name__ == "SampledFromStrategy":
        return f"one of [{', '.join(map(repr, strategy.elements))}]"
    if type(strategy).__name__ == "JustStrategy":
        return f"the value {strategy.value!r}"
    return "values Hypothesis draws"


def _lists_of(strategy):
    """The strategy ``st.lists(elements)`` draws its entries from, else None
    (Hypothesis keeps a lazy strategy's arguments in ``_LazyStrategy__args``)."""
    function = getattr(strategy, "function", None)
    arguments = getattr(strategy, "_LazyStrategy__args", ())
    if getattr(function, "__name__", None) == "lists" and arguments and \
            not getattr(strategy, "_transformations", None):
        return arguments[0]
    return None


def _transformed(strategy):
    """``(base, function)`` for ``base.map(function)`` or ``base.flatmap(function)``,
    else ``(None, None)``. Hypothesis keeps a lazy strategy's maps in
    ``_transformations`` and a flatmap's parts as ``base`` and ``expand``
    (hypothesis 6.1xx; tests/test_claims.py holds the words this gives)."""
    if getattr(strategy, "expand", None) and getattr(strategy, "base", None) is not None:
        return strategy.base, strategy.expand
    maps = getattr(strategy, "_transformations", None)
    if maps and maps[-1][0] == "map":
        from hypothesis.strategies._internal.lazy import LazyStrategy

        bare = LazyStrategy(strategy.function, strategy._LazyStrategy__args,
                            strategy._LazyStrategy__kwargs, transforms=tuple(maps[:-1]))
        return bare, maps[-1][1]
    return None, None


class _Symbol:
    """A drawn value as a name: a map or flatmap applied to it says what it does
    (``lambda m: sampled_from([m, -m])`` gives "one of [m, -m]")."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _op(template):
        return lambda self, *other: _Symbol(template.format(self, *other))

    __neg__ = _op("-{}")
    __add__, __radd__ = _op("{} + {}"), _op("{1} + {0}")
    __sub__, __rsub__ = _op("{} - {}"), _op("{1} - {0}")
    __mul__, __rmul__ = _op("{} * {}"), _op("{1} * {0}")
    __truediv__, __rtruediv__ = _op("{} / {}"), _op("{1} / {0}")
    __pow__ = _op("{} ** {}")
    __getitem__ = _op("{}[{}]")
    __iter__ = None  # tuple(x) needs a real value: iterating by __getitem__ never ends
    del _op


def _parameter(function) -> str:
    code = getattr(function, "__code__", None)
    return code.co_varnames[0] if code is not None and code.co_argcount else "x"


def _function_words(function, base) -> str:
    """What a map or flatmap makes of a drawn value ``x``, in words."""
    name = _parameter(function)
    try:
        made = function(_Symbol(name))
    except Exception:  # it needs a real value (tuple(x), complex(x[0], x[1]))
        shown = getattr(function, "__name__", "<lambda>")
        return f"{shown}({name})" if shown != "<lambda>" else f"a value computed from {name}"
    return family_name(made) if hasattr(made, "example") else _whole(repr(made))


def _strategy_words(call: ast.expr) -> str:
    """A Hypothesis strategy's repr, parsed, in words: its kind and its bounds."""
    if not isinstance(call, ast.Call):
        return "values Hypothesis draws"
    if isinstance(call.func, ast.Attribute):  # .map(...), .filter(...), .flatmap(...)
        return _strategy_words(call.func.value) + ", transformed"
    if not isinstance(call.func, ast.Name):
        return "values Hypothesis draws"
    kind = call.func.id
    if kind == "one_of":
        return " or ".join(_strategy_words(option) for option in call.args)
    given = {k.arg: ast.unparse(k.value) for k in call.keywords}
    given.update(zip(("min_value", "max_value"), (ast.unparse(a) for a in call.args)))
    low, high = given.get("min_value"), given.get("max_value")
    if kind in ("integers", "floats"):
        bounds = (f" from {low} to {high}" if low and high else
                  f" from {low}" if low else f" up to {high}" if high else "")
        return f"{kind}{bounds}".replace("_", "")
    if kind == "sampled_from" and call.args:
        return f"one of {_whole(ast.unparse(call.args[0]))}"
    if kind == "booleans":
        return "True and False"
    if kind == "just" and call.args:
        return f"the value {_whole(ast.unparse(call.args[0]))}"
    if kind == "data":
        return "values the check draws as it runs"
    if kind == "tuples":
        return f"tuples of ({', '.join(_strategy_words(part) for part in call.args)})"
    if kind == "lists" and call.args:
        return f"lists of {_strategy_words(call.args[0])}"
    return kind.replace("_", " ")


# How many members a record lists by name (the first Hypothesis drew), and how much of
# each: enough to tell "tensor([0., 0.], dtype=torch.float16)" from its float32 twin.
MEMBERS_LISTED = 6
MEMBER_WIDTH = 80


def _members(drawn: list[tuple]) -> dict:
    """The members a property ran on, for its record: how many, and the first few
    and the smallest and largest number drawn, in short."""
    # Told apart in full, shown short: members that differ past the cut still count.
    distinct = list(dict.fromkeys(tuple(map(_member, members)) for members in drawn))
    shown = [", ".join(_short(m, MEMBER_WIDTH) for m in members) for members in distinct]
    numbers = [m for members in drawn for m in members
               if isinstance(m, (int, float)) and not isinstance(m, bool)]
    ends = {"smallest": repr(min(numbers)), "largest": repr(max(numbers))} if numbers else {}
    return {"members": len(distinct), "drawn": shown[:MEMBERS_LISTED], **ends}


# "<function f at 0x7f...>" and kin: an address says nothing and differs every run.
ADDRESS = re.compile(r"<(?:function|bound method|built-in function) ([\w.<>]+)[^>]*>|\s+at 0x[0-9a-f]+")


def _member(member) -> str:
    """A member as a reader can tell it apart: a function by its name, anything
    else by its repr with memory addresses left out."""
    if callable(member) and hasattr(member, "__name__") and not isinstance(member, type):
        return member.__name__
    return ADDRESS.sub(lambda m: m[1] or "", repr(member))


def _short(text: str, width: int = 60) -> str:
    """One line, at most ``width`` characters: what a reader can take in at a glance."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _side(source: str | None, value, quote: str | None = None) -> str:
    """One side of a comparison: the code that computed it and its value, shortened.
    A literal is a value typed out: said to be the sentence's when the quoted
    sentence states its numbers and its True or False, else the check's own."""
    shown = _short(repr(value))
    if source is None:
        return shown
    if quote is not None and _is_literal(source):
        whose = "the sentence states" if _states(quote, source) else "typed in the check"
        return f"the value {whose}, {shown}"
    named = _named(source)
    return f"{named} = {shown}" if named.startswith("`") else f"{named}, {shown}"


# A sign counts only where it starts the number ("(-1, 2)", "$-0.5$"), not in "x-1";
# True and False count as the words Python spells them.
VALUE = re.compile(r"(?<![\w.])[-\u2212]?\d+(?:\.\d+)?(?:e-?\d+)?|\b(?:True|False)\b")


def _values(text: str) -> list[float | str]:
    """The numbers (as floats) and the words True and False (as words) in ``text``:
    apart, so a typed True is not stated by a 1."""
    return [v if v in ("True", "False") else float(v.replace("\u2212", "-"))
            for v in VALUE.findall(text)]


def _states(quote: str, literal: str) -> bool:
    """Whether the typed value's signed numbers and True/False stand in the quoted
    sentence in the value's order (a subsequence: the sentence may say more around
    them). A value with none of them states nothing the sentence could say."""
    typed = _values(literal)
    said = iter(_values(quote))
    return bool(typed) and all(any(type(v) is type(s) and v == s for s in said) for v in typed)


def _is_literal(source: str) -> bool:
    """Whether the code is a value typed out (``2.0``, ``[1, 2]``, ``torch.tensor([1., 2.])``)."""
    try:
        node = ast.parse(source, mode="eval").body
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("torch.tensor", "tensor"):
            node = node.args[0] if node.args else node
        ast.literal_eval(node)
        return True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _text_compared(source: str | None, actual: str, expected_source: str | None) -> str:
    """What ``check_text`` compared: a condition's truth said as such (``repr(a > b)``
    against "True" checks that ``a > b``), else the two texts."""
    inner = None
    if source:
        node = ast.parse(source, mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("repr", "str") and len(node.args) == 1:
            inner = ast.unparse(node.args[0])
    if inner is not None and actual in ("True", "False"):
        return f"{_named(inner)} is {actual}"
    if inner is not None and actual.startswith("(") and set(
            actual.strip("(),").replace(" ", "").split(",")) <= {"True", "False"}:
        return f"{_named(inner)} is {_short(actual)}"
    where = f"{_named(source)} printed" if source else "printed"
    return f"{where} {_short(actual)!r}, the text expected"


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def _named(source: str) -> str:
    """Code as a reader names it: ``_`` is the output the visible cell above
    showed, ``_[1]`` the second value it showed, ``_["key"]`` its "key" entry;
    other code is shown whole, with ``_`` said in words if it reads it."""
    source = _whole(source)
    if source == "_":
        return "the output shown above"
    node = ast.parse(source, mode="eval").body
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
            node.value.id == "_" and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        if isinstance(key, int) and 0 <= key < len(ORDINALS):
            return f"the {ORDINALS[key]} value the cell above displayed"
        if isinstance(key, str):
            return f"the value {key!r} the cell above displayed"
    if any(isinstance(n, ast.Name) and n.id == "_" for n in ast.walk(node)):
        return f"`{source}` (`_`: what the cell above displayed)"
    return f"`{source}`"


def _whole(source: str) -> str:
    """Code on one line, all of it: the detail wraps it, so nothing is cut."""
    return " ".join(str(source).split())


def _call_arguments(frame) -> list[str] | None:
    """The source of each positional argument of the check's call in ``frame``, as
    the page wrote it (``executing`` finds the call node IPython is running)."""
    try:
        import executing

        node = executing.Source.executing(frame).node
    except Exception:  # no source to read: a record says the values alone
        return None
    if not isinstance(node, ast.Call):
        return None
    return [ast.unparse(arg) for arg in node.args]


def _claim(claim: str | None, quote: str | None) -> str:
    """What a failure says: the claim, else the quoted sentence itself."""
    if quote is not None and len(quote.split()) < MIN_QUOTE_WORDS:
        raise ValueError(f"quote={quote!r} is too short to name a sentence: quote at "
                         f"least {MIN_QUOTE_WORDS} words of the page's prose")
    if claim is None and quote is None:
        raise TypeError("say what the check proves: claim=, or quote= with the sentence")
    return claim if claim is not None else quote


# True while a property runs: a check inside it speaks for one member, and the
# property's own record (published once, when every member passed) for the sentence.
_inside_property = False


def _proved(check: str, claim: str, quote: str | None, show: bool, *,
            compared: Callable[..., str], scope: str = "example", **details) -> None:
    """A check passed: print it for readers if asked, and publish its record.
    ``compared`` says what was compared, given the source of the call's arguments."""
    if show:
        print(f"✓ {claim}")
    if quote is None or _inside_property:
        return
    from IPython import get_ipython
    from IPython.display import display

    if get_ipython() is None or not os.environ.get(PUBLISHED_WHEN):
        return  # a script, or a reader's notebook: no build to read the record
    call = sys._getframe(2)  # the frame that called the check
    arguments = (_call_arguments(call) or []) + [None, None]
    cell = call
    while cell.f_back is not None and cell.f_code.co_name != "<module>":
        cell = cell.f_back  # a cell runs as module code; its line is the check's
    record = {"quote": quote, "claim": claim, "check": check, "line": cell.f_lineno,
              "torch": torch.__version__, "scope": scope,
              "compared": compared(*arguments[:2]), **details}
    display({CLAIM_MIMETYPE: record}, raw=True)


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
    from hypothesis import strategies as st

    check_property(lambda n: n * n >= n, st.integers(-100, 100), claim="n² ≥ n for integers")
    try:
        check_property(lambda n: n * n > n, st.integers(-100, 100), claim="n² > n")
    except ClaimFailed as failure:
        assert "counterexample: 0" in str(failure), failure  # shrunk to the smallest
    else:
        raise AssertionError("check_property accepted a false claim")
    print("✓ a property holds over its family, and a false one names its smallest counterexample")


if __name__ == "__main__":
    main()
