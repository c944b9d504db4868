"""A JSON object of a run's files as a typed value: its known keys as attributes, the rest kept.

A :class:`Section` reads an object key for key (``from_dict``) and writes it back in the order it
was read (``to_dict``), so a run read and written again is the same file. A key it does not know
(a newer version's figure) is kept in ``extra``; a key the run did not write (an older run) reads
as ``None`` and stays absent when written. It is also a read-only mapping by those keys, equal to a
dict with the same items, for what compares or writes files by key.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeAlias

# A JSON object read as it is: its shape belongs to whoever wrote it (a config as resolved, a
# fingerprint, a newer version's keys), so its values are whatever JSON holds.
JsonObject: TypeAlias = dict[str, Any]

_OWN = ("extra", "keys_stored")


def as_number(value: object) -> float | None:
    """A stored figure as a number: None for an absent figure, a NaN, a boolean or a non-number."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


@dataclass(frozen=True, kw_only=True, eq=False)
class Section(Mapping[str, Any]):
    """A JSON object with typed keys (the subclass's fields), its other keys kept in ``extra``."""

    # field → the section its object is read into (a pipeline's fusion settings, its reranker)
    _nested: ClassVar[dict[str, type[Section]]] = {}

    extra: JsonObject = field(default_factory=dict)
    # the keys as stored, in their order; None (built in code): every field, then ``extra``
    keys_stored: tuple[str, ...] | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Its typed keys, in the order written when built in code."""
        return _names(cls)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        names = set(cls.names())
        known: JsonObject = {}
        extra: JsonObject = {}
        for key, value in d.items():
            if key not in names:
                extra[key] = value
            elif key in cls._nested and isinstance(value, Mapping):
                known[key] = cls._nested[key].from_dict(value)
            else:
                known[key] = value
        return cls(**known, extra=extra, keys_stored=tuple(d))

    @classmethod
    def read(cls, value: Mapping[str, Any] | None) -> Self:
        """``value`` as this section: as it is when it is one already, empty for None."""
        return value if isinstance(value, cls) else cls.from_dict(value or {})

    def to_dict(self) -> JsonObject:
        return {key: _plain(self[key]) for key in self}

    def has(self, key: str) -> bool:
        """Whether the run wrote this key (even as null): runs that predate a key lack it."""
        return key in self

    def __getitem__(self, key: str) -> Any:
        if key in self.extra:
            return self.extra[key]
        if key not in self.names() or (self.keys_stored is not None and key not in self.keys_stored):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_stored if self.keys_stored is not None else (*self.names(), *self.extra))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        return key in (self.keys_stored if self.keys_stored is not None else (*self.names(), *self.extra))


@functools.cache  # read for every key of every line of per_question.jsonl
def _names(cls: type[Section]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in _OWN)


def _plain(value: Any) -> Any:
    return value.to_dict() if isinstance(value, Section) else value


@dataclass(frozen=True, eq=False)
class Figures(Mapping[str, float]):
    """Figures by their key (``recall@5``) in the order stored: a candidate's mean quality, its curve."""

    by_key: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, float]) -> Self:
        return cls(dict(d))

    @classmethod
    def read(cls, value: Mapping[str, float] | None) -> Self:
        return value if isinstance(value, cls) else cls.from_dict(value or {})

    def to_dict(self) -> dict[str, float]:
        return dict(self.by_key)

    def __getitem__(self, key: str) -> float:
        return self.by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_key)

    def __len__(self) -> int:
        return len(self.by_key)
