"""Named things: the Registry (aliases, duplicates, suggestions), the one "did you mean" phrase, and
each registry of kinds agreeing with what the command line and the config accept."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from bench.chunking import CHUNKER_KINDS, make_chunker
from bench.cli import main
from bench.config import load_config
from bench.embedders import LOADERS, MODELS
from bench.engines import ENGINES, LocalEngine, make_engine
from bench.errors import BenchError
from bench.registry import Registry, suggest
from bench.results.export import FORMATS, export_run
from bench.retrieval.faiss_index import INDEXES

REPO = Path(__file__).resolve().parents[1]

CONFIG = """\
corpus = "corpus"
goldset = "gold.jsonl"
models = ["hash"]

[chunkers.tok]
kind = "tokens"
size = 24
"""


def _colours() -> Registry[int]:
    reg: Registry[int] = Registry("colour")
    reg.register("red", 1, aliases=("rouge", "rot"))
    reg.register("green", 2)
    return reg


# --- the Registry ----------------------------------------------------------------------------------------


def test_names_and_aliases_lead_to_the_same_thing():
    reg = _colours()
    assert reg.get("red") == reg.get("rouge") == reg["rot"] == 1
    assert reg.canonical("rouge") == "red" and reg.canonical("green") == "green"
    assert "rot" in reg and "blue" not in reg and 7 not in reg
    assert list(reg) == ["red", "green"]  # registered names only, in registration order


@pytest.mark.parametrize("name", ["red", "rouge", "green"])
def test_a_name_or_alias_is_registered_once(name):
    reg = _colours()
    with pytest.raises(ValueError, match=f"colour '{name}' is already registered"):
        reg.register(name, 3)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("blue", 3, aliases=(name,))
    assert "blue" not in reg and reg.get("red") == 1  # a refused registration leaves nothing behind


def test_an_unknown_name_gets_the_closest_one_and_the_known_names():
    reg = _colours()
    with pytest.raises(BenchError) as err:
        reg.get("gren")
    assert str(err.value) == "unknown colour 'gren'; did you mean 'green'? known: green, red"
    with pytest.raises(BenchError) as err:
        reg.canonical("rogue")  # aliases are suggested too
    assert str(err.value) == "unknown colour 'rogue'; did you mean 'rouge'? known: green, red"
    with pytest.raises(BenchError) as err:
        reg.get("zzz")
    assert str(err.value) == "unknown colour 'zzz'; known: green, red"


# --- suggest -------------------------------------------------------------------------------------------


def test_suggest_phrases():
    names = ["recall@5", "mrr@5", "ndcg@5", "precision@5"]
    assert suggest("mrr@6", names) == "did you mean 'mrr@5'? "
    assert suggest("nothing like it", names) == ""
    assert suggest("FLAT", ["flat", "hnsw"]) == "did you mean 'flat'? "  # case alone is close
    assert suggest("efsearch", ("efSearch", "nprobe")) == "did you mean 'efSearch'? "
    ids = ["hash/rec24/flat", "bm25/tok24/inverted", "hash/tok24/flat@x", "hash/tok24/flat"]
    assert suggest("hash/tok24/flt", ids, n=3) == (
        "did you mean 'hash/tok24/flat' or 'hash/tok24/flat@x' or 'hash/rec24/flat'? "  # closest first
    )
    assert suggest("hash/tok24/flt", ids, quote=False) == "did you mean hash/tok24/flat? "
    assert suggest("ab", ["abxyz"]) == "" and suggest("ab", ["abxyz"], cutoff=0.5) == "did you mean 'abxyz'? "
    assert suggest("x", iter(["x1"])) == "did you mean 'x1'? "  # any iterable, read once


# --- each registry of kinds is what the command line and the config accept -------------------------------


def _choices(command: str, param: str) -> list[str]:
    """The choices ``bench COMMAND`` accepts for the option ``param``."""
    [option] = [p for p in main.commands[command].params if p.name == param]
    assert isinstance(option.type, click.Choice)
    return list(option.type.choices)


def test_engines_are_the_run_commands_choices():
    assert list(ENGINES) == _choices("run", "engine") == ["local", "ray"]
    assert isinstance(make_engine("local", Path("models"), 8), LocalEngine)
    with pytest.raises(BenchError, match=r"unknown engine 'rya'; did you mean 'ray'\? known: local, ray"):
        make_engine("rya", Path("models"), 8)


def test_export_formats_are_the_export_commands_choices(tmp_path):
    assert list(FORMATS) == _choices("export", "fmt") == ["trec", "ranx", "csv", "parquet"]
    with pytest.raises(BenchError) as err:
        export_run(tmp_path, tmp_path / "out", "parqet")
    assert str(err.value) == (
        "export format 'parqet' is unknown; did you mean 'parquet'? choose one of trec, ranx, csv, parquet"
    )
    assert not (tmp_path / "out").exists()


def _documented_kinds() -> list[str]:
    """The kinds in the chunker table of docs/config.md (its section's own text, before any subsection)."""
    text = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    table = text.split("## Chunkers", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(r"^\| `([a-z]+)` \|", table, flags=re.MULTILINE)


def test_chunker_kinds_are_the_documented_kinds_and_build_from_a_config(tmp_path):
    assert sorted(CHUNKER_KINDS) == sorted(_documented_kinds())
    assert isinstance(make_chunker("recursive", size=8), CHUNKER_KINDS["recursive"])
    with pytest.raises(BenchError, match=r"unknown chunker kind 'tokenz'; did you mean 'tokens'\?"):
        make_chunker("tokenz", size=8)
    path = tmp_path / "bench.toml"
    path.write_text(CONFIG.replace('kind = "tokens"', 'kind = "recursiv"'))
    with pytest.raises(
        BenchError, match=r"\[chunkers.tok\]: unknown chunker kind 'recursiv'; did you mean 'recursive'"
    ):
        load_config(path)


def test_loaders_are_what_model_tables_accept(tmp_path):
    path = tmp_path / "bench.toml"
    for loader in LOADERS:
        path.write_text(CONFIG.replace('["hash"]', '["mine"]') + f'\n[model.mine]\nloader = "{loader}"\ndims = 8\n')
        assert load_config(path).model("mine").loader == loader
    assert {MODELS.get(m).loader for m in MODELS} <= set(LOADERS)
    path.write_text(CONFIG + '\n[model.mine]\nloader = "opnai"\n')
    with pytest.raises(BenchError, match=r"loader 'opnai' is unknown; did you mean 'openai'\? use one of "):
        load_config(path)


def _with_indexes(names: list[str]) -> str:
    listed = ", ".join(f'"{n}"' for n in names)
    return CONFIG.replace("[chunkers.tok]", f"indexes = [{listed}]\n\n[chunkers.tok]")


def test_indexes_are_what_the_config_accepts(tmp_path):
    path = tmp_path / "bench.toml"
    path.write_text(_with_indexes(list(INDEXES)))
    assert load_config(path).indexes == tuple(INDEXES) == ("flat", "hnsw", "ivf", "ivfpq", "sq8")
    path.write_text(_with_indexes(["ivfqp"]))
    with pytest.raises(BenchError, match=r"indexes: unknown index 'ivfqp'; did you mean 'ivfpq'\?"):
        load_config(path)
