"""The drafting checks ("copies its evidence", "near-duplicate") on Chinese: content terms are
character bigrams there, and the thresholds fire as often as they do in English."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.drafting.checks import _STOPWORDS, content_words, copies
from tests.drafting import copy_rates


def _english(text: str) -> list[str]:
    """The check's terms as they were before scripts were told apart: the reference for English."""
    words = re.findall(r"\w+", text.lower())
    return [w for w in words if w not in _STOPWORDS] or words


@given(st.text(alphabet=st.characters(codec="latin-1") | st.sampled_from(" .,?'-\n\u2019\u00e9\u00df")))
def test_text_without_unspaced_scripts_keeps_its_words(text):
    assert content_words(text) == _english(text)


def test_english_sentences_keep_their_words():
    assert content_words("How much paid time off do I build up in a year?") == [
        *("much", "paid", "time", "off", "build", "up", "year"),
    ]
    assert content_words("What is it?") == ["what", "is", "it"]  # nothing but stopwords: all of them


def test_chinese_is_compared_by_bigrams_without_its_question_words():
    # 什么 breaks the run as "what" leaves an English question: no bigram across it
    assert content_words("西巴丹岛以什么闻名世界？") == ["西巴", "巴丹", "丹岛", "岛以", "闻名", "名世", "世界"]
    # latin letters and digits inside a Chinese run stay words; a single character is a term
    assert content_words("《战国无双3》是由哪两个公司开发的？") == [
        *("战国", "国无", "无双", "3", "是由", "两个", "个公", "公司", "司开", "开发", "发的"),
    ]
    assert content_words("是谁？") == ["是"]
    assert content_words("什么？") == ["什么"]  # only a question word: it is all there is


def test_a_question_copied_from_its_sentence_is_caught_and_a_reworded_one_kept():
    sentence = "西巴丹岛是马来西亚沙巴州著名岛屿，以优美的自然景观及潜水环境闻名世界。"
    assert copies(sentence, sentence)
    assert copies("西巴丹岛是马来西亚沙巴州的什么岛屿？", sentence)  # the sentence with 著名 asked about
    assert not copies("去哪个岛可以看到漂亮的海底风景？", sentence)  # in other words
    # the words of the old check were whole clauses: the copy above shared none of them
    assert not set(_english("西巴丹岛是马来西亚沙巴州的什么岛屿？")) & set(_english(sentence))


def test_near_duplicates_of_a_chinese_question():
    question = "员工每年可以休多少天带薪年假？"
    terms = {"员工", "工每", "每年", "年可", "可以", "以休", "天带", "带薪", "薪年", "年假"}  # 多少 is a question word
    assert set(content_words(question)) == terms

    def alike(other: str) -> float:
        theirs = set(content_words(other))
        return len(terms & theirs) / len(terms | theirs)

    assert alike("请问员工每年可以休多少天带薪年假？") == pytest.approx(10 / 12)  # + 请问, 问员
    assert alike("员工每年可以休多少天的带薪年假？") == pytest.approx(9 / 12)  # 天带 → 天的, 的带
    assert alike("员工一年可以休多少天带薪年假？") == pytest.approx(8 / 12)  # 工每, 每年 → 工一, 一年
    assert alike("员工每年能休多少天带薪年假？") == pytest.approx(7 / 12)  # 年可, 可以, 以休 → 年能, 能休
    assert alike("新员工入职第一年有几天年假？") == pytest.approx(2 / 18)  # another question: 员工, 年假


DATA = pytest.mark.skipif(not copy_rates.CMRC.is_dir(), reason="no ../shared/datasets/cmrc2018-zh")


@DATA
def test_rates_on_questions_people_wrote_in_chinese():
    rates = copy_rates.chinese()
    assert rates["questions"] == 3219 and rates["different_pairs"] == 4878
    assert rates["verbatim"] == 1.0
    assert 0.95 <= rates["cloze"] <= 1.0  # English (SQuAD): 0.986
    assert 0.10 <= rates["human"] <= 0.25  # English: 0.134
    assert 0.55 <= rates["one_word_less"] <= 0.80  # English at 0.8: 0.691
    assert rates["different"] <= 0.005  # English: 0.0053


def test_a_line_break_inside_chinese_text_is_no_space():
    from bench.text.scripts import collapse_spaces

    assert collapse_spaces("员工每年\n可以休多少天？\n 下一句") == "员工每年可以休多少天？下一句"
    assert collapse_spaces("「引用」\n文字，\t续") == "「引用」文字，续"  # CJK punctuation is CJK text
    assert collapse_spaces(" iPhone\n15 是\n什么 ") == "iPhone 15 是什么"  # a space beside a Latin word stays
    assert collapse_spaces("한국어 문장\n입니다") == "한국어 문장 입니다"  # Korean is spaced
    assert collapse_spaces("ภาษา ไทย") == "ภาษา ไทย"  # a Thai space ends a phrase
    assert collapse_spaces("Two  words,\nwrapped.") == "Two words, wrapped."
