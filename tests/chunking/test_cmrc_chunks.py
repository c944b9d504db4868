"""On real Chinese text (CMRC 2018's Wikipedia passages, when present): no chunker cuts a word of
jieba's or a grapheme cluster, and a token window of 256 holds about 210 characters."""

from __future__ import annotations

import pytest

from tests.chunking.cmrc_cuts import CMRC, CONFIGS, cuts, passages


@pytest.fixture(scope="module")
def docs() -> list[tuple[str, str]]:
    if not CMRC.is_dir():
        pytest.skip(f"{CMRC} not present")
    return passages(150)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_chunk_edge_cuts_a_chinese_word(docs: list[tuple[str, str]], name: str) -> None:
    got = cuts(CONFIGS[name], docs)
    assert got["cut_grapheme"] == 0
    assert got["cut_word"] == 0, f"{got['cut_word']:.1%} of {name}'s chunks cut a word"
    assert 0.75 < got["chars_per_token"] < 0.95  # a Chinese character is ~1.2 cl100k tokens
