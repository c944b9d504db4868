"""A run's languages: the corpus's and the questions' mix in manifest.json, the models that do not
read them warned about, the share of [UNK] word pieces a model's own tokenizer gives, the
`[model.NAME] languages` setting, and that none of it moves a config hash.

The runs use the tiny projects of tests/helpers.py (English) and a Chinese one written here, with
the hashing model and BM25 (seconds)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from bench.config import load_config
from bench.embedders import MODELS
from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from bench.inputs.goldset_stats import goldset_stats
from bench.run.dry_run import dry_run
from bench.run.models import UNKNOWN_WARNING, tokenizer_file, unknown_token_share
from bench.run.shootout import run_shootout
from tests.helpers import CONFIG, SHARED, run_cli, write_project

ROOT = Path(__file__).resolve().parents[2]
CMRC = SHARED / "cmrc2018-zh"

ZH_DOCS = {
    "hr/leave.md": "# 年假制度\n\n正式员工每年享有十五天带薪年假。未休完的年假可以顺延到次年三月底，逾期作废。\n\n"
    "请假须提前三个工作日在人事系统中提交申请，并经直属主管批准。\n",
    "it/laptop.md": "# 笔记本电脑\n\n研发人员配发的笔记本电脑内存为三十二GB，硬盘为一TB。\n\n"
    "电脑丢失须在二十四小时内报告信息安全部门，并修改所有账户密码。\n",
    "ops/backup.md": "# 数据库备份\n\n生产数据库每晚两点自动备份，备份文件保留三十五天。\n\n"
    "每季度进行一次恢复演练，演练结果记录在运维知识库中。\n",
}
ZH_QUESTIONS = [
    ("q1", "员工一年有几天带薪年假？", "hr/leave.md", "正式员工每年享有十五天带薪年假"),
    ("q2", "没休完的年假能留到什么时候？", "hr/leave.md", "未休完的年假可以顺延到次年三月底"),
    ("q3", "研发的电脑内存多大？", "it/laptop.md", "研发人员配发的笔记本电脑内存为三十二GB"),
    ("q4", "数据库备份保留多久？", "ops/backup.md", "备份文件保留三十五天"),
]


# The hashing model told it reads English only: a dense model that does not read Chinese, in seconds.
ENGLISH_HASH = '\n[model.hash]\nlanguages = ["en"]\n'


def _chinese_project(root: Path, config: str = CONFIG + ENGLISH_HASH) -> Path:
    for rel, text in ZH_DOCS.items():
        path = root / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    lines = [
        json.dumps(
            {"id": qid, "question": q, "evidence": [{"doc": doc, "quote": quote, "grade": 2}]}, ensure_ascii=False
        )
        for qid, q, doc, quote in ZH_QUESTIONS
    ]
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "bench.toml").write_text(config, encoding="utf-8")
    return root / "bench.toml"


def _run(config: Path) -> tuple[dict, str]:
    out = io.StringIO()
    run = run_shootout(load_config(config), Console(file=out, width=400), use_cache=False, reports=False)
    manifest = json.loads((run.path / "manifest.json").read_text(encoding="utf-8"))
    return manifest, out.getvalue()


def test_an_english_run_records_english_and_warns_of_nothing(tmp_path: Path) -> None:
    manifest, printed = _run(write_project(tmp_path))
    languages = manifest["languages"]
    assert languages["corpus"]["main"] == "en" and languages["corpus"]["shares"] == {"en": 1.0}
    assert languages["corpus"]["texts"] == 4 and languages["corpus"]["scripts"] == {"Latin": 1.0}
    assert languages["questions"]["main"] == "en"
    assert list(languages["models"]) == ["hash", "bm25"]
    assert languages["models"]["hash"] == {"languages": ["any"], "reads_corpus": True, "reads_questions": True}
    assert languages["warnings"] == []
    assert [line for line in printed.splitlines() if line.startswith("warning") and "not locked" not in line] == []


def test_a_chinese_run_warns_and_names_a_multilingual_model(tmp_path: Path) -> None:
    manifest, printed = _run(_chinese_project(tmp_path))
    languages = manifest["languages"]
    assert languages["corpus"]["main"] == "zh" and languages["questions"]["main"] == "zh"
    assert languages["corpus"]["shares"] == {"zh": 1.0}
    assert next(iter(languages["corpus"]["scripts"])) == "Han"
    assert languages["models"]["hash"]["reads_corpus"] is False
    warnings = languages["warnings"]
    assert any(w.startswith("the corpus is Chinese, which hash does not read") for w in warnings), warnings
    assert any(
        'no dense model in the grid reads Chinese; add a multilingual one: models = [..., "e5-small"]' in w
        for w in warnings
    )
    for line in warnings:
        assert f"warning: {line}" in printed.replace("\n", " ") or line[:60] in printed


def test_a_dry_run_warns_before_anything_is_embedded(tmp_path: Path) -> None:
    out = io.StringIO()
    dry_run(load_config(_chinese_project(tmp_path)), console=Console(file=out, width=400))
    assert "warning: the corpus is Chinese, which hash does not read" in out.getvalue()
    out = io.StringIO()
    dry_run(load_config(write_project(tmp_path / "en")), console=Console(file=out, width=400))
    assert "does not read" not in out.getvalue()


def test_a_multilingual_model_in_the_grid_silences_the_advice(tmp_path: Path) -> None:
    config = CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "bm25", "zh-hash"]')
    config += ENGLISH_HASH + '\n[model.zh-hash]\nloader = "hashing"\nlanguages = ["zh", "en"]\n'
    manifest, _ = _run(_chinese_project(tmp_path, config))
    warnings = manifest["languages"]["warnings"]
    assert manifest["languages"]["models"]["zh-hash"] == {
        "languages": ["zh", "en"],
        "reads_corpus": True,
        "reads_questions": True,
    }
    assert not any("no dense model" in w for w in warnings)
    assert any("which hash does not read" in w for w in warnings)


def test_questions_in_another_language_than_the_corpus(tmp_path: Path) -> None:
    path = _chinese_project(tmp_path)
    english = [("q1", "How many days of paid leave does an employee get a year?", "hr/leave.md", ZH_QUESTIONS[0][3])]
    lines = [
        json.dumps({"id": i, "question": q, "evidence": [{"doc": d, "quote": x, "grade": 2}]}) for i, q, d, x in english
    ]
    (tmp_path / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest, _ = _run(path)
    assert manifest["languages"]["questions"]["main"] == "en"
    assert any(
        w.startswith("the questions are English and the corpus Chinese") for w in manifest["languages"]["warnings"]
    )


def test_languages_setting_and_config_hashes(tmp_path: Path) -> None:
    base = load_config(write_project(tmp_path / "a"))
    set_ = load_config(write_project(tmp_path / "b", CONFIG + '\n[model.hash]\nlanguages = ["en", "ZH"]\n'))
    assert set_.model("hash").languages == ("en", "zh")
    assert set_.hash == base.hash  # it describes the model; no figure changes
    for name in ("bench.toml", "bench-full.toml", "bench-zh.toml"):
        config = load_config(ROOT / name)
        bare = replace(config, model_specs={n: replace(s, languages=()) for n, s in config.model_specs.items()})
        assert config.hash == bare.hash, name
        assert all("languages" not in spec for spec in config.resolved()["model_specs"].values())
    # the latency cache's key (repr of the spec) is what it was too
    assert "languages" not in repr(MODELS.get("minilm"))


@pytest.mark.parametrize("value", ["3", '["en", 4]', "[]", '[""]'])
def test_a_bad_languages_setting_is_one_line(tmp_path: Path, value: str) -> None:
    path = write_project(tmp_path, CONFIG + f"\n[model.hash]\nlanguages = {value}\n")
    if value == "[]":  # no languages: unknown, as when unset
        assert load_config(path).model("hash").languages == ()
        return
    with pytest.raises(BenchError, match=r"\[model.hash\]: languages = .* must be a list of language codes"):
        load_config(path)
    result = run_cli("run", str(path))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_registered_languages() -> None:
    assert MODELS.get("minilm").languages == ("en",) and MODELS.get("static").languages == ("en",)
    assert MODELS.get("e5-small").reads("zh") and MODELS.get("e5-small").reads("th")
    assert MODELS.get("minilm").reads("zh") is False and MODELS.get("minilm").reads("en")
    assert MODELS.get("hash").reads("ru") and MODELS.get("hash").reads("ja")
    spaced = replace(MODELS.get("hash"), languages=("spaced",))
    assert spaced.reads("ru") and spaced.reads("de") and spaced.reads("ja") is False and spaced.reads("th") is False


def _minilm_unknown(texts: list[str], tmp_path: Path) -> dict:
    file = tokenizer_file(MODELS.get("minilm"), tmp_path)
    assert file is not None
    found = unknown_token_share(file, texts)
    assert found is not None
    return found


def test_unknown_share_for_minilm_english_against_chinese(tmp_path: Path) -> None:
    english = [p.read_text("utf-8") for p in sorted((ROOT / "corpora" / "northwind").rglob("*.md"))]
    chinese = [p.read_text("utf-8") for p in sorted((ROOT / "corpora" / "huanan").rglob("*.md"))]
    en, zh = _minilm_unknown(english, tmp_path), _minilm_unknown(chinese, tmp_path)
    assert en["share"] == 0.0 and en["pieces"] > 10_000
    assert zh["share"] > 0.4 > UNKNOWN_WARNING  # most Han characters are not in its vocabulary
    assert zh["token"] == "[UNK]"


def test_unknown_share_by_hand(tmp_path: Path) -> None:
    # "hello" and "world" are in the vocabulary; 龘 (a rare Han character) is not: 1 of 3 pieces.
    found = _minilm_unknown(["hello 龘 world"], tmp_path)
    assert found["pieces"] == 3 and found["share"] == pytest.approx(1 / 3)


@pytest.mark.slow
def test_unknown_share_matches_the_models_own_tokenizer(tmp_path: Path) -> None:
    """The tokenizer file read alone counts what sentence-transformers' loaded tokenizer does."""
    from bench.embedders import load_embedder

    embedder = load_embedder(MODELS.get("minilm"), models_dir=tmp_path)
    tokenizer = embedder.model.tokenizer  # type: ignore[attr-defined]
    texts = [p.read_text("utf-8")[:2000] for p in sorted((ROOT / "corpora" / "huanan").rglob("*.md"))]
    ids = tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]
    expected = sum(x.count(tokenizer.unk_token_id) for x in ids) / sum(map(len, ids))
    assert _minilm_unknown(texts, tmp_path)["share"] == pytest.approx(expected, abs=1e-12)


