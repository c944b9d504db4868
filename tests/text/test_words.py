"""Lexical tokenizers: words with their marks, unspaced runs by grapheme clusters, stopwords per
language; hand-written expectations per script, English exactly as ``\\w+`` read it, and properties
over random Unicode."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.errors import BenchError
from bench.text import words
from bench.text.scripts import UNSPACED
from bench.text.words import TOKENIZERS, LexicalTokenizer, check_language, content_terms, segment

ZH = "机器人的电池更换周期是多久？"
ZH_UNIGRAMS = ["机", "器", "人", "的", "电", "池", "更", "换", "周", "期", "是", "多", "久"]
ZH_BIGRAMS = ["机器", "器人", "人的", "的电", "电池", "池更", "更换", "换周", "周期", "期是", "是多", "多久"]


def test_chinese_runs_are_cut_into_characters_and_pairs():
    assert segment(ZH, "unigrams") == ZH_UNIGRAMS
    assert segment(ZH, "bigrams") == ZH_BIGRAMS
    assert segment(ZH, "unigrams+bigrams") == segment(ZH, "auto") == ZH_UNIGRAMS + ZH_BIGRAMS
    assert segment(ZH, "words") == ["机器人的电池更换周期是多久"]  # what \w+ made of it: one token
    assert segment(ZH, "jieba") == ["机器人", "的", "电池", "更换", "周期", "是", "多久"]
    assert segment(ZH, "jieba-search") == ["机器", "机器人", "的", "电池", "更换", "周期", "是", "多久"]
    # Chinese stopwords go: 的, 是 and 多 (bm25s's list), nothing else here
    assert LexicalTokenizer("unigrams", "zh")(ZH) == [u for u in ZH_UNIGRAMS if u not in "的是多"]


def test_latin_words_and_unspaced_runs_inside_one_word_are_told_apart():
    assert segment("iPhone12的电池，续航3天") == [
        *("iphone12", "的", "电", "池", "的电", "电池"),
        *("续", "航", "续航", "3", "天"),
    ]
    assert segment("单字 书") == ["单", "字", "单字", "书"]  # a one-character run is still a term
    assert segment("书", "bigrams") == ["书"]


def test_thai_keeps_every_vowel_sign_with_its_consonant():
    hello = ["ส", "วั", "ส", "ดี", "ค", "รั", "บ"]
    assert segment("สวัสดีครับ", "unigrams") == hello
    assert segment("สวัสดีครับ", "bigrams") == ["สวั", "วัส", "สดี", "ดีค", "ครั", "รับ"]
    assert segment("สวัสดีครับ", "words") == ["สวัสดีครับ"]
    # "I like to eat fried rice": า (sara aa) is a letter of its own, ั ิ ้ are marks on the one before
    sentence = "ฉันชอบกินข้าวผัด"
    assert segment(sentence, "unigrams") == ["ฉั", "น", "ช", "อ", "บ", "กิ", "น", "ข้", "า", "ว", "ผั", "ด"]
    # jieba knows no Thai: it is cut as auto cuts it, never inside a cluster
    assert segment(sentence, "jieba") == segment(sentence, "auto")


def test_japanese_kanji_and_kana():
    text = "東京スカイツリーは高い"
    unigrams = ["東", "京", "ス", "カ", "イ", "ツ", "リ", "ー", "は", "高", "い"]
    assert segment(text, "unigrams") == unigrams
    assert segment(text, "bigrams") == [a + b for a, b in zip(unigrams, unigrams[1:])]
    # half-width kana with its voicing mark (ﾞ is no combining mark, yet extends its kana)
    assert segment("ｶﾞｷ", "unigrams") == ["ｶﾞ", "ｷ"]
    assert segment("ｶﾞｷ", "jieba") == ["ｶﾞ", "ｷ"]  # jieba cuts kana one by one, the mark stays with its kana
    assert segment("カ\u3099キ", "unigrams") == ["カ\u3099", "キ"]  # a combining voicing mark stays too


def test_spaced_scripts_are_words_with_their_marks():
    assert segment("한국어 문장입니다") == ["한국어", "문장입니다"]
    assert segment("मैं हिन्दी में बात कर रहा हूँ") == ["मैं", "हिन्दी", "में", "बात", "कर", "रहा", "हूँ"]
    assert re.findall(r"\w+", "हिन्दी") == ["ह", "न", "द"]  # what \w+ made of it: marks cut the word up
    assert segment("مُحَمَّدٌ رَسُولُ اللهِ") == ["مُحَمَّدٌ", "رَسُولُ", "اللهِ"]
    assert segment("Это тест, и он прост.") == ["это", "тест", "и", "он", "прост"]
    assert LexicalTokenizer(language="ru")("Это тест, и он прост. The end") == ["это", "тест", "прост", "end"]
    assert LexicalTokenizer(language="ko")("나는 학생입니다 그리고 것") == ["나는", "학생입니다"]
    assert segment("café naïve Ünïcödé") == ["café", "naïve", "ünïcödé"]
    assert segment("cafe\u0301") == ["cafe\u0301"]  # a decomposed accent stays in its word


def test_content_terms_are_words_and_character_pairs():
    assert content_terms("The battery of 机器人") == ["the", "battery", "of", "机器", "器人"]
    assert content_terms(ZH) == ZH_BIGRAMS
    assert content_terms("สวัสดี") == ["สวั", "วัส", "สดี"]


def test_stopwords_and_stems_follow_the_language():
    assert LexicalTokenizer()("The cat and the hat") == ["cat", "hat"]  # undetermined: English's list
    assert LexicalTokenizer(language="ja")("the 東京") == ["東", "京", "東京"]  # no Japanese list: English's
    assert LexicalTokenizer(language="zh")("the 的 hat") == ["hat"]  # English's list too: not a Latin script
    assert LexicalTokenizer(language="fr")("un an, the end") == ["an", "the", "end"]  # French "an" is a year
    assert LexicalTokenizer(use_stopwords=False)("the 的") == ["the", "的"]
    assert LexicalTokenizer(language="de", stemmer="german")("Die Häuser und das Haus") == ["haus", "haus"]
    stemmed = LexicalTokenizer(language="en", stemmer="english")
    assert stemmed.counts("The runner runs; running 跑步") == {"runner": 1, "run": 2, "跑": 1, "步": 1, "跑步": 1}


def test_the_revision_names_every_choice():
    plain = LexicalTokenizer()
    assert plain.revision == (
        r"lowercase, \w+ with marks, unspaced runs unigrams+bigrams of graphemes, stopwords bm25s-en, stemmer none"
    )
    revisions = {
        LexicalTokenizer(name, language, stemmer, use_stopwords).revision
        for name in TOKENIZERS
        for language in ("en", "zh", "th")
        for stemmer in (None, "english")
        for use_stopwords in (True, False)
    }
    # th has no list of its own: it gets en's, so it tokenises (and is named) as en does
    assert len(revisions) == len(list(TOKENIZERS)) * 2 * 2 * 2 - len(list(TOKENIZERS)) * 2


def test_a_language_is_checked_with_a_hint():
    assert check_language("zh") == "zh" and check_language("und") == "und"
    with pytest.raises(BenchError, match="did you mean 'zh'"):
        check_language("cn")
    with pytest.raises(BenchError, match="ISO 639-1"):
        check_language(3)


def test_every_combining_mark_lies_where_the_word_pattern_looks_for_marks():
    planes = [range(p.start, p.stop) for p in words._MARK_PLANES]
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me"):
            assert any(cp in p for p in planes), hex(cp)


def test_jieba_loads_quietly_once():
    code = "from bench.text.words import segment; print(segment('机器人的电池', 'jieba'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "['机器人', '的', '电池']" and done.stderr == ""
    assert words.jieba_tokenizer() is words.jieba_tokenizer()


# Random Unicode of every category but surrogates (a str from a file never holds one), with extra
# weight on what tokenizers get wrong: combining marks, CJK, Thai, Devanagari, half-width kana.
_HARD = "机器人的电池ーｶﾞカ\u3099สวัสดีครับำหิन्दीमैंمُحَمَّدİΣßﬁ½²Ⓐ_\u0301\u200d\u200c\ufe0f \n，。"
ANY_TEXT = st.text(
    st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(_HARD)),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_no_tokenizer_raises_and_every_token_comes_from_the_text(text: str):
    low = text.lower()
    for name in TOKENIZERS:
        for token in segment(text, name):
            assert token and token == token.lower() and token in low
        tokenize = LexicalTokenizer(name, "zh")
        assert tokenize.counts(text) == Counter(tokenize(text))
    for token in content_terms(text):
        assert token and token in low


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("机器人的电池更换周期是多久東京スカイツリーは高いｶﾞ\u3099\ufe00。，"), max_size=40))
def test_jieba_words_are_pieces_of_the_text_and_keep_their_marks(text: str):
    bounds = {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}
    bounds |= {i for m in words._patterns()[0].finditer(text) for i in m.span()}  # a mark after 。 is a word
    for name in ("jieba", "jieba-search"):
        for token in segment(text, name):
            assert token and token in text
            starts = [i for i in range(len(text)) if text.startswith(token, i)]
            assert any(s in bounds and s + len(token) in bounds for s in starts), (name, token)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("สวัสดีครับฉันชอบกินข้าวผัดำ่้๊๋็์ ab\u0e31\u0e34"), max_size=40))
def test_a_thai_token_begins_and_ends_at_grapheme_boundaries(text: str):
    # where a cluster begins, and where a word does (a mark after a space is a word of its own)
    bounds = {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}
    bounds |= {i for m in words._patterns()[0].finditer(text) for i in m.span()}
    for name in ("unigrams", "bigrams", "unigrams+bigrams", "jieba"):
        for token in segment(text, name):
            starts = [i for i in range(len(text)) if text.startswith(token, i)]
            assert any(s in bounds and s + len(token) in bounds for s in starts), (name, token)


# Text without marks or unspaced scripts, Latin-heavy so that words are long and many.
_LATIN = st.characters(blacklist_categories=("Cs", "Mn", "Mc", "Me"))


@settings(max_examples=500, deadline=None)
@given(st.text(st.one_of(_LATIN, st.sampled_from("abcdeéÜß _-.,'1²½İ\n")), max_size=80))
def test_without_marks_or_unspaced_scripts_the_words_are_exactly_what_w_found(text: str):
    low = text.lower()
    if UNSPACED.search(low) or any(unicodedata.category(c).startswith("M") for c in low):
        return  # İ lowers to i and a combining dot: a mark, which is now kept in its word
    expected = re.findall(r"\w+", low)
    for name in TOKENIZERS:
        assert segment(text, name) == expected
    assert content_terms(text) == expected
    assert words.words(text) == expected
