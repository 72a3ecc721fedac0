"""Checked sentences: what the build records of each quoting check, and `make claims`.

The build keeps, for every hidden check that quotes its page, the line of the
check and the line its sentence starts at (autograd_docs/execution/claims.py),
and strips the record from what readers download; tools/claims.py reads those
records beside each page's prose to tell checked sentences from unchecked claims.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from autograd_docs import claim_sentences as cs
from autograd_docs.execution.claims import read_claims_file

from site_copy import PYTHON, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import claims as claims_tool  # noqa: E402

import mutant_edits  # noqa: E402

PAGE = """\
---
file_format: mystnb
---

# A title that returns nothing

`y.backward(v)` returns None. It leaves $v^\\top J$ in `x.grad`. Read on.

% explanation
In 2018 the tutorial said otherwise. It was 3 lines long.

% rhetoric
Five lines, and a result that surprises almost everyone.

% citation
- The autograd note says the seed is optional.

:::{note}
A seed of ones gives 1 for every entry.
:::

:::{admonition} Trap: a titled box
Every sentence in it counts.
:::

```{code-cell} ipython3
x = 1  # code never counts, even when it raises 3 errors
```
"""


def test_every_sentence_counts_unless_a_marker_declares_it(tmp_path, monkeypatch):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(PAGE, encoding="utf8")
    monkeypatch.setattr(claims_tool, "ROOT", tmp_path)
    found = {s.text: s for s in claims_tool.sentences(page)}
    assert "A title that returns nothing" not in found  # headings are not prose
    assert found["`y.backward(v)` returns None."].line == 7
    assert found["Read on."].declared is None  # no word list: it counts
    assert found["It was 3 lines long."].declared == "explanation"
    assert found["Five lines, and a result that surprises almost everyone."].declared == "rhetoric"
    assert found["The autograd note says the seed is optional."].declared == "citation"
    note = found["A seed of ones gives 1 for every entry."]
    assert note.line == 19 and note.declared is None and note.generalises
    assert found["Every sentence in it counts."].line == 23  # a titled admonition is read
    assert not any("errors" in text for text in found)
    tally, _ = cs.tally(list(found.values()), [])
    assert (tally["% explanation"], tally["% rhetoric"], tally["% citation"]) == (2, 1, 1)
    assert tally[cs.UNCHECKED] == 5


def _record(quote: str, scope: str = "example") -> dict:
    return {"quote": quote, "check": "check_close", "scope": scope}


SENTENCE = cs.Sentence("p.md", 1, "It leaves $v^\\top J$ in `x.grad`, always.", None)


@pytest.mark.parametrize("records, verdict", [
    ([], cs.UNCHECKED),
    # only a quote inside the sentence counts for it: no overlap of 25 characters
    ([_record("always. And the seed of ones gives the diagonal")], cs.PARTLY),
    ([_record("in `x.grad`, always. And the seed")], cs.PARTLY),
    ([_record("returns None whatever the seed")], cs.UNCHECKED),
    ([_record("leaves $v^\\top J$ in `x.grad`")], cs.PARTLY),  # "always" left outside
    ([_record("It leaves $v^\\top J$ in `x.grad`, always.")], cs.EXAMPLE),
    # a family over one clause, an example over the other: an example, not a family
    ([_record("It leaves $v^\\top J$ in"), _record("in `x.grad`, always.", "family")],
     cs.EXAMPLE),
    ([_record("It leaves $v^\\top J$ in", "family"), _record("in `x.grad`, always.", "family"),
      _record("in `x.grad`")], cs.FAMILY),
    ([_record("It leaves $v^\\top J$ in `x.grad`, always. And more")], cs.EXAMPLE),
])
def test_a_sentence_is_as_checked_as_its_quotes_say(records, verdict):
    assert cs.verdict(SENTENCE, records) == verdict


def test_a_generalising_sentence_checked_on_one_example_is_reported_apart():
    tally, _ = cs.tally([SENTENCE], [_record(SENTENCE.text)])
    assert tally[cs.EXAMPLE] == 1 and tally[cs.GENERAL_ON_EXAMPLE] == 1
    plain = cs.Sentence("p.md", 2, "At t = 2 the slope is 12.", None)
    assert not plain.generalises
    assert cs.unquoted_words(plain, [_record("At t = 2 the slope is 12")]) == []
    assert cs.unquoted_words(plain, [_record("At t = 2 the slope")]) == ["12"]
    assert cs.unquoted_words(cs.Sentence("p", 3, "The first call compiles; later calls reuse "
                                         "the graphs.", None),
                             [_record("later calls reuse the graphs.")]) == ["first", "call",
                                                                             "compiles"]


def test_a_longer_quote_covers_a_short_sentence_only_where_it_stands():
    """A table's header cell "the fix" is not checked by a quote of a paragraph
    forty lines up that happens to hold the words."""
    header = cs.Sentence("p.md", 647, "the fix", None)
    elsewhere = {**_record("mask the input: the fix is a where"), "sentence_line": 365}
    assert cs.quoting(header, [elsewhere]) == []
    assert cs.verdict(header, [elsewhere]) == cs.UNCHECKED
    here = {**elsewhere, "sentence_line": 647}
    assert cs.quoting(header, [here]) == [here]


@pytest.mark.build
def test_the_build_records_the_check_and_its_sentence_and_readers_never_see_it(built_copy):
    page = (built_copy / "docs" / "test-page.md").read_text(encoding="utf8").splitlines()
    [claim] = read_claims_file(built_copy / "_build" / "doctrees")["test-page"]
    assert claim["quote"] == "comes back for the identity"
    assert "quote=\"comes back for the identity\"" in page[claim["check_line"] - 1]
    assert "comes back for the identity" in page[claim["sentence_line"] - 1]
    assert claim["check"] == "check_close" and claim["torch"].startswith("2.")
    # what it compared, in a reader's words: the source of both sides, the tolerance
    assert claim["scope"] == "example"
    assert claim["compared"].startswith("`z.grad` = tensor([-1.0000, -0.5000"), claim
    assert "against `z` = tensor(" in claim["compared"] and "within 1e-06" in claim["compared"]
    notebook = (built_copy / "_build" / "html" / "test-page.ipynb").read_text(encoding="utf8")
    assert "vnd.autograd-docs.claim" not in notebook
    assert "vnd.autograd-docs.claim" not in json.dumps(
        [p.read_text(encoding="utf8") for p in (built_copy / "_build" / "html").glob("*.html")])


@pytest.mark.build
def test_make_claims_reports_each_page_and_the_coverage_last(built_copy):
    result = subprocess.run(
        [PYTHON, str(ROOT / "tools" / "claims.py"), "--doctrees",
         str(built_copy / "_build" / "doctrees"), "--page", str(ROOT / "docs" / "index.md")],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    four_way = " / ".join(rf"\d+ {v}" for v in cs.VERDICTS)
    assert re.match(rf"docs/index.md: {four_way} \(\d+% of \d+ fully checked; \d+ "
                    rf"{cs.GENERAL_ON_EXAMPLE}\)$", lines[0]), lines[0]
    rows = lines[1:lines.index("")]
    assert rows[-1].startswith("  declared: ") and "% explanation" in rows[-1]
    assert all(re.match(rf"  ({'|'.join(cs.VERDICTS)}): docs/index.md:\d+: ", row)
               for row in rows[:-1]), rows[:3]
    assert re.match(rf"landing: {four_way} ", lines[-3]) and lines[-2].startswith("total: ")
    assert re.match(r"claim coverage: \d+ of \d+ \(\d+%\)$", lines[-1]), lines[-1]


@pytest.mark.parametrize("given", ["how-to/stop-gradients", "docs/how-to/stop-gradients.md",
                                   "how-to/stop-gradients.md"])
def test_make_claims_takes_a_page_by_its_path_or_its_docname(given, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert claims_tool.page_path(given) == ROOT / "docs" / "how-to" / "stop-gradients.md"


def test_make_claims_says_what_a_page_should_be(tmp_path):
    result = subprocess.run(
        [PYTHON, str(ROOT / "tools" / "claims.py"), "--doctrees", str(tmp_path),
         "--page", "how-to/no-such-page"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "its docname (how-to/stop-gradients)" in result.stderr


def test_make_claims_says_what_to_do_without_a_build(tmp_path):
    result = subprocess.run(
        [PYTHON, str(ROOT / "tools" / "claims.py"), "--doctrees", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 2 and "run `make html` first" in result.stderr


def test_the_record_is_defined_once():
    from autograd_docs import claim_record

    sys.path.insert(0, str(ROOT / "snippets"))
    import oracle

    assert oracle.CLAIM_MIMETYPE is claim_record.MIMETYPE


# -- The real site: a checked sentence cannot change unnoticed ------------------------

def _prose(page: Path) -> str:
    """The page's text with its code and other fenced blocks blanked out."""
    text = page.read_text(encoding="utf8")
    for start, end in reversed(mutant_edits.fenced_blocks(text)):
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def test_every_quote_stands_once_in_its_page_so_any_edit_inside_it_fails_the_build(
        real_claims):
    """The build fails when a quote is gone from the prose; a quote that stood twice
    would let one copy be edited unnoticed."""
    twice = []
    for docname, claims in real_claims.items():
        prose = _prose(ROOT / "docs" / f"{docname}.md")
        twice += [f"docs/{docname}.md: {c['quote']!r}" for c in claims
                  if len(mutant_edits.quote_spans(prose, c["quote"])) > 1]
    assert not twice, "quotes that stand twice: quote more of the sentence\n" + "\n".join(twice)


