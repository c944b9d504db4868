"""Named things by name: every kind a config or a command names (models, model loaders, chunker
kinds, index kinds, engines, export formats) sits in a :class:`Registry`, and every unknown name,
registered or not (a config key, a document id, a candidate), gets its "did you mean" from
:func:`suggest`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from bench.errors import BenchError

T = TypeVar("T")


def suggest(name: str, known: Iterable[str], n: int = 1, cutoff: float = 0.6, quote: bool = True) -> str:
    """``"did you mean 'x'? "`` for the (up to ``n``) names of ``known`` closest to ``name``, joined
    by "or"; ``""`` when none is close. A name that differs only in case is close (``FLAT``, ``flat``).
    ``cutoff`` is difflib's similarity threshold; ``quote=False`` writes the names bare."""
    known = list(known)
    close = difflib.get_close_matches(name, known, n=n, cutoff=cutoff)
    if not close:
        close = [k for k in known if k.lower() == name.lower()][:n]
    return f"did you mean {' or '.join(repr(c) if quote else c for c in close)}? " if close else ""


def check_keys(table: Iterable[str], known: Iterable[str], where: str, noun: str = "setting") -> None:
    """BenchError naming the first key of ``table`` not in ``known``, with "did you mean" and the known keys."""
    known = list(known)
    for key in table:
        if key not in known:
            raise BenchError(f"{where}: unknown {noun} {key!r}; {suggest(str(key), known)}known: {', '.join(known)}")


class Registry(Generic[T]):
    """Names → things in registration order, each name also reachable by its aliases."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, item: T, aliases: tuple[str, ...] = ()) -> T:
        for n in (name, *aliases):
            if n in self:
                raise ValueError(f"{self.what} {n!r} is already registered")
        self._items[name] = item
        self._aliases.update({a: name for a in aliases})
        return item

    def canonical(self, name: str) -> str:
        """The registered name for ``name`` or an alias; BenchError with a suggestion otherwise."""
        if name not in self:
            hint = suggest(str(name), sorted([*self._items, *self._aliases]))
            raise BenchError(f"unknown {self.what} {name!r}; {hint}known: {', '.join(sorted(self._items))}")
        return self._aliases.get(name, name)

    def get(self, name: str) -> T:
        return self._items[self.canonical(name)]

    __getitem__ = get

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._items or name in self._aliases)
