"""Files in and out: reading the text files users give bench (UTF-8, a byte-order mark is fine, CRLF
or LF, JSONL) and writing bench's own files atomically, so a reader never sees half a file."""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.errors import UNSUPPORTED, BenchError, fault_of, os_fault

# A file the user named that cannot be read is bad input; these mean the machine failed to read it.
_READ_FAULTS = frozenset({errno.EMFILE, errno.ENFILE, errno.EIO})


def read_text(path: Path) -> str:
    """The file as text with LF line ends; not UTF-8, or binary (NUL bytes), is a BenchError naming file:line."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        if e.errno in _READ_FAULTS:
            raise os_fault(e.errno, path) from e
        raise BenchError(f"{path}: cannot read it ({e.strerror}); check that it is a readable file") from None
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        byte = bom + e.start
        raise BenchError(f"{path}:{_line_of(data, byte)}: not UTF-8 text (byte {byte}); convert it to UTF-8") from None
    nul = data.find(b"\0")
    if nul >= 0:  # valid UTF-8 can still be a binary file; NUL never occurs in text
        raise BenchError(
            f"{path}:{_line_of(data, nul)}: a NUL byte (byte {nul}), so a binary file, not text; "
            "remove the file or save it as UTF-8 text"
        )
    return text.replace("\r\n", "\n")


def _line_of(data: bytes, offset: int) -> int:
    """1-based line number of a byte offset."""
    return data.count(b"\n", 0, offset) + 1


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers (blank lines still count)."""
    return [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


class _NotANumber(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_constant(name: str) -> Any:
    raise _NotANumber(name)


_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` without Python's extensions: ``NaN``, ``Infinity`` and ``-Infinity`` are refused
    (a JSONDecodeError at the constant's line), since no other JSON reader accepts them and no
    figure bench reads may be one."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except _NotANumber as e:
        doc = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        # The first constant outside a string is where the parser met it.
        at = next((m.start(1) for m in _STRING_OR_CONSTANT.finditer(doc) if m.group(1)), 0)
        raise json.JSONDecodeError(f"{e.name} is not a JSON number", doc, at) from None


def json_object(line: str, where: str, expected: str) -> dict:
    """One JSONL line as a dict; ``expected`` names its fields for the error message. NaN and
    ±Infinity are refused, as standard JSON refuses them."""
    try:
        row = loads_strict(line)
    except json.JSONDecodeError as e:
        fix = (
            "write a number, or null where a value is unknown"
            if "JSON number" in e.msg
            else "each line must be one JSON object"
        )
        raise BenchError(f"{where}: invalid JSON ({e.msg}); {fix}") from None
    if not isinstance(row, dict):
        raise BenchError(
            f"{where}: a JSON {_JSON_KINDS.get(type(row), 'value')}, not an object; "
            f"write one object per line, with {expected}"
        )
    return row


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it. A full disk, a missing
    permission, a filesystem that cannot rename over a file is an EnvironmentFault naming ``path``
    (and, for a full disk, the bytes it needed); the temporary file never outlives the call."""
    payload = data.encode() if isinstance(data, str) else data
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with contextlib.suppress(OSError):  # a filesystem without modes (FAT, some shares) keeps its own
                os.fchmod(fd, 0o666 & ~_UMASK)  # as an ordinary file would be, not mkstemp's owner-only
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, path)
        except OSError as e:
            if e.errno in UNSUPPORTED:
                raise os_fault(e.errno, path, doing="renaming a file over another") from e
            raise
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        fault = fault_of(e, path, len(payload)) if isinstance(e, OSError) else None
        if fault is not None:
            raise fault from e
        raise


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written: near a full disk a write may take only part."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_json(path: Path, obj: object) -> None:
    write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[Mapping[str, object]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))


def read_json(path: Path, fix: str) -> Any:
    """A JSON file bench wrote; unreadable or malformed is a BenchError ending with ``fix``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        if e.errno in _READ_FAULTS:
            raise os_fault(e.errno, path) from e
        raise BenchError(f"{path}: unreadable ({e}); {fix}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchError(f"{path}: unreadable ({e}); {fix}") from None