def test_every_digit_of_a_checked_sentence_is_inside_a_quote(real_claims):
    """A sentence a quote covers part of is at least partly checked: its numbers
    must all be inside a quote, or an edited number would pass."""
    loose = []
    for docname, claims in real_claims.items():
        page = ROOT / "docs" / f"{docname}.md"
        prose = _prose(page)
        quoted = [span for c in claims for span in mutant_edits.quote_spans(prose, c["quote"])]
        for sentence in claims_tool.sentences(page):
            if not cs.quoting(sentence, claims):
                continue
            for start, end in mutant_edits.quote_spans(prose, sentence.text):
                text = cs.without_markup(prose[start:end])
                for digit in mutant_edits.NUMBER.finditer(text):
                    if not any(a <= start + digit.start() < b for a, b in quoted):
                        loose.append(f"{page.relative_to(ROOT)}:{sentence.line}: "
                                     f"{digit.group()!r} in {sentence.text[:80]!r}")
    assert not loose, "numbers in checked sentences that no quote binds:\n" + "\n".join(loose)


# -- What a record says to readers -----------------------------------------------------

@pytest.fixture
def published(monkeypatch):
    """The records the checks publish, as in a page's kernel during a build."""
    import IPython
    import IPython.display

    from autograd_docs import claim_record

    sys.path.insert(0, str(ROOT / "snippets"))
    records: list[dict] = []
    monkeypatch.setenv(claim_record.PUBLISHED_WHEN, "1")
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display",
                        lambda data, raw: records.append(data[claim_record.MIMETYPE]))
    return records


