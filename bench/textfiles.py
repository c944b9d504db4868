"""Reading the text files users give bench: UTF-8 (a byte-order mark is fine), CRLF or LF, JSONL."""

from __future__ import annotations

import json
from pathlib import Path

from bench.errors import BenchError


def read_text(path: Path) -> str:
    """The file as text with LF line ends; not UTF-8 is a BenchError naming the file and byte."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BenchError(f"{path}: not UTF-8 text (byte {e.start}); convert it to UTF-8") from None
    return text.replace("\r\n", "\n")


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
        raise BenchError(f"{where}: expected a JSON object with {expected}")
    return row
