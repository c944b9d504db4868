"""Reading the text files users give bench: UTF-8 (a byte-order mark is fine), CRLF or LF, JSONL."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

from bench.errors import BenchError


def read_text(path: Path) -> str:
    """The file as text with LF line ends; not UTF-8, or binary (NUL bytes), is a BenchError naming file:line."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise BenchError(f"{path}: cannot read it ({e.strerror}); check that it is a readable file") from None
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        byte = bom + e.start
        raise BenchError(f"{path}:{_line_of(data, byte)}: not UTF-8 text (byte {byte}); convert it to UTF-8") from None
    nul = data.find(b"\0")
    if nul >= 0:  # valid UTF-8 can still be a binary file; NUL never occurs in text
        raise BenchError(f"{path}:{_line_of(data, nul)}: a NUL byte (byte {nul}), so a binary file, not text; "
                         "remove the file or save it as UTF-8 text")
    return text.replace("\r\n", "\n")


def _line_of(data: bytes, offset: int) -> int:
    """1-based line number of a byte offset."""
    return data.count(b"\n", 0, offset) + 1


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers (blank lines still count)."""
    return [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


def json_object(line: str, where: str, expected: str) -> dict:
    """One JSONL line as a dict; ``expected`` names its fields for the error message."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise BenchError(f"{where}: invalid JSON ({e.msg}); each line must be one JSON object") from None
    if not isinstance(row, dict):
        raise BenchError(f"{where}: a JSON {_JSON_KINDS.get(type(row), 'value')}, not an object; "
                         f"write one object per line, with {expected}")
    return row


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
