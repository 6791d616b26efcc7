"""Helpers for the tests of the Databricks SQL translator."""

from __future__ import annotations

import re

from sdp_expect.base.sqltokens import TokenKind, tokenize


def statements_of(text: str) -> list[str]:
    """The statements of translated SQL, comments left out, whitespace collapsed."""
    out, current, position = [], [], 0
    for token in tokenize(text, keep_comments=True):
        current.append(text[position:token.start])
        position = token.end
        if token.kind is TokenKind.SEMICOLON:
            out.append(re.sub(r"\s+", " ", "".join(current)).strip())
            current = []
        else:
            current.append(" " if token.kind is TokenKind.COMMENT else token.text)
    return out
