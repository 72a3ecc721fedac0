"""Checked sentences: what the build records of each quoting check, and `make claims`.

The build keeps, for every hidden check that quotes its page, the line of the
check and the line its sentence starts at (autograd_docs/execution/claims.py),
and strips the record from what readers download; tools/claims.py reads those
records beside each page's prose to tell checked sentences from unchecked claims.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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

:::{note}
A seed of ones gives 1 for every entry.
:::

```{code-cell} ipython3
x = 1  # code never counts, even when it raises 3 errors
```
"""


def test_prose_is_split_into_sentences_with_their_lines(tmp_path, monkeypatch):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(PAGE, encoding="utf8")
    monkeypatch.setattr(claims_tool, "ROOT", tmp_path)
    found = {s.text: s for s in claims_tool.sentences(page)}
    assert "A title that returns nothing" not in found  # headings are not prose
    assert found["`y.backward(v)` returns None."].line == 7
    assert found["It leaves $v^\\top J$ in `x.grad`."].is_claim
    assert not found["Read on."].is_claim
    assert found["It was 3 lines long."].explanation  # declared, not counted
    note = found["A seed of ones gives 1 for every entry."]
    assert note.line == 13 and note.is_claim and not note.explanation
    assert not any("errors" in text for text in found)


def test_a_quote_checks_the_sentence_it_holds_or_overlaps():
    sentence = claims_tool.Sentence("p.md", 1, "It leaves $v^\\top J$ in `x.grad`, always.",
                                    False)
    assert claims_tool.checked(sentence, ["leaves $v^\\top J$ in `x.grad`"])
    assert claims_tool.checked(sentence, ["It leaves $v^\\top J$ in `x.grad`, always. And more"])
    assert not claims_tool.checked(sentence, ["returns None whatever the seed"])


@pytest.mark.build
def test_the_build_records_the_check_and_its_sentence_and_readers_never_see_it(built_copy):
    page = (built_copy / "docs" / "test-page.md").read_text(encoding="utf8").splitlines()
    [claim] = read_claims_file(built_copy / "_build" / "doctrees")["test-page"]
    assert claim["quote"] == "comes back for the identity"
    assert "quote=\"comes back for the identity\"" in page[claim["check_line"] - 1]
    assert "comes back for the identity" in page[claim["sentence_line"] - 1]
    assert claim["check"] == "check_close" and claim["torch"].startswith("2.")
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
    assert lines[0].startswith("docs/index.md: ") and " claims checked" in lines[0]
    assert lines[-1].startswith("claim coverage: ") and "%" in lines[-1]
    assert all(line.startswith(("  checked   docs/index.md:", "  unchecked docs/index.md:"))
               for line in lines[1:lines.index("")])


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
    """make claims calls a sentence checked when a quote covers part of it: its
    numbers must all be inside the quote, or an edited number would pass."""
    loose = []
    for docname, claims in real_claims.items():
        page = ROOT / "docs" / f"{docname}.md"
        prose = _prose(page)
        quoted = [span for c in claims for span in mutant_edits.quote_spans(prose, c["quote"])]
        quotes = [" ".join(c["quote"].split()) for c in claims]
        for sentence in claims_tool.sentences(page):
            if not claims_tool.checked(sentence, quotes):
                continue
            for start, end in mutant_edits.quote_spans(prose, sentence.text):
                text = claims_tool.without_markup(prose[start:end])
                for digit in mutant_edits.NUMBER.finditer(text):
                    if not any(a <= start + digit.start() < b for a, b in quoted):
                        loose.append(f"{page.relative_to(ROOT)}:{sentence.line}: "
                                     f"{digit.group()!r} in {sentence.text[:80]!r}")
    assert not loose, "numbers in checked sentences that no quote binds:\n" + "\n".join(loose)
