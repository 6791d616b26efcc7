"""Replacements in a file's text, by the positions :mod:`ast` (or the SQL tokenizer)
gives, applied all at once: only the spans migrate rewrites change, the rest of
the file stays byte for byte, and each new line knows the line it comes from.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Sequence

__all__ = ["TextEdits"]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class TextEdits:
    """Replacements in a text, by ast positions; applied all at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = _LINE.findall(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.edits: list[tuple[int, int, str]] = []

    def offset(self, lineno: int, col: int) -> int:
        """Character offset of an ast (line, UTF-8 byte column) position."""
        if lineno - 1 >= len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        """The characters of a node."""
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None)
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return start, self.offset(end_line, end_col if end_col is not None else 0)

    def source(self, node: ast.AST) -> str:
        """A node's text."""
        start, end = self.span(node)
        return self.text[start:end]

    def replace(self, start: int, end: int, new: str) -> None:
        """Replace ``text[start:end]``."""
        self.edits.append((start, end, new))

    def insert_after_line(self, lineno: int, new_lines: Sequence[str]) -> None:
        """Insert whole lines after line ``lineno`` (0: at the top)."""
        at = self.starts[min(lineno, len(self.lines))]
        prefix = ""
        if lineno >= len(self.lines) and self.lines and not self.lines[-1].endswith(("\n", "\r")):
            prefix = self.newline
        self.edits.append((at, at, prefix + "".join(line + self.newline for line in new_lines)))

    def apply(self) -> str:
        """The text with every edit made."""
        return self.apply_with_map()[0]

    def apply_with_map(self) -> tuple[str, list[int]]:
        """The text with every edit made, and for each of its lines (0-based index) the
        1-based line of the original text it comes from (inserted text: the line it
        was inserted at)."""
        pieces: list[str] = []
        origins: list[int] = []  # per character of the new text: its original offset
        position = 0
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[1])):
            if start < position:  # overlaps an earlier edit: keep the earlier one
                continue
            pieces.append(self.text[position:start])
            origins.extend(range(position, start))
            pieces.append(new)
            origins.extend([start] * len(new))
            position = end
        pieces.append(self.text[position:])
        origins.extend(range(position, len(self.text)))
        text = "".join(pieces)
        line_of_offset = self.line_of
        lines = [line_of_offset(origins[0]) if origins else 1]
        for index, char in enumerate(text):
            if char == "\n" and index + 1 < len(text):
                lines.append(line_of_offset(origins[index + 1]))
        return text, lines

    def line_of(self, offset: int) -> int:
        """The 1-based line of a character offset of the original text."""
        return max(1, bisect.bisect_right(self.starts, offset))
