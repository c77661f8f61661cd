"""A comment as GitHub renders it: CommonMark (markdown-it, the grammar GitHub's own
parser implements), for what hand-written rules get wrong: where a pull-request command
is visible text (:mod:`.commands`), and whether a text the gate posts still holds HTML or
an image that GitHub would render (:func:`html_and_images`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["MENTION_CODE", "checked", "html_and_images", "parser"]

#: The HTML :func:`~.outbound.quiet_mentions` writes: a mention made a code element.
MENTION_CODE = "</?code>"


@functools.lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    """CommonMark with raw HTML and GitHub's tables, as GitHub parses a comment (a table
    row that starts with a command is a cell, not a paragraph; task lists and
    strikethrough add no HTML and hide no text)."""
    return MarkdownIt("commonmark").enable("table")


def _walk(tokens: Iterable[Token]) -> Iterable[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or ())


def html_and_images(text: str) -> list[str]:
    """Every piece of raw HTML in ``text`` (blocks and inline tags, comments included)
    and every image (``![alt](src)``, shown as its ``src``) GitHub would render."""
    return [
        f"image {token.attrGet('src')}" if token.type == "image" else token.content
        for token in _walk(parser().parse(text))
        if token.type in ("html_block", "html_inline", "image")
    ]


def checked(build: Callable[[bool], str], own: str = MENTION_CODE) -> str:
    """``build(False)``, or ``build(True)`` when GitHub would render any HTML or image in
    it but what the template itself writes (``own``: a pattern each piece of HTML must
    match whole).

    ``build(strict)`` makes a text the reviewer had a say in inert with
    :func:`~.outbound.inert_html` (``strict``: in code spans too): the plain reading of a
    line can take a code span for code that GitHub, parsing the whole body, does not.
    """
    body = build(False)
    if any(re.fullmatch(own, part) is None for part in html_and_images(body)):
        return build(True)
    return body
