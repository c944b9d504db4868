"""BM25 in every script: bm25s's scores to the last bit over Chinese, Thai and Hindi terms and random
Unicode; the corpus's language found when the index is built and reported; English tokenised as
before; the tokenizer settings of a [model.NAME] table and their one-line errors."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest
from bm25s.stopwords import STOPWORDS_EN
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.chunking import FixedTokenChunker
from bench.chunking.table import ChunkTable
from bench.cli import main
from bench.config import load_config
from bench.embedders import MODELS, ModelSpec
from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.retrieval import bm25
from bench.retrieval.bm25 import BM25Index, Tokenizer
from bench.retrieval.retrievers import BM25Retriever
from bench.text.words import TOKENIZERS, LexicalTokenizer
from tests.helpers import CONFIG, DOCS, write_project

ZH = [
    "机器人的电池更换周期是多久？电池一般每两年更换一次。",
    "扫地机器人的滤网需要每三个月清洗一次，清洗后晾干再装回。",
    "保修期内，电池和电机免费维修；人为损坏不在保修范围内。",
    "员工每年享有十五天带薪年假，未休完的假期可以顺延。",
    "如何修改我的账户密码？请在设置页面点击修改密码。",
]
TH = ["สวัสดีครับ ยินดีต้อนรับ", "ฉันชอบกินข้าวผัดกับไข่ดาว", "ร้านอาหารเปิดทุกวันตั้งแต่เก้าโมงเช้า", "แบตเตอรี่ต้องเปลี่ยนทุกสองปี"]
HI = ["मैं हिन्दी में बात कर रहा हूँ", "बैटरी हर दो साल में बदलनी चाहिए", "ग्राहक सेवा सुबह नौ बजे खुलती है", "हिन्दी भारत की भाषा है"]


HARD = "电池机器人的是 สวัสดีครับ हिन्दी ｶﾞ\u0301"  # runs, clusters, stopwords and marks, drawn often


def _same_scores(docs: list[list[str]], queries: list[list[str]]) -> None:
    """Our index and bm25s's, given the same terms, score every document of every query alike."""
    ours = BM25Index()
    ours.build(map(Counter, docs))
    theirs = bm25s.BM25()
    theirs.index(docs, show_progress=False)
    for query in queries:
        if query:
            assert np.array_equal(ours.scores(query), theirs.get_scores(query)), query  # to the last bit


@pytest.mark.parametrize(("texts", "name"), [(ZH, "zh"), (TH, "th"), (HI, "hi")])
@pytest.mark.parametrize("segmenter", list(TOKENIZERS))
def test_scores_equal_bm25s_over_the_terms_of_every_script(texts: list[str], name: str, segmenter: str):
    tokenize = LexicalTokenizer(segmenter, name)
    rng = random.Random(len(texts))
    docs = [tokenize(t) for t in texts for _ in range(3)] + [tokenize(" ".join(rng.sample(texts, 2)))]
    queries = [tokenize(t[: rng.randint(2, len(t))]) for t in texts] + [tokenize(texts[0] + texts[-1])]
    assert all(docs) and sum(map(len, queries)) > len(queries)
    _same_scores(docs, queries)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(HARD)), min_size=1),
        min_size=2,
        max_size=12,
    ),
    st.sampled_from(list(TOKENIZERS)),
)
def test_scores_equal_bm25s_over_random_unicode(texts: list[str], segmenter: str):
    tokenize = LexicalTokenizer(segmenter, "zh")
    docs = [tokenize(t) for t in texts]
    if not any(docs):
        return  # bm25s cannot index a corpus without a single term
    _same_scores(docs, [tokenize(t) for t in texts] + [[w for d in docs for w in d][:5]])


def _table(tmp_path: Path, texts: list[str]) -> ChunkTable:
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(200))


def test_a_chinese_corpus_is_found_chinese_and_its_questions_find_their_passage(tmp_path: Path):
    retriever = BM25Retriever(MODELS.get("bm25"))
    stats = retriever.build(_table(tmp_path, ZH))
    assert stats.tokenizer == retriever.tokenizer == "zh: unigrams+bigrams, stopwords bm25s-zh+en, stemmer none"
    questions = ["电池多久换一次？", "滤网怎么清洗", "年假有几天", "密码怎么改"]
    found = [units[0] for units, _ in retriever.search(retriever.encode(questions), 3)]
    assert found == [0, 1, 3, 4]
    # as \w+ read them, each question was one word that no passage holds: nothing was found
    assert [re.findall(r"\w+", q) for q in questions[:2]] == [["电池多久换一次"], ["滤网怎么清洗"]]


def _before(text: str) -> Counter:
    """What BM25 indexed before: \\w+ of the lower-cased text minus bm25s's English stopwords."""
    stop = frozenset(STOPWORDS_EN)
    return Counter(w for w in re.findall(r"\w+", text.lower()) if w not in stop)


def test_an_english_corpus_is_found_english_and_scores_as_before(tmp_path: Path):
    texts = [*DOCS.values(), "Café crème brûlée: naïve façade, Σίσυφος, Привет мир, 2½ tons"]
    table = _table(tmp_path, texts)
    retriever = BM25Retriever(MODELS.get("bm25"))
    assert retriever.build(table).tokenizer == "en: unigrams+bigrams, stopwords bm25s-en, stemmer none"
    before = BM25Index()
    before.build(map(_before, table.iter_texts()))
    assert retriever.bm25.vocab == before.vocab
    for question in ["How many vacation days?", "the laptop battery", "crème brûlée", "Привет"]:
        [tokens] = retriever.encode([question])
        assert tokens == list(_before(question).elements())
        assert np.array_equal(retriever.bm25.scores(tokens), before.scores(tokens))


