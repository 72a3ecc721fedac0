"""Highlighted code without the spans that change nothing a reader sees.

Pygments wraps every token in a ``<span>``: on the longest reference page that is
about 2,200 spans for names and punctuation that both of furo's styles (light and
dark) draw exactly like plain text. Each one is an element the browser styles and
lays out on load; together they were the largest part of that page's blocking
time in Lighthouse. Here a token whose style equals plain text's in both styles
is written as plain text, so Pygments merges it with its neighbours; every
coloured token keeps its span and class. Generic tokens (the ``>>>`` prompt and
the output of a doctest) always keep theirs: copybutton finds prompts by class.

The formatter is the one Sphinx's highlighter and furo's stylesheet both take
(``PygmentsBridge.html_formatter``), so the colours written to ``pygments.css``
are Pygments' own.
"""

from __future__ import annotations

from pygments.formatters import HtmlFormatter
from pygments.style import StyleMeta
from pygments.token import Generic, Text, _TokenType
from sphinx.application import Sphinx
from sphinx.highlighting import PygmentsBridge


def drawn_as_text(*styles: StyleMeta) -> frozenset[_TokenType]:
    """The token types every one of ``styles`` draws exactly as plain text."""
    plain = [style.style_for_token(Text) for style in styles]
    return frozenset(
        token
        for token in styles[0].styles
        if token not in Generic
        and all(style.style_for_token(token) == text for style, text in zip(styles, plain))
    )


class PlainTokenFormatter(HtmlFormatter):
    """An ``HtmlFormatter`` that writes the tokens in ``plain`` as plain text."""

    plain: frozenset[_TokenType] = frozenset()

    def format_unencoded(self, tokensource, outfile) -> None:
        plain = self.plain
        super().format_unencoded(
            ((Text if token in plain else token, value) for token, value in tokensource), outfile
        )


def formatter_for(light: StyleMeta, dark: StyleMeta) -> type[PlainTokenFormatter]:
    """The formatter class for a site drawn in these two styles."""
    return type(
        "PlainTokenFormatter", (PlainTokenFormatter,), {"plain": drawn_as_text(light, dark)}
    )


def use_plain_tokens(app: Sphinx) -> None:
    highlighter = getattr(app.builder, "highlighter", None)
    if highlighter is None or highlighter.dest != "html":
        return
    light = highlighter.formatter_args["style"]
    dark = PygmentsBridge("html", app.config.pygments_dark_style).formatter_args["style"]
    highlighter.formatter = formatter_for(light, dark)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", use_plain_tokens)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
