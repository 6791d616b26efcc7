"""How text reaches a terminal: colour when it is one, and characters its encoding lacks.

Used by every part that prints: the commands, the run's progress and events, the
summaries.
"""

from __future__ import annotations

import os
from typing import TextIO

__all__ = ["paint", "use_color", "write_text"]


def use_color(choice: str, stream: TextIO) -> bool:
    """Whether to colour output: ``always``, ``never``, or ``auto`` (a terminal, NO_COLOR unset)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ \
        and os.environ.get("TERM") != "dumb"


_STYLES = {
    "bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35",
    "cyan": "36", "bold red": "1;31", "bold green": "1;32", "bold yellow": "1;33",
    "reverse red": "1;41;97",
}


def paint(text: str, style: str, enabled: bool) -> str:
    """``text`` in an ANSI terminal style when ``enabled``, else unchanged."""
    if not enabled or not text:
        return text
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def write_text(stream: TextIO, text: str) -> None:
    """Write ``text`` even when the stream's encoding cannot hold every character."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()
