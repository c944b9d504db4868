"""BM25 with Snowball stemming: stems on both sides, the tokenizer in the revision, the setting's
checks, bm25s's own stemmed rankings, and Cranfield (when the shared collection is here)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer
from click.testing import CliRunner

from bench.chunking import FixedTokenChunker
from bench.chunking.table import ChunkTable
from bench.cli import main
from bench.config import load_config
from bench.embedders import MODELS, ModelSpec
from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.retrieval import bm25
from bench.retrieval.bm25 import BM25Index, Tokenizer
from bench.retrieval.retrievers import BM25Retriever, top_n
from tests.helpers import CONFIG, SHARED, finished_runs, run_cli, write_project

# Inflected forms that Snowball folds together, stopwords, and words it leaves alone.
FORMS = [
    *("run", "runs", "running", "runner"),
    *("connect", "connected", "connection", "connecting"),
    *("happy", "happily", "happiness", "generous", "generously"),
    *("the", "and", "was", "of", "is"),
    *("laptop", "laptops", "région", "régions", "2024", "日本"),
]


def _table(tmp_path: Path, texts: list[str]) -> ChunkTable:
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(200))


def _found(retriever: BM25Retriever, question: str) -> list[int]:
    [(units, _)] = retriever.search(retriever.encode([question]), 5)
    return units.tolist()


def test_stems_match_a_query_to_a_document_in_other_forms(tmp_path: Path):
    table = _table(tmp_path, ["She was running every morning", "Laptops are replaced yearly"])
    stemmed, plain = BM25Retriever(MODELS.get("bm25-stem")), BM25Retriever(MODELS.get("bm25"))
    stemmed.build(table)
    plain.build(table)
    assert Tokenizer("english")("Running runs") == ["run", "run"]
    assert stemmed.bm25.vocab.keys() >= {"run", "laptop"} and "running" not in stemmed.bm25.vocab
    assert _found(stemmed, "who runs?") == [0] and _found(plain, "who runs?") == []
    assert _found(stemmed, "laptop") == [1] and _found(plain, "laptop") == []


def test_stemming_counts_documents_as_stems_and_drops_stopwords_first():
    counts = Tokenizer("english").counts("The runner runs; running was fun. The END")
    assert counts == {"runner": 1, "run": 2, "fun": 1, "end": 1}  # "was" is a stopword, never stemmed to "wa"
    assert Tokenizer().counts("runs running") == {"runs": 1, "running": 1}


def test_the_revision_names_the_tokenizer_and_keeps_the_variants_apart():
    plain, stemmed = MODELS.get("bm25"), MODELS.get("bm25-stem")
    assert plain.revision == bm25.revision(None) == Tokenizer().revision
    assert stemmed.revision == bm25.revision("english") == Tokenizer("english").revision
    assert plain.revision != stemmed.revision and plain.cache_key != stemmed.cache_key
    assert (
        "snowball-english" in stemmed.revision
        and "stemmer snowball of the main language, none for English" in plain.revision
    )
    for part in ("lowercase", r"\w+ with marks", "unigrams+bigrams", "stopwords of the main language"):
        assert part in plain.revision and part in stemmed.revision


def _config(tmp_path: Path, tables: str, models: str = '"bm25", "mine"') -> Path:
    text = CONFIG.replace('models = ["hash", "bm25"]', f"models = [{models}]") + "\n" + tables
    return write_project(tmp_path, text)


def test_a_model_table_sets_the_stemmer_and_the_revision_follows(tmp_path: Path):
    cfg = load_config(_config(tmp_path, '[model.mine]\nloader = "bm25"\nstemmer = "porter"\n'))
    mine = cfg.model("mine")
    assert mine.lexical and mine.option("stemmer") == "porter"
    assert mine.revision == bm25.revision("porter") != cfg.model("bm25").revision
    assert cfg.resolved()["model_specs"]["mine"]["revision"] == mine.revision  # so the manifest says which ran
    stemmed_builtin = load_config(_config(tmp_path, '[model.bm25]\nstemmer = "english"\n', models='"bm25"'))
    assert stemmed_builtin.model("bm25").revision == bm25.revision("english")
    assert stemmed_builtin.hash != load_config(_config(tmp_path, "", models='"bm25"')).hash


@pytest.mark.parametrize(
    ("value", "hint"),
    [('"klingon"', "not a Snowball language"), ('"englsh"', "did you mean 'english'"), ("3", "language name")],
)
def test_a_bad_stemmer_is_one_line(tmp_path: Path, value: str, hint: str):
    path = _config(tmp_path, f'[model.mine]\nloader = "bm25"\nstemmer = {value}\n')
    with pytest.raises(BenchError, match=hint) as error:
        load_config(path)
    assert "[model.mine]" in str(error.value) and "\n" not in str(error.value)


def test_a_bm25_revision_is_never_set_by_hand(tmp_path: Path):
    with pytest.raises(BenchError, match="remove it"):
        load_config(_config(tmp_path, '[model.mine]\nloader = "bm25"\nrevision = "v2"\n'))
    with pytest.raises(BenchError, match="does not describe its tokenizer"):
        BM25Retriever(ModelSpec(name="x", loader="bm25", revision="v2"))


def test_a_bad_stemmer_through_the_command_line_exits_2(tmp_path: Path):
    path = _config(tmp_path, '[model.mine]\nloader = "bm25"\nstemmer = "klingon"\n')
    result = CliRunner().invoke(main, ["run", str(path), "--no-report"], env={"BENCH_CACHE_DIR": None})
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bench: error: {path}: [model.mine] stemmer = 'klingon'") and "english" in line
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())


@pytest.mark.parametrize("seed", range(6))
def test_stemmed_rankings_equal_bm25s_with_its_stemmer(seed: int):
    rng = random.Random(seed)
    docs = [" ".join(rng.choices(FORMS, k=rng.randint(1, 40))) for _ in range(rng.randint(20, 120))]
    queries = [" ".join(rng.choices(FORMS[:18], k=rng.randint(1, 5))) + " nothere" for _ in range(25)]
    stemmer = Stemmer.Stemmer("english")

    def theirs_tokens(texts: list[str]) -> list[list[str]]:
        return bm25s.tokenize(
            texts, stopwords="en", stemmer=stemmer, token_pattern=r"\w+", return_ids=False, show_progress=False
        )

    tokenize = Tokenizer("english", tokenizer="words")  # 日本 whole, as bm25s's \w+ finds it
    assert [tokenize(d) for d in docs] == theirs_tokens(docs)
    ours = BM25Index()
    ours.build(map(tokenize.counts, docs))
    theirs = bm25s.BM25()
    theirs.index(theirs_tokens(docs), show_progress=False)
    q_tokens = [tokenize(q) for q in queries]
    found, found_scores = theirs.retrieve(theirs_tokens(queries), k=min(10, len(docs)), show_progress=False)
    for tokens, their_ids, their_scores in zip(q_tokens, found, found_scores):
        scores = ours.scores(tokens)
        best = top_n(scores, np.arange(len(docs)), 10)
        best = best[scores[best] > 0]
        matched = their_scores > 0
        assert np.array_equal(scores[best], their_scores[matched])  # the same scores, to the last bit
        cut = scores[best][-1] if len(best) == 10 else 0  # documents tied at the cut may differ
        assert set(best[scores[best] > cut]) == set(their_ids[matched][their_scores[matched] > cut])


def _cranfield_ndcg(tmp_path: Path) -> dict[str, float]:
    result = run_cli(
        "goldset", "import", "beir", str(SHARED / "cranfield"), "--name", "cranfield", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    config = tmp_path / "cranfield.toml"
    text = config.read_text().replace('["minilm", "bm25"]', '["bm25", "bm25-stem"]\nndcg_gain = "linear"')
    config.write_text(text)
    result = run_cli("run", str(config), "--k", "10")
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    return {c["model"]: c["quality"]["ndcg@10"] for c in summary["candidates"]}


@pytest.mark.skipif(not (SHARED / "cranfield").is_dir(), reason="shared Cranfield collection absent")
def test_stemming_does_not_lower_cranfield_ndcg(tmp_path: Path):
    ndcg = _cranfield_ndcg(tmp_path)
    # Measured: 0.368 unstemmed, 0.387 stemmed (binary qrels, linear gain, as trec_eval's ndcg_cut).
    assert ndcg["bm25-stem"] >= ndcg["bm25"] - 0.01
    assert abs(ndcg["bm25"] - 0.368) <= 0.02
