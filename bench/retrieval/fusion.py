"""Rank fusion: several first-stage result lists of one query fused into one list.

Fusion is what makes a hybrid retriever: a lexical ranking (BM25) and a dense one (embeddings)
find different relevant units, and a fused list can beat both. Every function here takes the
lists of ONE query, each a pair ``(units, scores)`` -- unit indices (int64) and their scores,
best first -- of any lengths; a unit may be missing from some lists (it contributes nothing
there). The result is ``(units, fused_scores)``, best first, over every unit in any list,
truncated to ``n`` when given.

Definitions (they match ``ranx.fuse``, whose source they were checked against):

- ``rrf``: reciprocal rank fusion, ``score(u) = sum over lists containing u of 1 / (k + rank)``,
  ``rank`` 1-based position in that list (ranx ``method="rrf"``; the scores only order a list).
- ``convex``: ``score(u) = sum over lists containing u of w_i * norm_i(s_i(u))``, weights
  non-negative and summing to 1 (ranx ``method="wsum"``). With ``norm="min-max"``,
  ``norm_i(s) = (s - min_i) / max(max_i - min_i, 1e-9)`` over list ``i``'s own scores, as in
  ``ranx.normalization.min_max_norm``: a list whose scores are all equal (or a one-unit list)
  normalises to all 0, so it adds nothing; a unit absent from a list also gets 0 there, the same
  as that list's worst unit. ``norm=None`` uses the raw scores.

Ties in fused score are ordered by ``tie_order[unit]`` ascending when given (bench passes
``ChunkTable.tie_order``, i.e. unit id), else by unit index -- ranx leaves them arbitrary.
Contributions are added list by list in the order the lists are given, as ranx does, so the fused
scores agree with ranx's to the last bit in practice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bench.core.tables import read_table, setting
from bench.errors import BenchError

Ranked = tuple[np.ndarray, np.ndarray]
"""One result list: (unit indices, int64; scores, float), best first."""

MIN_MAX_EPS = 1e-9
"""Smallest min-max denominator (ranx's): a list of equal scores normalises to all 0."""

NORMS = ("min-max", None)


def rrf(
    lists: Sequence[Ranked],
    k: float = 60,
    n: int | None = None,
    tie_order: np.ndarray | None = None,
) -> Ranked:
    """Reciprocal rank fusion: ``sum of 1 / (k + rank)`` over the lists that contain a unit."""
    if not (isinstance(k, (int, float)) and math.isfinite(k) and k >= 0):
        raise ValueError(f"rrf: k must be a finite number >= 0, got {k!r}")
    checked = [_check_list(i, units, scores) for i, (units, scores) in enumerate(lists)]
    contributions = [1.0 / (k + np.arange(1, len(units) + 1, dtype=np.float64)) for units, _ in checked]
    return _combine([units for units, _ in checked], contributions, n, tie_order)


def convex(
    lists: Sequence[Ranked],
    weights: Sequence[float],
    n: int | None = None,
    tie_order: np.ndarray | None = None,
    norm: str | None = "min-max",
) -> Ranked:
    """Convex combination ``sum of w_i * norm_i(score)`` over the lists that contain a unit."""
    if norm not in NORMS:
        raise ValueError(f"convex: norm must be one of {NORMS}, got {norm!r}")
    w = _check_weights(weights, len(lists))
    checked = [_check_list(i, units, scores) for i, (units, scores) in enumerate(lists)]
    contributions = []
    for i, (_, scores) in enumerate(checked):
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"convex: list {i} has a score that is not finite (nan or inf)")
        normed = min_max(scores) if norm == "min-max" else scores
        contributions.append(w[i] * normed)
    return _combine([units for units, _ in checked], contributions, n, tie_order)