def test_a_record_says_what_was_compared_on_this_example(published):
    import oracle
    import torch

    x = torch.tensor([1.0, 2.0])
    oracle.check_close(x * 2, torch.tensor([2.0, 4.0]), quote="doubling gives two and four")
    oracle.check_close(x * 2, 2 * x, quote="doubling is adding it to itself")
    oracle.check_text(repr(bool(x.sum() > 2)), "True", quote="the sum of the two is over 2")
    oracle.check_differs(x, x + 1, quote="x is not the belief x plus one")
    sys.last_value = RuntimeError("element 0 of tensors does not require grad")
    oracle.check_raised(RuntimeError, "element 0", quote="backward raises on a constant tensor")
    stated, computed, condition, differs, raised = published
    assert all(r["scope"] == "example" for r in published)
    assert stated["compared"] == ("`x * 2` = tensor([2., 4.]) against the value typed in the "
                                  "check, tensor([2., 4.]), equal within 1e-06 + 1e-05 × |expected|")
    assert computed["compared"].startswith("`x * 2` = tensor([2., 4.]) against `2 * x` = ")
    assert condition["compared"] == "`bool(x.sum() > 2)` is True"
    assert differs["compared"] == ("the counterexample `x` = tensor([1., 2.], dtype=torch.float64) "
                                   "differs from the belief `x + 1` = tensor([2., 3.], "
                                   "dtype=torch.float64) by more than 0.0001")
    assert raised["compared"] == ("the cell above raised RuntimeError, its message starting "
                                  "'element 0'")


