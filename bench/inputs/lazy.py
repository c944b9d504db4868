"""A read-only sequence whose items are made when asked for: documents read from disk, chunk
texts sliced from their documents, batches of texts for an embedding engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class Lazy(Sequence[T]):
    """``n`` items, item ``i`` being ``get(i)``; ``run(lo, hi)``, when given, yields a stretch of
    them more cheaply than one by one (iteration and slices use it)."""

    def __init__(self, n: int, get: Callable[[int], T], run: Callable[[int, int], Iterator[T]] | None = None):
        self.n, self.get, self.run = n, get, run

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            lo, hi, step = i.indices(self.n)
            if step == 1 and self.run is not None:
                return list(self.run(lo, max(lo, hi)))
            return [self.get(j) for j in range(lo, hi, step)]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.get(i)

    def __iter__(self) -> Iterator[T]:
        if self.run is not None:
            return self.run(0, self.n)
        return (self.get(i) for i in range(self.n))
