"""The hash embedder hashes bench.text.words' terms: English vectors exactly as the \\w+ words made
them, Chinese and Thai passages now sharing terms with their questions."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.embedders import MODELS, load_embedder
from bench.embedders.base import PASSAGE, QUERY, normalise
from bench.text.scripts import UNSPACED
from tests.helpers import DOCS


def _before(texts: list[str], dims: int = 256) -> np.ndarray:
    """The hash embedder as it was: blake2b of each lower-cased \\w+ word, signed, 1 + log tf."""
    out = np.zeros((len(texts), dims), dtype=np.float32)
    for row, text in enumerate(texts):
        for word, tf in Counter(re.findall(r"\w+", text.lower())).items():
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[row, h % dims] += (1.0 if h >> 63 else -1.0) * (1.0 + np.log(tf))
    return normalise(out)


def _hash():
    return load_embedder(MODELS.get("hash"))


def test_english_vectors_and_token_counts_are_what_they_were():
    texts = [*DOCS.values(), "Café crème brûlée, naïve façade; Σίσυφος; Привет мир; 2½"]
    assert np.array_equal(_hash().embed(texts, PASSAGE), _before(texts))
    assert _hash().count_tokens(texts).tolist() == [len(re.findall(r"\w+", t)) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs", "Mn", "Mc", "Me")), max_size=60), max_size=4))
def test_text_without_marks_or_unspaced_scripts_embeds_as_before(texts: list[str]):
    if any(
        UNSPACED.search(t.lower()) or any(unicodedata.category(c).startswith("M") for c in t.lower()) for t in texts
    ):
        return
    assert np.array_equal(_hash().embed(texts, PASSAGE), _before(texts))


def test_a_chinese_question_shares_terms_with_its_passage():
    passages = ["扫地机器人的电池一般每两年更换一次。", "员工每年享有十五天带薪年假。"]
    vectors = _hash().embed(passages, PASSAGE)
    [question] = _hash().embed(["机器人的电池多久更换？"], QUERY)
    scores = vectors @ question
    assert scores[0] > 0.4 > scores[1]
    before = _before(passages) @ _before(["机器人的电池多久更换？"])[0]
    assert before.tolist() == [0.0, 0.0]  # one \w+ word each, shared by neither
    # 机 器 人 电 池 更 换 and 机器 器人 电池 更换 …: each term is a hashed dimension
    assert _hash().count_tokens(["机器人"]).tolist() == [5]


def test_a_thai_vowel_sign_stays_in_the_hashed_term():
    [with_marks] = _hash().embed(["สวัสดีครับ"], PASSAGE)
    [question] = _hash().embed(["สวัสดี"], QUERY)
    assert float(with_marks @ question) > 0.5
    assert _hash().count_tokens(["สวัสดีครับ"]).tolist() == [7 + 6]  # 7 clusters and 6 pairs
