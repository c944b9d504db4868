"""A run's options as one value: what `bench run` and ``bench.run_shootout`` take, with their defaults
in one place. The command line and the Python API each build one; the run and the dry run read it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.errors import BenchError
from bench.registry import suggest

if TYPE_CHECKING:
    from bench.config import Config
    from bench.llm.settings import ChatSettings


@dataclass(frozen=True)
class RunOptions:
    """Every option of a run. ``k``, ``results`` and ``cache_dir`` override the config's settings
    (None keeps them); the rest say how the run goes."""

    config: Path | Config = Path("bench.toml")  # a bench.toml, or a Config already loaded
    k: int | None = None  # the cutoff of every metric
    results: Path | None = None  # where runs are written
    cache_dir: Path | None = None  # the cache folder (over the config's cache_dir and $BENCH_CACHE_DIR)
    only: tuple[str, ...] = ()  # run only the candidates whose id matches one of these globs
    skip: tuple[str, ...] = ()  # leave out the candidates whose id matches one of these globs
    use_cache: bool = True  # reuse cached vectors; False embeds everything again
    reports: bool = True  # plots, report.pdf and inspector.html once the results are in place
    remeasure: bool = False  # time query encoding again even where this machine's timings are kept
    allow_unlocked: bool = False  # run a goldset whose lock no longer matches (with a warning)
    strict: bool = False  # a file of the corpus left out is an error
    engine: str = "local"  # where corpus embedding runs (bench.engines)
    questions: Path | None = None  # questions only, no goldset: a relevance judge grades what is retrieved
    judge: ChatSettings | None = None  # the relevance judge a run with questions only asks
    perturb: tuple[str, ...] | None = None  # how questions are asked again as typed (None: the config's)
    max_cost: float | None = None  # USD: the run's budget for chat calls, over [llm] max_cost (None: the config's)

    def __post_init__(self) -> None:
        # the Python API is given strings and lists where the command line gives paths and tuples
        if isinstance(self.config, str):
            object.__setattr__(self, "config", Path(self.config))
        for name in ("results", "cache_dir", "questions"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, Path(getattr(self, name)))
        for name in ("only", "skip"):
            object.__setattr__(self, name, _patterns(getattr(self, name)))
        if isinstance(self.perturb, str):  # "typos,case" as the command line gives it
            object.__setattr__(self, "perturb", tuple(k.strip() for k in self.perturb.split(",") if k.strip()))

    @classmethod
    def of(cls, run: RunOptions | Config | str | Path, **changes: Any) -> RunOptions:
        """Options from a config (its path, or a Config) or from options, with ``changes`` by field name."""
        base = run if isinstance(run, RunOptions) else cls(config=Path(run) if isinstance(run, str) else run)
        names = [f.name for f in fields(cls)]
        for name in changes:
            if name not in names:
                raise BenchError(
                    f"run option {name!r} does not exist; {suggest(name, names)}the options: {', '.join(names)}"
                )
        return replace(base, **changes)

    def load_config(self) -> Config:
        """The config with this run's overrides applied and validated (a BenchError when it is wrong)."""
        from bench.config import load_config, perturbations

        config = load_config(self.config) if isinstance(self.config, Path) else self.config
        changed = config.with_overrides(k=self.k, results=self.results, cache_override=self.cache_dir)
        if self.max_cost is not None:
            if self.max_cost < 0:
                raise BenchError(f"--max-cost {self.max_cost:g} must not be negative")
            changed = dataclasses.replace(changed, llm=dataclasses.replace(changed.llm, max_cost=self.max_cost))
        if self.perturb is None:
            return changed
        return dataclasses.replace(changed, perturb=perturbations(self.perturb, "--perturb"))


def _patterns(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


DEFAULTS = RunOptions()
