"""The one safe reader of user files (text_files): each problem as values, and the SQL settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sdp_expect.base.text_files import TextFileProblem, read_text


def problem(path: Path | str, **kwargs: Any) -> TextFileProblem:
    with pytest.raises(TextFileProblem) as caught:
        read_text(path, **kwargs)
    return caught.value


def write(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    return path


def test_text_with_a_byte_order_mark(tmp_path: Path) -> None:
    assert read_text(write(tmp_path, b"\xef\xbb\xbfa\r\nb\r")) == "a\r\nb\r"
    assert read_text(write(tmp_path, b"a\r\nb\rc"), universal_newlines=True) == "a\nb\nc"


def test_what_is_not_a_text_file(tmp_path: Path) -> None:
    assert problem(tmp_path / "none").kind == "missing"
    assert problem("").kind == "missing"  # not '.', as Path('') would be
    assert problem(tmp_path).kind == "directory"
    assert problem("bad\0name").kind == "unreadable"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert problem(fifo).kind == "not_regular"


def test_size_limit(tmp_path: Path) -> None:
    path = write(tmp_path, b"12345")
    assert read_text(path, max_bytes=5) == "12345"
    too_big = problem(path, max_bytes=4)
    assert (too_big.kind, too_big.size) == ("too_big", 5)


def test_binary_and_encodings(tmp_path: Path) -> None:
    assert problem(write(tmp_path, b"\xff\xfea\0")).kind == "utf16"
    nul = problem(write(tmp_path, b"a\nb\0"))
    assert (nul.kind, nul.line) == ("nul", 2)
    bad = problem(write(tmp_path, b"a\n\nb\xff"))
    assert (bad.kind, bad.line) == ("not_utf8", 3)
    assert "can't decode byte 0xff" in bad.detail


def test_the_sql_settings_leave_binary_to_the_decoder(tmp_path: Path) -> None:
    assert read_text(write(tmp_path, b"a\0b"), reject_binary=False) == "a\0b"
    utf16 = problem(write(tmp_path, b"\xff\xfea\0"), reject_binary=False)
    assert utf16.kind == "not_utf8"
    assert utf16.detail == "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