def test_chinese_questions_are_reported_as_chinese(tmp_path: Path) -> None:
    config = load_config(_chinese_project(tmp_path))
    corpus = load_corpus(config.corpus)
    stats = goldset_stats(load_goldset(config.goldset, corpus), corpus)
    assert stats["languages"]["main"] == "zh" and stats["languages"]["shares"] == {"zh": 1.0}
    assert stats["languages"]["texts"] == len(ZH_QUESTIONS)


def test_cmrc2018_questions_are_chinese() -> None:
    if not CMRC.exists():
        pytest.skip("cmrc2018-zh is not on this machine")
    result = run_cli("corpus", "stats", str(CMRC), "--json")
    assert result.returncode == 0, result.stderr
    languages = json.loads(result.stdout)["languages"]
    assert languages["main"] == "zh" and languages["shares"]["zh"] > 0.95 and languages["texts"] == 300


def test_corpus_stats_shows_the_languages(tmp_path: Path) -> None:
    config = _chinese_project(tmp_path)
    result = run_cli("corpus", "stats", str(config))
    assert result.returncode == 0, result.stderr
    rows = {cells[0]: cells[1] for cells in _rows(result.stdout)}
    assert rows["Chinese (zh)"] == "100.0%"
    assert rows["scripts"] == "Han 98%, Latin 2%"
    assert rows["sampled"] == "every document"


def _rows(stdout: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in stdout.splitlines()
        if line.startswith("│")
    ]
