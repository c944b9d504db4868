"""Page 1 of report.pdf says which languages the corpus and the questions are in, and the run's
warnings about models that do not read them."""

from __future__ import annotations

import io
from pathlib import Path

import pdfplumber
from rich.console import Console

from bench.config import load_config
from bench.core.summary import Manifest
from bench.report.pdf_decision import LANGUAGE_WARNINGS, _languages
from bench.run.shootout import run_shootout
from tests.run.test_run_languages import _chinese_project


def _texts(manifest: Manifest) -> list[str]:
    return [p.text for p in _languages(manifest)]


def test_the_line_and_the_warnings() -> None:
    languages = {
        "corpus": {"main": "zh", "shares": {"zh": 0.92, "en": 0.08}},
        "questions": {"main": "zh", "shares": {"zh": 1.0}},
        "warnings": ["minilm reads English only", "static too."],
    }
    assert _texts(Manifest(languages=languages)) == [
        "Corpus: Chinese 92%, English 8% · questions: Chinese.",
        "warning: minilm reads English only.",
        "warning: static too.",
    ]


def test_more_warnings_than_the_page_holds_are_counted() -> None:
    warnings = [f"w{i}" for i in range(LANGUAGE_WARNINGS + 2)]
    texts = _texts(Manifest(languages={"corpus": {"main": "en", "shares": {"en": 1.0}}, "warnings": warnings}))
    assert texts[0] == "Corpus: English."
    assert texts[1:-1] == [f"warning: w{i}." for i in range(LANGUAGE_WARNINGS)]
    assert texts[-1] == "2 more in manifest.json (languages)."


def test_a_run_without_languages_shows_nothing() -> None:
    assert _texts(Manifest()) == []
    assert _texts(Manifest(languages={"questions": {}})) == []


def test_page_one_of_a_chinese_run(tmp_path: Path) -> None:
    config = load_config(_chinese_project(tmp_path))
    run = run_shootout(config, Console(file=io.StringIO()), use_cache=False, reports=True)
    with pdfplumber.open(run.path / "report.pdf") as pdf:
        page = " ".join((pdf.pages[0].extract_text() or "").split())
    assert "Corpus: Chinese · questions: Chinese." in page
    assert "warning: the corpus is Chinese, which hash does not read" in page
    assert "no dense model in the grid reads Chinese" in page
