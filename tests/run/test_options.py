"""A run's options as one value: the command line, the Python API and the run read the same fields
with the same defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.run.options import DEFAULTS, RunOptions
from tests.helpers import write_project


def test_strings_and_lists_become_paths_and_tuples():
    options = RunOptions.of("x/bench.toml", results="out", cache_dir="cache", only="minilm/*", skip=["bm25/*"])
    assert options.config == Path("x/bench.toml") and options.results == Path("out")
    assert options.cache_dir == Path("cache")
    assert options.only == ("minilm/*",) and options.skip == ("bm25/*",)  # one pattern, not its characters


def test_changes_apply_to_options_and_an_unknown_name_is_one_line():
    base = RunOptions(k=5, reports=False)
    assert RunOptions.of(base, remeasure=True) == RunOptions(k=5, reports=False, remeasure=True)
    assert RunOptions.of(base) == base
    with pytest.raises(BenchError, match=r"run option 'remasure' does not exist; did you mean 'remeasure'\?"):
        RunOptions.of(base, remasure=True)


def test_the_overrides_reach_the_config(tmp_path: Path):
    config = write_project(tmp_path)
    loaded = RunOptions(config=config, k=2, results=tmp_path / "elsewhere", cache_dir=tmp_path / "c").load_config()
    assert (loaded.k, loaded.results, loaded.cache_override) == (2, tmp_path / "elsewhere", tmp_path / "c")
    again = RunOptions(config=loaded, k=2).load_config()  # a loaded config takes the overrides again unchanged
    assert (again.k, again.results, again.hash) == (loaded.k, loaded.results, loaded.hash)
    assert RunOptions(config=config).load_config().k == 3  # the config's own


def test_bench_run_without_options_is_the_default_run():
    """Every option of `bench run` is a field (two said the other way round), and what the command
    line gives when none is passed is RunOptions' defaults."""
    from bench.cli.shootout import run

    given = run.make_context("run", []).params
    flags = {"dry_run": False, "no_cache": False, "no_report": False}
    assert {name: given.pop(name) for name in flags} == flags
    # the chat model's options make one field, the relevance judge a run with --questions asks
    chat = ("llm_base_url", "llm_model", "llm_api_key_env", "max_cost", "price_in", "price_out", "concurrency")
    assert given.pop("llm_model") is None
    for name in chat[2:] + chat[:1]:
        given.pop(name)
    # --max-cost is also the run's budget for every chat call (RunOptions.max_cost, over [llm] max_cost)
    assert set(given) | {"use_cache", "reports", "judge", "max_cost"} == set(RunOptions.__dataclass_fields__)
    assert RunOptions(**given) == DEFAULTS == RunOptions()
