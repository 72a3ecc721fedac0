"""Highlighted code keeps every colour while dropping the spans that draw as plain
text (autograd_docs/html/code_tokens.py).

The oracle does not trust the formatter's own notion of "plain": it renders real
code with Pygments' standard ``HtmlFormatter`` and with the site's, reads back the
HTML, and compares what each character looks like (the style its innermost span's
class gets) in both of furo's styles, light and dark.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonConsoleLexer, PythonLexer
from pygments.token import Generic, Text
from sphinx.highlighting import PygmentsBridge

from autograd_docs.html.code_tokens import drawn_as_text, formatter_for

ROOT = Path(__file__).resolve().parent.parent
LIGHT, DARK = (PygmentsBridge("html", name).formatter_args["style"]
               for name in ("a11y-light", "native"))  # furo's two styles
SPAN = re.compile(r'(<span(?: class="[^"]*")?>)|(</span>)|([^<]+)')


def looks(html: str, formatter: HtmlFormatter) -> list[tuple[str, tuple]]:
    """Each character of the code with how it is drawn, in the light and dark styles."""
    token_of = {css: ttype for css, (_decl, ttype, _level) in formatter.class2style.items()}
    open_classes: list[str] = []
    drawn = []
    for opening, closing, text in SPAN.findall(html.split("<pre>", 1)[1].rsplit("</pre>", 1)[0]):
        if opening:
            open_classes.append(opening.partition('"')[2].rstrip('">'))
        elif closing:
            open_classes.pop()
        else:
            token = token_of.get(open_classes[-1], Text) if open_classes else Text
            look = tuple(style.style_for_token(token) for style in (LIGHT, DARK))
            drawn.extend((char, look) for char in unescape(text))
    return drawn


@pytest.mark.parametrize("lexer, source", [
    (PythonLexer(), (ROOT / "snippets" / "figures.py").read_text(encoding="utf8")),
    (PythonLexer(), (ROOT / "snippets" / "families.py").read_text(encoding="utf8")),
    (PythonConsoleLexer(), ">>> x = torch.ones(3, requires_grad=True)\n>>> (x * 2).sum()\n"
                           "tensor(6., grad_fn=<SumBackward0>)\n"),
])
def test_every_character_is_drawn_as_pygments_draws_it(lexer, source):
    standard, site = HtmlFormatter(style=LIGHT), formatter_for(LIGHT, DARK)(style=LIGHT)
    before, after = highlight(source, lexer, standard), highlight(source, lexer, site)
    assert looks(after, site) == looks(before, standard)
    assert after.count("<span") < before.count("<span")


def test_names_and_punctuation_are_plain_and_prompts_keep_their_class():
    plain = drawn_as_text(LIGHT, DARK)
    assert {HtmlFormatter(style=LIGHT)._get_css_class(token) for token in plain} >= {"n", "p"}
    assert not any(token in Generic for token in plain)
    doctest = highlight(">>> 1 + 1\n2\n", PythonConsoleLexer(), formatter_for(LIGHT, DARK)(style=LIGHT))
    assert '<span class="gp">&gt;&gt;&gt; </span>' in doctest
    assert '<span class="go">2</span>' in doctest
