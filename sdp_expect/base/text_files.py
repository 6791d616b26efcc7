"""Reading a user's text file safely: the one place where rule files and SQL files are opened.

A file named by the user is input: it may be missing, a directory, a named
pipe (which would block) or a device (which never ends), huge, binary, or
saved in another encoding. :func:`read_text` checks each of these and raises
one :class:`TextFileProblem` saying what went wrong as values, so that each
caller words it as its own coded error (rule files: SDPX-VAL-003 and -009;
SQL files: SDPX-SQL-305). Nothing here imports pyspark or the rest of
sdp_expect.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal, Optional, Union

__all__ = ["ProblemKind", "TextFileProblem", "os_reason", "read_text", "source_excerpt"]

ProblemKind = Literal[
    "missing", "unreadable", "directory", "not_regular", "too_big", "utf16", "nul", "not_utf8"
]
"""What went wrong: no such file; the OS refused (detail: its reason); a directory; a
pipe or device; more than the size limit (``size``); UTF-16 text; a NUL byte
(``line``); invalid UTF-8 (detail: the decoder's message, ``line``)."""

_BOM = b"\xef\xbb\xbf"


class TextFileProblem(Exception):
    """Why a text file cannot be read, as values for the caller's own message.

    :param kind: What went wrong.
    :param detail: The OS's or the decoder's own words, when they say more than ``kind``.
    :param line: The line (from 1) of the offending byte, when known.
    :param size: The file's size in bytes (at least), for ``too_big``.
    """

    def __init__(self, kind: ProblemKind, detail: str = "", *, line: Optional[int] = None,
                 size: Optional[int] = None) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind: ProblemKind = kind
        self.detail = detail
        self.line = line
        self.size = size


def read_text(
    path: Union[str, os.PathLike[str]],
    *,
    max_bytes: Optional[int] = None,
    reject_binary: bool = True,
    universal_newlines: bool = False,
) -> str:
    """The text of a regular UTF-8 file, a leading byte order mark dropped.

    The defaults are those of rule files; the SQL reader passes
    ``reject_binary=False, universal_newlines=True`` to keep reading SQL files
    as ``open(path, encoding="utf-8-sig").read()`` always did: no size limit,
    NUL bytes kept, a UTF-16 file reported by the decoder, and ``\\r\\n`` and
    ``\\r`` read as ``\\n``. (One difference: a file holding only the first one
    or two bytes of a byte order mark is refused as not UTF-8, where ``open``
    read it as empty.)

    :param max_bytes: Refuse a larger file (``too_big``) without reading more
        than one byte past the limit; ``None`` reads any size.
    :param reject_binary: Refuse UTF-16 text (``utf16``, before decoding) and NUL
        bytes (``nul``), which are valid UTF-8 but not text a user writes.
    :param universal_newlines: Read ``\\r\\n`` and a lone ``\\r`` as ``\\n``.
    :raises TextFileProblem: when the file cannot be read as text.
    """
    try:
        info = os.stat(path)  # not Path(path).stat(): Path('') is '.', and 'f/' loses its '/'
    except FileNotFoundError as exc:
        raise TextFileProblem("missing", os_reason(exc)) from None
    except (OSError, ValueError) as exc:
        raise TextFileProblem("unreadable", os_reason(exc)) from None
    if stat.S_ISDIR(info.st_mode):
        raise TextFileProblem("directory")
    if not stat.S_ISREG(info.st_mode):
        raise TextFileProblem("not_regular")
    if max_bytes is not None and info.st_size > max_bytes:
        raise TextFileProblem("too_big", size=info.st_size)
    raw = _read_bytes(Path(path), max_bytes)
    if reject_binary:
        _check_binary(raw)
    body = raw[len(_BOM):] if raw.startswith(_BOM) else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise TextFileProblem("not_utf8", str(exc), line=line) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if universal_newlines else text


def _read_bytes(file: Path, max_bytes: Optional[int]) -> bytes:
    """The file's bytes; it may have grown since it was measured, so read at most one too many."""
    try:
        with file.open("rb") as handle:
            raw = handle.read(-1 if max_bytes is None else max_bytes + 1)
    except (OSError, ValueError) as exc:
        raise TextFileProblem("unreadable", os_reason(exc)) from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise TextFileProblem("too_big", size=len(raw))
    return raw


def _check_binary(raw: bytes) -> None:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TextFileProblem("utf16")
    nul = raw.find(b"\0")
    if nul >= 0:
        raise TextFileProblem("nul", line=raw.count(b"\n", 0, nul) + 1)


def os_reason(exc: BaseException) -> str:
    """The OS's own words for a failure (``'Permission denied'``), else the exception's text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def source_excerpt(path: Union[str, os.PathLike[str]], line: int,
                   column: Optional[int] = None) -> list[str]:
    """The ``line`` (1-based) of a text file as Python shows it in a traceback: indented
    by four spaces, its own indentation removed, and, when ``column`` (1-based) is known,
    a second line with a caret under that column. No lines when the file or the line
    cannot be read.
    """
    try:
        lines = read_text(path, reject_binary=False, universal_newlines=True).split("\n")
    except TextFileProblem:
        return []
    if not 1 <= line <= len(lines):
        return []
    source = lines[line - 1].rstrip()
    shown = source.lstrip()
    excerpt = [f"    {shown}"]
    if column is not None:
        at = min(max(column - 1 - (len(source) - len(shown)), 0), len(shown))
        excerpt.append("    " + " " * at + "^")
    return excerpt
