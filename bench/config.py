"""bench.toml → a frozen, validated Config; the candidate grid; the config hash.

Paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench.chunking import make_chunker
from bench.embedders import MODELS
from bench.errors import BenchError
from bench.index import INDEXES, LEXICAL_INDEX
from bench.metrics import GAINS

MAX_K = 50


@dataclass(frozen=True)
class ChunkerSpec:
    name: str
    kind: str
    params: tuple[tuple[str, object], ...]

    def build(self):
        return make_chunker(self.kind, **dict(self.params))


@dataclass(frozen=True, order=True)
class Candidate:
    model: str
    chunker: str
    index: str

    @property
    def id(self) -> str:
        return f"{self.model}/{self.chunker}/{self.index}"


@dataclass(frozen=True)
class Config:
    path: Path
    corpus: Path
    goldset: Path
    results: Path
    cache_dir: Path
    models: tuple[str, ...]
    chunkers: tuple[ChunkerSpec, ...]
    indexes: tuple[str, ...] = ("flat",)
    k: int = 5
    depth: int | None = None
    min_overlap: float = 0.5
    ndcg_gain: str = "exponential"
    batch_size: int = 64
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else max(self.k, 20)

    def candidates(self) -> list[Candidate]:
        """models × chunkers × indexes; a lexical model uses its own inverted index once per chunker."""
        grid = []
        for model in self.models:
            indexes = (LEXICAL_INDEX,) if MODELS.get(model).lexical else self.indexes
            grid += [Candidate(model, c.name, i) for c in self.chunkers for i in indexes]
        return grid

    def chunker(self, name: str) -> ChunkerSpec:
        return next(c for c in self.chunkers if c.name == name)

    def resolved(self) -> dict:
        """The settings that decide results, as plain data (paths as given in the file)."""
        return {
            "corpus": self.raw.get("corpus"),
            "goldset": self.raw.get("goldset"),
            "models": list(self.models),
            "chunkers": {c.name: {"kind": c.kind, **dict(c.params)} for c in self.chunkers},
            "indexes": list(self.indexes),
            "k": self.k,
            "depth": self.retrieval_depth,
            "min_overlap": self.min_overlap,
            "ndcg_gain": self.ndcg_gain,
        }

    @property
    def hash(self) -> str:
        text = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:6]

    def with_overrides(self, **changes) -> Config:
        """A copy with command-line overrides applied and validated."""
        changes = {key: value for key, value in changes.items() if value is not None}
        raw = {**self.raw, **{key: value for key, value in changes.items() if not isinstance(value, Path)}}
        updated = replace(self, raw=raw, **changes)
        _check_numbers(updated, str(self.path))
        return updated


_TOP_KEYS = {"corpus", "goldset", "results", "cache_dir", "models", "chunkers", "indexes", "k", "depth",
             "min_overlap", "ndcg_gain", "batch_size"}


def load_config(path: str | Path) -> Config:
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: config not found; pass a bench.toml (see README.md)")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as e:
        raise BenchError(f"{path}: invalid TOML ({e}); fix the syntax") from None
    except UnicodeDecodeError:
        raise BenchError(f"{path}: not UTF-8 text; save the config as UTF-8") from None
    where = str(path)
    for key in raw:
        if key not in _TOP_KEYS:
            close = difflib.get_close_matches(key, _TOP_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise BenchError(f"{where}: unknown setting {key!r}; {hint}known: {', '.join(sorted(_TOP_KEYS))}")
    for key in ("corpus", "goldset", "models", "chunkers"):
        if key not in raw:
            raise BenchError(f"{where}: missing setting {key!r}; see bench.toml in the repository for an example")
    base = path.parent
    models = _names(raw["models"], "models", where)
    for m in models:
        try:
            MODELS.canonical(m)
        except BenchError as e:
            raise BenchError(f"{where}: models: {e}") from None
    indexes = _names(raw.get("indexes", ["flat"]), "indexes", where)
    for i in indexes:
        try:
            INDEXES.canonical(i)
        except BenchError as e:
            raise BenchError(f"{where}: indexes: {e}") from None
    config = Config(
        path=path,
        corpus=base / _string(raw, "corpus", where),
        goldset=base / _string(raw, "goldset", where),
        results=base / raw.get("results", "results"),
        cache_dir=base / raw.get("cache_dir", ".bench-cache"),
        models=tuple(MODELS.canonical(m) for m in models),
        chunkers=_chunkers(raw["chunkers"], where),
        indexes=tuple(INDEXES.canonical(i) for i in indexes),
        k=raw.get("k", 5),
        depth=raw.get("depth"),
        min_overlap=raw.get("min_overlap", 0.5),
        ndcg_gain=raw.get("ndcg_gain", "exponential"),
        batch_size=raw.get("batch_size", 64),
        raw=raw,
    )
    _check_numbers(config, where)
    return config


def _check_numbers(config: Config, where: str) -> None:
    k, depth = config.k, config.depth
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise BenchError(f"{where}: k = {k!r} is out of range; use an integer from 1 to {MAX_K}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < k):
        raise BenchError(f"{where}: depth = {depth!r} must be an integer >= k ({k}); or leave it out")
    mo = config.min_overlap
    if isinstance(mo, bool) or not isinstance(mo, (int, float)) or not 0 < mo <= 1:
        raise BenchError(f"{where}: min_overlap = {mo!r} must be a number in (0, 1]; 0.5 is the default")
    if config.ndcg_gain not in GAINS:
        raise BenchError(f"{where}: ndcg_gain = {config.ndcg_gain!r} must be one of {', '.join(GAINS)}")
    bs = config.batch_size
    if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
        raise BenchError(f"{where}: batch_size = {bs!r} must be a positive integer")


def _string(raw: dict, key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise BenchError(f"{where}: {key} must be a path (a non-empty string)")
    return value


def _names(value: object, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BenchError(f"{where}: {key} must be a non-empty list of names, e.g. {key} = [\"...\"]")
    if len(set(value)) != len(value):
        raise BenchError(f"{where}: {key} lists a name twice; list each once")
    return value


def _chunkers(table: object, where: str) -> tuple[ChunkerSpec, ...]:
    if not isinstance(table, dict) or not table:
        raise BenchError(f"{where}: [chunkers.NAME] tables are missing; define at least one chunker")
    specs = []
    for name, body in table.items():
        if "/" in name:
            raise BenchError(f"{where}: chunker name {name!r} may not contain '/'")
        if not isinstance(body, dict) or "kind" not in body:
            raise BenchError(f"{where}: [chunkers.{name}] needs kind = \"tokens\" or \"recursive\"")
        params = {k: v for k, v in body.items() if k != "kind"}
        spec = ChunkerSpec(name, body["kind"], tuple(sorted(params.items())))
        try:
            spec.build()
        except BenchError as e:
            raise BenchError(f"{where}: [chunkers.{name}]: {e}") from None
        specs.append(spec)
    return tuple(specs)