def test_a_set_language_is_used_as_given_and_stemmer_auto_takes_its_snowball(tmp_path: Path):
    spec = ModelSpec(name="de", loader="bm25", params=(("language", "de"), ("stemmer", "auto")))
    retriever = BM25Retriever(spec)
    retriever.build(_table(tmp_path, ["Die Häuser sind groß", "Das Haus ist klein"]))
    assert retriever.tokenizer == "de: unigrams+bigrams, stopwords bm25s-de, stemmer german"
    assert retriever.encode(["die Häuser"]) == [["haus"]]
    assert bm25.revision("auto", "auto", "de").endswith("stopwords bm25s-de, stemmer snowball-german")


def test_unset_the_stemmer_is_the_main_languages_except_english(tmp_path: Path):
    """As Lucene's analyzers stem Russian, German or Hindi; English stays as BM25 always read it."""
    retriever = BM25Retriever(MODELS.get("bm25"))
    texts = ["Батарею робота-пылесоса нужно менять каждые восемнадцать месяцев.", "Фильтр моют водой раз в месяц."]
    retriever.build(_table(tmp_path, texts))
    assert retriever.tokenizer == "ru: unigrams+bigrams, stopwords bm25s-ru+en, stemmer russian"
    assert retriever.encode(["батареи"]) == retriever.encode(["батарею"]) == [["батар"]]  # one stem, two cases
    assert Tokenizer(language="en")("running runs") == ["running", "runs"]
    assert Tokenizer("none", language="ru")("батареи") == ["батареи"]
    assert Tokenizer(language="zh")("电池") == ["电", "池", "电池"]  # Chinese has no Snowball stemmer
    assert bm25.revision(None, "auto", "ru").endswith("stemmer snowball-russian")
    assert bm25.revision(None, "auto", "en").endswith("stemmer none")


def test_before_it_is_built_an_auto_language_tokenises_as_undetermined():
    assert Tokenizer()("The robot 机器人") == ["robot", "机", "器", "人", "机器", "器人"]
    assert Tokenizer().resolved.summary == "und: unigrams+bigrams, stopwords bm25s-en, stemmer none"


def test_the_revision_names_the_tokenizer_language_and_stemmer():
    assert MODELS.get("bm25").revision == bm25.revision() == Tokenizer().revision
    assert MODELS.get("bm25-stem").revision == bm25.revision("english") == Tokenizer("english").revision
    variants = {
        bm25.revision(stemmer, tokenizer, language)
        for stemmer in (None, "english", "auto")
        for tokenizer in ("auto", "jieba", "bigrams")
        for language in ("auto", "zh", "en")
    }
    assert len(variants) == 3 * 3 * 3 - 3 * 2  # a set language with stemmer "auto" is its Snowball: zh none, en english
    assert bm25.revision(tokenizer="auto") == bm25.revision(tokenizer="unigrams+bigrams")  # auto is what it stands for


def _config(tmp_path: Path, table: str) -> Path:
    return write_project(tmp_path, CONFIG.replace('models = ["hash", "bm25"]', 'models = ["mine"]') + "\n" + table)


def test_a_model_table_sets_the_tokenizer_and_language(tmp_path: Path):
    cfg = load_config(_config(tmp_path, '[model.mine]\nloader = "bm25"\ntokenizer = "jieba"\nlanguage = "zh"\n'))
    mine = cfg.model("mine")
    assert mine.revision == bm25.revision(None, "jieba", "zh") and "jieba words" in mine.revision
    assert "stopwords bm25s-zh+en" in mine.revision
    BM25Retriever(mine)  # the retriever agrees with the config's revision
    assert mine.languages == ("any",)  # a BM25 model of one's own reads every script, as bm25 does


@pytest.mark.parametrize(
    ("table", "hint"),
    [
        ('tokenizer = "jeiba"', "did you mean 'jieba'"),
        ("tokenizer = 2", "must be a name"),
        ('language = "cn"', "did you mean 'zh'"),
        ('language = "klingon"', "ISO 639-1"),
        ('tokeniser = "jieba"', "unknown BM25 setting 'tokeniser'; did you mean 'tokenizer'"),
        ('stemmer = "englsh"', "did you mean 'english'"),
    ],
)
def test_a_bad_tokenizer_setting_is_one_line(tmp_path: Path, table: str, hint: str):
    with pytest.raises(BenchError, match=re.escape(hint)) as error:
        load_config(_config(tmp_path, f'[model.mine]\nloader = "bm25"\n{table}\n'))
    assert "[model.mine]" in str(error.value) and "\n" not in str(error.value)


def test_a_bad_tokenizer_through_the_command_line_exits_2(tmp_path: Path):
    path = _config(tmp_path, '[model.mine]\nloader = "bm25"\ntokenizer = "words+"\n')
    result = CliRunner().invoke(main, ["run", str(path), "--no-report"], env={"BENCH_CACHE_DIR": None})
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bench: error: {path}: [model.mine] tokenizer = 'words+'") and "jieba" in line