def test_a_record_says_whose_value_a_literal_is_and_names_what_the_cell_showed(published):
    """A typed value is the sentence's only when the sentence states its numbers;
    ``_[i]`` is said in words; code is shown whole, however long."""
    import oracle
    import torch

    _ = (torch.tensor([1.0]), torch.tensor([3.0, 12.0]))
    oracle.check_close(_[1], torch.tensor([3.0, 12.0]), quote="the gradient is 3 and 12")
    oracle.check_close(_[0] * 1.0 + torch.zeros(1) + torch.zeros(1) + torch.zeros(1) * 2.0, [1.0],
                       quote="the first entry is one")
    oracle.check_text(repr(bool(_[1].sum() > 0)), "True", quote="the entries sum to more")
    by_name, long_code, condition = published
    assert by_name["compared"].startswith(
        "the second value the cell above displayed, tensor([ 3., 12.]) against the value "
        "the sentence states, tensor([ 3., 12.])"), by_name
    assert long_code["compared"].startswith(
        "`_[0] * 1.0 + torch.zeros(1) + torch.zeros(1) + torch.zeros(1) * 2.0` (`_`: what the "
        "cell above displayed) = tensor([1.]) against the value typed in the check, "), long_code
    assert condition["compared"] == ("`bool(_[1].sum() > 0)` (`_`: what the cell above "
                                     "displayed) is True")


def test_a_literal_is_the_sentences_only_with_its_signs_in_its_order():
    """A sign or order slip in the sentence makes the typed value the check's own."""
    import oracle

    value = "torch.tensor([0.5, -1.0, 0.0, 2.0])"
    assert oracle._states("x is $(0.5, -1, 0, 2)$ here", value)
    assert oracle._states("x is (0.5, \u22121, 0, 2)", value)
    assert not oracle._states("x is (0.5, 1, 0, 2)", value)
    assert not oracle._states("x is (2, 0, -1, 0.5)", value)
    assert not oracle._states("x-1 is 0.5, 1, 0, 2", value)


def test_a_typed_true_or_false_is_the_sentences_only_when_it_says_so():
    """True and False are stated by their words alone: not by a sentence silent on
    them, not by a 1 or a 0; a value with nothing to state is the check's own."""
    import oracle

    assert not oracle._states("it raises", "True")
    assert not oracle._states("$0 / 0 = \\text{nan}$ too", "torch.tensor([True, False])")
    assert not oracle._states("the flags are 1 and 0", "[True, False]")
    assert not oracle._states("the flags are False and True", "[True, False]")
    assert oracle._states("`x.is_leaf` is True, and 2 is False", "(True, 2, False)")
    assert not oracle._states("the list is empty", "[]")


