"""A config table read by its declared shape. A frozen dataclass describes the table once: each
field is a key, its annotation the key's type and its default the value when the key is left out;
``setting()`` adds bounds and words for the error. ``read_table`` checks a table against it and
says what is wrong in one format, ``WHERE: key = value must be WHAT``; an unknown key gets a
"did you mean".

Annotations read: ``str``, ``bool``, ``int``, ``float`` (an integer is read as a float),
``int | float`` (a number kept as written, so a config's hash stays what it was), ``Literal[...]``
(one of the options), ``X | None`` (None allowed), ``tuple[X, ...]`` (one X or a list of them),
``dict`` or ``Mapping[str, object]`` (a table, read on by its own reader) and ``object`` (anything:
the caller checks it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from bench.errors import BenchError
from bench.registry import check_keys, suggest

T = TypeVar("T")
_RULE = "table_rule"


@dataclasses.dataclass(frozen=True)
class Rule:
    """Bounds on a key's value, and the words an error says about it."""

    minimum: float | None = None  # the least value (or each value of a list)
    above: float | None = None  # values must be greater than this
    maximum: float | None = None
    unique: bool = False  # a list may not repeat a value
    empty: bool = False  # a list may be empty
    blank: bool = True  # a string may be empty
    what: str = ""  # what the value must be, instead of the words derived from its type
    note: str = ""  # said after what it must be: its meaning, an example


def setting(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING, **rule: Any) -> Any:
    """A dataclass field with a default (none: the key is required) and a Rule's keywords."""
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_RULE: Rule(**rule)})


def read_table(schema: type[T], table: object, where: str, example: str = "", **given: Any) -> T:
    """``schema`` from ``table`` (None: an empty table), every key checked; ``given`` fills fields
    that are no key of the table (a name). BenchError ``WHERE: ...`` on the first wrong key."""
    table = {} if table is None else table
    if not isinstance(table, Mapping):
        eg = f", e.g. {example}" if example else ""
        raise BenchError(f"{where}: must be a table of settings{eg}, not {type(table).__name__}")
    hints = _hints(typing.cast(type, schema))
    keys = [f.name for f in dataclasses.fields(schema) if f.name not in given]  # type: ignore[arg-type]
    check_keys(table, keys, where, noun="key")
    values = dict(given)
    for f in dataclasses.fields(schema):  # type: ignore[arg-type]
        if f.name in given:
            continue
        if f.name in table:
            values[f.name] = read_value(hints[f.name], table[f.name], f.name, where, rule(f))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise BenchError(f"{where}: needs {f.name} = {_what(hints[f.name], rule(f))}")
    return schema(**values)


def rule(f: dataclasses.Field) -> Rule:
    return f.metadata.get(_RULE) or Rule()


def read_field(schema: type, name: str, value: object, where: str) -> Any:
    """``value`` for the key ``name`` of ``schema``, checked as ``read_table`` checks it (a value given
    elsewhere than in the table: a command-line option)."""
    [f] = [f for f in dataclasses.fields(schema) if f.name == name]
    return read_value(_hints(schema)[name], value, name, where, rule(f))


def read_value(tp: Any, value: object, key: str, where: str, rule: Rule = Rule()) -> Any:
    """``value`` of type ``tp`` (see the module's docstring), or BenchError naming ``key`` at ``where``."""
    ok, read = _read(tp, value, rule)
    if ok and rule.unique and len(set(read)) != len(read):
        noun = "name" if any(isinstance(v, str) for v in read) else "number"
        raise BenchError(f"{where}: {key} = {value!r} repeats a {noun}; list each once")
    if ok:
        return read
    options = _options(tp)
    hint = f"; {suggest(value, options).strip()}" if isinstance(value, str) and suggest(value, options) else ""
    raise BenchError(f"{where}: {key} = {value!r} must be {_what(tp, rule)}{hint}")


def _read(tp: Any, value: Any, rule: Rule) -> tuple[bool, Any]:
    """(whether ``value`` fits ``tp`` and ``rule``, the value as read)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType) and type(None) in args:
        return (True, None) if value is None else _read(_without_none(tp), value, rule)
    if origin is tuple:
        items = value if isinstance(value, list) else [value]
        read = [_read(args[0], item, rule) for item in items]
        ok = (bool(items) or rule.empty) and all(fits for fits, _ in read)
        return ok, tuple(v for _, v in read)
    if origin is Literal:
        return value in args and isinstance(value, str), value
    if _is_table(tp):
        return isinstance(value, Mapping), value
    if tp is object:
        return True, value
    if tp is str:
        return isinstance(value, str) and (rule.blank or bool(value.strip())), value
    if tp is bool:
        return isinstance(value, bool), value
    numeric = _number_type(tp)
    if numeric is None:
        raise TypeError(f"read_table cannot read {tp!r}")
    if isinstance(value, bool) or type(value) not in numeric:
        return False, value
    number = typing.cast(float, value)
    in_bounds = (
        math.isfinite(number)
        and (rule.minimum is None or number >= rule.minimum)
        and (rule.above is None or number > rule.above)
        and (rule.maximum is None or number <= rule.maximum)
    )
    return in_bounds, float(number) if tp is float else number


def _without_none(tp: Any) -> Any:
    rest = tuple(a for a in typing.get_args(tp) if a is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 (built from a tuple of types)


def _is_table(tp: Any) -> bool:
    return tp in (dict, Mapping) or typing.get_origin(tp) in (dict, Mapping)


def _number_type(tp: Any) -> tuple[type, ...] | None:
    if tp is int:
        return (int,)
    if tp is float or (typing.get_origin(tp) in (Union, types.UnionType) and set(typing.get_args(tp)) == {int, float}):
        return (int, float)
    return None


def _what(tp: Any, rule: Rule) -> str:
    """What a value must be, in words: the rule's own, else derived from the type and bounds."""
    note = f" {rule.note}" if rule.note.startswith("(") else f", {rule.note}" if rule.note else ""
    return (rule.what or _derived(tp, rule)) + note


def _derived(tp: Any, rule: Rule) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType) and type(None) in args:
        return _derived(_without_none(tp), rule)
    if origin is tuple:
        return f"{_derived(args[0], rule)} or a list of them"
    if origin is Literal:
        return f"one of {', '.join(repr(a) for a in args)}"
    if _is_table(tp):
        return "a table"
    if tp is str:
        return "a string" if rule.blank else "a non-empty string"
    if tp is bool:
        return "true or false"
    whole = tp is int
    kind = "a whole number" if whole else "a number"
    if rule.minimum is not None and rule.maximum is not None:
        return f"{kind} from {rule.minimum:g} to {rule.maximum:g}"
    if (whole and rule.minimum == 1) or rule.above == 0:
        return "a positive integer" if whole else "a positive number"
    if rule.minimum is not None:
        return f"{kind} >= {rule.minimum:g}"
    return kind


def _options(tp: Any) -> tuple[str, ...]:
    """The options of a Literal (inside a tuple or an optional too), for "did you mean"."""
    if typing.get_origin(tp) is Literal:
        return tuple(str(a) for a in typing.get_args(tp))
    return tuple(o for a in typing.get_args(tp) for o in _options(a))


@functools.cache
def _hints(schema: type) -> dict[str, Any]:  # Any: what typing.get_type_hints gives, a type per field
    return typing.get_type_hints(schema)
