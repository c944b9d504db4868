"""Explicit name → thing registries with aliases and a "did you mean" for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Generic, TypeVar

from bench.errors import BenchError

T = TypeVar("T")


def suggest(name: str, known, n: int = 1) -> str:
    """``"did you mean 'x'? "`` for the closest of ``known`` to ``name``, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, list(known), n=n)
    return f"did you mean {' or '.join(map(repr, close))}? " if close else ""


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, item: T, aliases: tuple[str, ...] = ()) -> T:
        for n in (name, *aliases):
            if n in self._items or n in self._aliases:
                raise ValueError(f"{self.what} {n!r} is already registered")
        self._items[name] = item
        self._aliases.update({a: name for a in aliases})
        return item

    def canonical(self, name: str) -> str:
        """The registered name for ``name`` or an alias; BenchError with suggestions otherwise."""
        if name in self._items:
            return name
        if name in self._aliases:
            return self._aliases[name]
        hint = suggest(name, sorted([*self._items, *self._aliases]))
        raise BenchError(f"unknown {self.what} {name!r}; {hint}known: {', '.join(sorted(self._items))}")

    def get(self, name: str) -> T:
        return self._items[self.canonical(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items or name in self._aliases