def min_max(scores: np.ndarray) -> np.ndarray:
    """``(s - min) / max(max - min, 1e-9)``: into [0, 1]; all 0 when the scores are all equal."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0:
        return scores.copy()
    lo, hi = float(scores.min()), float(scores.max())
    return (scores - lo) / max(hi - lo, MIN_MAX_EPS)


def _check_weights(weights: Sequence[float], n_lists: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) != n_lists:
        raise ValueError(f"convex: need one weight per list ({n_lists}), got {list(np.atleast_1d(w))}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"convex: weights must be finite and non-negative, got {w.tolist()}")
    if n_lists and not math.isclose(float(w.sum()), 1.0, rel_tol=0.0, abs_tol=1e-9):
        raise ValueError(f"convex: weights must sum to 1, got {w.tolist()} (sum {float(w.sum())!r})")
    return w


def _check_list(i: int, units: np.ndarray, scores: np.ndarray) -> Ranked:
    u = np.asarray(units)
    s = np.asarray(scores, dtype=np.float64)
    if u.ndim != 1 or s.ndim != 1 or len(u) != len(s):
        raise ValueError(f"fusion: list {i} needs 1-D units and scores of one length, got {u.shape} and {s.shape}")
    if len(u) and not np.issubdtype(u.dtype, np.integer):
        raise ValueError(f"fusion: list {i} units must be integer indices, got dtype {u.dtype}")
    u = u.astype(np.int64, copy=False)
    if len(np.unique(u)) != len(u):
        raise ValueError(f"fusion: list {i} names a unit more than once")
    if np.any(s[1:] > s[:-1]):
        raise ValueError(f"fusion: list {i} is not best first (its scores increase somewhere)")
    return u, s


def _combine(
    units: list[np.ndarray],
    contributions: list[np.ndarray],
    n: int | None,
    tie_order: np.ndarray | None,
) -> Ranked:
    if n is not None and n < 0:
        raise ValueError(f"fusion: n must be >= 0, got {n}")
    if not units:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    all_units = np.concatenate(units)
    fused_units, where = np.unique(all_units, return_inverse=True)
    fused = np.zeros(len(fused_units), dtype=np.float64)
    # unbuffered, in element order: each unit's contributions are added list by list, from 0.0
    np.add.at(fused, where, np.concatenate(contributions))
    if tie_order is not None:
        tie_order = np.asarray(tie_order)
        if len(fused_units) and (fused_units.min() < 0 or fused_units.max() >= len(tie_order)):
            raise ValueError(f"fusion: a unit index is outside tie_order (length {len(tie_order)})")
        key = tie_order[fused_units]
    else:
        key = fused_units
    order = np.lexsort((key, -fused))
    if n is not None:
        order = order[:n]
    return fused_units[order], fused[order]


# --- fusions declared in a config ------------------------------------------------------------------

METHODS = ("rrf", "convex")
DEFAULT_WEIGHTS = (0.3, 0.5, 0.7)  # convex over two lists: the first list's weight, one candidate each
DEFAULT_DEPTH = 100  # how deep each first stage is searched before fusing


@dataclass(frozen=True)
class FusionSpec:
    """A hybrid first stage: the models named in ``name`` ("minilm+bm25"), each searched ``depth``
    deep and fused. Dense parts search ``index`` (the config's first index when None) with its
    first query setting. One candidate per variant: ``rrf``, and ``convex<w>`` per weighting."""

    name: str
    models: tuple[str, ...]
    methods: tuple[str, ...] = ("rrf",)
    k: float = 60
    weights: tuple[tuple[float, ...], ...] = ()
    depth: int = DEFAULT_DEPTH
    index: str | None = None
    description: str = ""

    def variants(self) -> list[tuple[str, dict]]:
        """(label, settings) per candidate: the label is the id's ``@`` part."""
        out: list[tuple[str, dict]] = []
        for method in self.methods:
            if method == "rrf":
                out.append(("rrf", {"method": "rrf", "k": self.k}))
            else:
                out += [(f"convex{_weights_label(w)}", {"method": "convex", "weights": w}) for w in self.weights]
        return out

    def fuse(self, lists: Sequence[Ranked], settings: dict, n: int | None, tie_order: np.ndarray) -> Ranked:
        if settings["method"] == "rrf":
            return rrf(lists, k=settings["k"], n=n, tie_order=tie_order)
        return convex(lists, settings["weights"], n=n, tie_order=tie_order)


def fusion_parts(name: str) -> tuple[str, ...]:
    """The models a fusion's name joins with ``+``."""
    return tuple(name.split("+"))


def is_fusion(name: str) -> bool:
    return "+" in name


@dataclass(frozen=True)
class FusionTable:
    """The keys of a ``[fusion."A+B"]`` table."""

    method: tuple[Literal["rrf", "convex"], ...] = setting(
        ("rrf",), unique=True, what='"rrf", "convex" or a list of both'
    )
    k: int | float = setting(60, minimum=0, note="(reciprocal rank fusion's constant; 60 is usual)")
    weights: object = None  # their shape depends on the number of parts: _weightings
    depth: int = setting(DEFAULT_DEPTH, minimum=1, note="(results taken from each first stage)")
    index: str | None = setting(None, note='the name of an index, e.g. "flat"')
    description: str = ""


def fusion_spec_from_config(name: str, table: object) -> FusionSpec:
    """A FusionSpec from a name like ``"minilm+bm25"`` and its optional ``[fusion."minilm+bm25"]`` table,
    e.g. ``{method = ["rrf", "convex"], weights = [0.3, 0.7], depth = 200}``."""
    where = f'fusion "{name}"'
    parts = fusion_parts(name)
    if len(parts) < 2 or not all(parts) or len(set(parts)) != len(parts):
        raise BenchError(f'{where}: name two or more different models joined by "+", e.g. "minilm+bm25"')
    read = read_table(FusionTable, table, where)
    if read.weights is not None and "convex" not in read.method:
        raise BenchError(f'{where}: weights apply to method = "convex"; add it or remove weights')
    weights = _weightings(where, read.weights, len(parts)) if "convex" in read.method else ()
    return FusionSpec(name, parts, read.method, read.k, weights, read.depth, read.index, read.description)


def _weightings(where: str, value: object, n_parts: int) -> tuple[tuple[float, ...], ...]:
    """``weights = [0.3, 0.7]`` (two parts: the first's weight, the second gets the rest) or lists of
    one weight per part summing to 1; each weighting is one candidate."""
    if value is None:
        if n_parts == 2:
            return tuple((w, round(1 - w, 10)) for w in DEFAULT_WEIGHTS)
        return (tuple([1 / n_parts] * n_parts),)
    hint = (
        "e.g. weights = [0.3, 0.5, 0.7] (the first model's weight)"
        if n_parts == 2
        else f"e.g. weights = [[{', '.join(['0.2'] * (n_parts - 1))}, {1 - 0.2 * (n_parts - 1):.1f}]]"
    )
    items = value if isinstance(value, list) else [value]
    out: list[tuple[float, ...]] = []
    for item in items:
        if n_parts == 2 and isinstance(item, (int, float)) and not isinstance(item, bool) and 0 <= item <= 1:
            out.append((float(item), round(1 - float(item), 10)))
        elif (
            isinstance(item, list)
            and len(item) == n_parts
            and all(isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 for w in item)
            and math.isclose(sum(item), 1.0, abs_tol=1e-9)
        ):
            out.append(tuple(float(w) for w in item))
        else:
            raise BenchError(
                f"{where}: weights = {value!r}: each weighting gives {n_parts} weights >= 0 summing to 1; {hint}"
            )
    if not out or len(set(out)) != len(out):
        raise BenchError(f"{where}: weights = {value!r} is empty or repeats a weighting; {hint}")
    return tuple(out)


def _weights_label(weights: tuple[float, ...]) -> str:
    shown = weights[:1] if len(weights) == 2 else weights
    return "-".join(f"{w:g}" for w in shown)