def test_a_property_record_says_what_it_held_fixed_and_names_mapped_families(published):
    import oracle
    from hypothesis import strategies as st

    signed = st.floats(1e-3, 1e3).flatmap(lambda m: st.sampled_from([m, -m]))
    quarters = st.integers(-20, 20).map(lambda i: i / 4)
    shapes = st.lists(st.integers(1, 3), max_size=3).map(tuple)
    oracle.check_property(lambda a, b, c: abs(a) * 1 >= 0, signed, quarters, shapes,
                          fixed="the dtype, float64", quote="any signed number is at least zero")
    [record] = published
    assert record["families"] == [
        "one of [m, -m] for m among floats from 0.001 to 1000.0",
        "i / 4 for i among integers from -20 to 20",
        "tuple(x) for x among lists of integers from 1 to 3"]
    assert record["fixed"] == "the dtype, float64"
    # A repr that is no Python (a lambda inside a list, members that print as words).
    class Member:
        def __init__(self, c):
            self.c = c

        def __repr__(self):
            return f"flip(x) * c, c = {self.c}"

    words = oracle.family_name(st.lists(signed, max_size=3) | st.sampled_from([Member(1), Member(2)]))
    assert words == ("lists of one of [m, -m] for m among floats from 0.001 to 1000.0 or "
                     "one of [flip(x) * c, c = 1, flip(x) * c, c = 2]"), words


def test_a_property_record_names_its_family_and_the_members_drawn(published):
    import oracle
    from hypothesis import strategies as st

    oracle.check_property(lambda n: n * n >= n, st.integers(min_value=0, max_value=5),
                          quote="a square is at least its integer")
    [record] = published
    assert record["scope"] == "family" and record["families"] == ["integers from 0 to 5"]
    assert record["compared"] == "`lambda n: n * n >= n` held for every member drawn"
    assert 1 < record["members"] <= 6 and record["drawn"][0] == "0"  # the simplest first
    assert (record["smallest"], record["largest"]) == ("0", "5")
    assert "min_value" not in json.dumps(record)  # Hypothesis's repr never reaches readers


def test_the_site_states_the_counts_make_claims_prints(real_claims):
    """how-this-site-is-built's assurance sentence gives the numbers the report
    gives for the same build (its {claim-count} roles), not numbers typed once."""
    html = (ROOT / "_build" / "html" / "reference" / "how-this-site-is-built.html"
            ).read_text(encoding="utf8")
    text = " ".join(re.sub(r"<[^>]+>", "", html).split())
    stated = re.search(r"As this site was built: (\d+) proven over a family, (\d+) checked on "
                       r"an example, (\d+) partly checked and (\d+) unchecked, so (\d+) of "
                       r"(\d+) \(\d+%\).*?generalise.*?, (\d+) are checked on an example only",
                       text)
    assert stated, "how-this-site-is-built no longer states the four counts"
    total: Counter = Counter()
    md = cs.parser()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        docname = page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        if not page.name.startswith("_"):
            total.update(cs.tally(claims_tool.sentences(page, md), real_claims.get(docname, []))[0])
    printed = (*(total[v] for v in cs.VERDICTS), *cs.fully_checked(total),
               total[cs.GENERAL_ON_EXAMPLE])
    assert tuple(int(n) for n in stated.groups()) == printed


def test_a_property_record_counts_members_told_apart_by_name_and_inputs(published):
    """Members whose short text matches still count apart, and a function is named,
    never shown by its memory address."""
    import oracle
    from hypothesis import strategies as st

    def branchy(x):
        return x

    def steady(x):
        return x

    oracle.check_property(lambda f, x: f(x) == x, st.sampled_from([branchy, steady]),
                          st.integers(0, 3), examples=20, quote="a function here returns x")
    [record] = published
    assert record["members"] == 8, record  # 2 functions x 4 inputs, every pair drawn
    assert " at 0x" not in json.dumps(record)
    assert record["drawn"][0] == "branchy, 0", record["drawn"]
