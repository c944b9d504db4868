"""Reports in every script: report.pdf, the plots and the terminal tables set Chinese, Japanese, Korean,
Thai, Devanagari, Arabic and Cyrillic in fallback fonts after DejaVu Sans, measure labels in display
width, and draw a character no font has as U+FFFD with one warning, never a traceback."""

from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from matplotlib import rc_context
from matplotlib.backends.backend_pdf import PdfPages
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape

from bench.core.summary import Manifest
from bench.report import fonts, pdf_text, plots
from bench.report.fitted import FittedTable
from bench.report.pdf import write_pdf
from bench.report.pdf_layout import PAGE, Block, Para, Section, Table, Terms, draw, paginate
from bench.report.plot_base import new_figure, short_label
from bench.report.terminal import head_to_head_table
from bench.text.scripts import display_width, grapheme_starts
from tests.helpers import QUESTIONS, finished_runs, run_cli, write_project
from tests.report.test_pdf import _stats, _summary

# One question per script, each before the English it asks, and a tag in that script.
FOREIGN = {
    "q1": ("员工每年有多少天带薪假期？", "中文"),
    "q2": ("未使用の休暇はいつまで繰り越せますか？", "日本語"),
    "q3": ("엔지니어 노트북의 메모리는 얼마입니까?", "한국어"),
    "q4": ("การสำรองข้อมูลเก็บไว้นานเท่าไร", "ภาษาไทย"),
    "q5": ("पेज को कितनी जल्दी स्वीकार करना होगा?", "हिन्दी"),
    "q6": ("متى يتم تسليم المناوبة؟ Когда меняется дежурство?", "русский"),
}
NO_FONT = "\U000f0000"  # a private-use character: no font has it
SCRIPTS = "中文日本語のカタカナ한국어ภาษาไทยहिन्दीالعربيةРусский😀👍🏽，。「」（）"


def _has_fonts(*families: str) -> bool:
    return all(fonts.available(f, True) for f in families)


def _clear() -> None:
    fonts.available.cache_clear()
    fonts.font_of.cache_clear()
    pdf_text._advance.cache_clear()


@pytest.fixture
def dejavu_only(monkeypatch):
    """As on a machine where no font but matplotlib's own is installed."""
    monkeypatch.setattr(fonts, "CHAIN", fonts.CHAIN[:1])
    _clear()
    yield
    monkeypatch.undo()
    _clear()


# --- measuring and wrapping --------------------------------------------------------------------------------


def test_latin_text_is_measured_in_dejavu_sans_as_before():
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    font = FT2Font(font_manager.findfont("DejaVu Sans"))
    font.set_size(100, 72)
    text = "Recall@5 über Ωμέγα и Ёж"
    expected = sum(font.load_char(ord(ch)).linearHoriAdvance / 65536 / 100 for ch in text) * 9
    assert pdf_text.width(text, 9) == pytest.approx(expected)
    assert fonts.needed(text) is None  # drawn exactly as before: no fallback fonts asked for


def test_each_character_goes_to_the_first_font_that_has_it():
    if not _has_fonts("WenQuanYi Micro Hei", "Noto Sans Thai", "Noto Sans Devanagari"):
        pytest.skip("fonts-wqy-microhei and fonts-noto-core are not installed")
    assert fonts.font_of("A") == fonts.font_of("Я") == fonts.font_of("ع") == "DejaVu Sans"
    assert fonts.font_of("中") == fonts.font_of("，") == fonts.font_of("한") == "WenQuanYi Micro Hei"
    assert fonts.font_of("ก") == "Noto Sans Thai" and fonts.font_of("ह") == "Noto Sans Devanagari"
    assert fonts.font_of(NO_FONT) is None
    assert fonts.needed("a中ก") == ["DejaVu Sans", "WenQuanYi Micro Hei", "Noto Sans Thai"]
    assert "Noto Sans CJK SC" not in fonts.families(pdf=True)  # CFF outlines: not embeddable as TrueType
    if fonts.available("Noto Sans CJK SC", False):
        assert fonts.font_of("中", pdf=False) == "Noto Sans CJK SC"  # the plots are PNG: any outline will do


def test_chinese_wraps_between_characters_never_before_a_closing_mark():
    if not _has_fonts("WenQuanYi Micro Hei"):
        pytest.skip("fonts-wqy-microhei is not installed")
    # every character here is one em wide: 10 points at size 10, so four fit in 45 points, but "四，"
    # go together and the line before them holds three
    assert pdf_text.wrap("一二三四，五六七八。", 45, 10) == ["一二三", "四，五六", "七八。"]
    assert pdf_text.wrap("「日本語」です", 35, 10) == ["「日本", "語」で", "す"]  # "「" and "」" keep their neighbours
    assert pdf_text.wrap("two words", 1000, 10) == ["two words"]


def test_a_cell_is_cut_between_characters_as_a_reader_sees_them():
    thai = "การสำรองข้อมูลเก็บไว้นานเท่าไร"
    for limit in range(5, 90, 3):
        cut = pdf_text.clip(thai, limit, 10)
        assert pdf_text.width(cut, 10) <= limit + 1e-9 or cut == "…"
        if cut != thai:
            kept = cut.removesuffix("…")
            assert len(kept) in grapheme_starts(thai) + [len(thai)]  # never a vowel mark without its letter


# --- every script, drawn: a property test ------------------------------------------------------------------

TEXT = st.text(
    st.one_of(st.characters(), st.sampled_from(list(SCRIPTS + NO_FONT + "\u0301\u200d\u200b\ufe0f\u200f\ud800"))),
    max_size=60,
)


def _visible(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXT, min_size=1, max_size=4), size=st.sampled_from([7.5, 9.0]), limit=st.integers(20, 400))
def test_any_text_is_measured_wrapped_drawn_and_saved_without_error(texts, size, limit):
    for text in texts:
        lines = pdf_text.wrap(text, limit, size)
        for line in lines:
            assert pdf_text.width(line, size) <= limit + 1e-6 or len(grapheme_starts(line)) <= 1
        assert _visible("".join(lines)) == _visible(text)  # nothing lost but spaces
        assert pdf_text.width(pdf_text.clip(text, limit, size), size) <= max(limit, pdf_text.width("…", size)) + 1e-6
    blocks: list[Block] = [
        Para(" ".join(texts)),
        Table(["candidate", *texts], [[t, *texts] for t in texts], clip=frozenset({1})),
        Terms([(t, t) for t in texts]),
    ]
    figures = draw(paginate([Section(texts[0], blocks)]), texts[-1])
    with rc_context({"pdf.fonttype": 42}), PdfPages(io.BytesIO()) as pdf:
        for fig in figures:
            fig.set_size_inches(*PAGE)
            pdf.savefig(fig)


@settings(max_examples=40, deadline=None)
@given(key=TEXT.filter(lambda t: t.strip()), value=TEXT, width=st.integers(30, 120))
@example(key="0" * 19, value="", width=30)  # the id and one figure column are 31 columns with their rules
def test_any_text_fits_the_terminal_tables(key, value, width):
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    table = FittedTable(title=escape(value))  # as every caller does: cells and titles are rich markup
    table.add_column("candidate", key=True)
    table.add_column("question", justify="left")
    table.add_column("mrr@5")
    table.add_row(escape(key), escape(value), "0.500")
    console.print(table)
    h2h = {"a": key, "b": value, "n_questions": 1, "advice": value, "metrics": {}}
    h2h["first_relevant_rank"] = {"wins": 1, "ties": 0, "losses": 0}
    h2h["disagreements"] = [{"question_id": key, "rank_a": 1, "rank_b": None, "question": value}]
    console.print(head_to_head_table(h2h))
    assert "0.500" in console.export_text()  # a figure is never cut


def _column_text(out: str, n: int) -> list[str]:
    """The text of column ``n`` in each table of ``out``, its folded lines joined."""
    tables, rows = [], []
    for line in out.splitlines():
        if line.startswith("│"):
            rows.append(line.split("│")[n + 1].strip())
        elif line.startswith("└"):
            tables.append("".join(rows))
            rows = []
    return tables


def test_an_id_wider_than_the_line_folds_and_its_figure_stays_whole():
    # 19 columns of id, 5 of figure and 7 of rules: one more than the line. Squeezed alike, the
    # columns would cut the id to "0000000000000000…", the header to "questi" "on" and 0.500 to "0.50" "0".
    key = "0" * 19
    for width, wide in ((30, key), (30, "中" * 30), (31, key), (40, "bge-m3/rec256/flat/" * 3)):
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        table = FittedTable()
        table.add_column("candidate", key=True)
        table.add_column("question", justify="left")
        table.add_column("mrr@5")
        table.add_row(wide, "", "0.500")
        console.print(table)
        out = console.export_text()
        assert all(cell_len(line) <= width for line in out.splitlines())
        assert "│ 0.500 │" in out and "┃ question ┃" in out and "mrr@5" in out  # figures and headers whole
        assert _column_text(out, 0) == [wide, wide]  # the id in both tables, folded, no character lost
        if width == 31:  # one column more: the id fits beside its figure, on one line
            assert f"│ {key} │ 0.500 │" in out


def test_a_key_stays_whole_beside_a_long_line_of_chinese():
    console = Console(width=60, record=True, file=io.StringIO(), color_system=None)
    table = FittedTable()
    table.add_column("candidate", key=True)
    table.add_column("question", justify="left")
    table.add_row(
        "bge-m3/rec256/flat", "在中国的历史上，哪一个朝代的统治时间最长，并且对后世的政治制度和文化产生了深远的影响？"
    )
    console.print(table)
    out = console.export_text()
    assert "bge-m3/rec256/flat" in out and "影响？" in out  # the id whole, the question folded, not cut
    assert all(cell_len(line) <= 60 for line in out.splitlines())


# --- plot labels -------------------------------------------------------------------------------------------


def test_a_long_chinese_question_is_shortened_by_display_width():
    question = (
        "在中国的历史上，哪一个朝代的统治时间最长，并且对后世的政治制度和文化产生了最为深远的影响呢？请详细说明。"
    )
    label = short_label(question, 60)
    assert label == question[:29] + "…"  # 29 characters two columns wide, and the "…"
    assert display_width(label) <= 60


@given(st.lists(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), min_size=1, max_size=20))
def test_an_english_label_is_cut_after_a_word_as_before(words):
    text = " ".join(words)
    assert short_label(text, 60) == textwrap.shorten(text, 60, placeholder="…")


def test_a_plot_says_which_characters_no_font_had():
    fig, body = new_figure(f"q{NO_FONT}1", "caption")
    body.subplots().set_title("Ωμέγα")
    png = plots.png_bytes(fig)
    assert plots.unset(png) == {NO_FONT}
    english, _ = new_figure("plain title")
    assert plots.unset(plots.png_bytes(english)) == set()
    assert b"bench unset" not in plots.png_bytes(english)  # English plots are the bytes they always were


# --- one warning, and U+FFFD ------------------------------------------------------------------------------


def _write(tmp_path: Path, run_id: str, plot_title: str = "") -> Path:
    summary = _summary()
    stats = _stats(summary, set())
    charts = {}
    if plot_title:
        fig, _ = new_figure(plot_title)
        charts["rank_matrix"] = (plot_title, plots.png_bytes(fig))
    path = tmp_path / "report.pdf"
    write_pdf(path, summary, Manifest(run_id=run_id), charts, stats)
    return path


def _pdftotext(path: Path) -> str:
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout


def test_a_character_no_font_has_is_a_replacement_and_one_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="bench.report.pdf"):
        path = _write(tmp_path, f"r1-{NO_FONT}", plot_title="chart \U000f0001")
    warnings = [r.getMessage() for r in caplog.records if r.name == "bench.report.pdf"]
    assert len(warnings) == 1, warnings  # the title, every footer and the chart: one warning
    assert "U+F0000" in warnings[0] and "U+F0001" in warnings[0] and "report.pdf and plots/" in warnings[0]
    text = _pdftotext(path)
    assert "r1-\ufffd" in text and NO_FONT not in text


def test_without_any_fallback_font_the_report_is_written_with_replacements(tmp_path, caplog, dejavu_only):
    with caplog.at_level(logging.WARNING, logger="bench.report.pdf"):
        path = _write(tmp_path, "r1-中文-ภาษา-Русский")
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "bench.report.pdf"]
    assert "中" in warning and "ภ" in warning and "fonts-noto-cjk" in warning and "fonts-noto-core" in warning
    text = _pdftotext(path)
    assert "r1-\ufffd\ufffd-" in text and "Русский" in text  # DejaVu Sans still sets Cyrillic


def test_an_english_report_warns_of_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="bench.report.pdf"):
        _write(tmp_path, "r1", plot_title="chart")
    assert not [r for r in caplog.records if r.name == "bench.report.pdf"]


# --- a whole run in seven scripts, read back ---------------------------------------------------------------


@pytest.fixture(scope="module")
def multilingual_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scripts")
    config = write_project(root)
    lines = []
    for qid, question, doc, quote, grade in QUESTIONS:
        text, tag = FOREIGN[qid]
        evidence = [{"doc": doc, "quote": quote, "grade": grade}]
        lines.append(json.dumps({"id": qid, "question": f"{text} {question}", "evidence": evidence, "tags": [tag]}))
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("run", str(config), reports=True)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "warning: no installed font" not in result.stderr
    [folder] = finished_runs(root / "results")
    return folder


def test_a_run_in_seven_scripts_reads_back_from_its_pdf(multilingual_run: Path):
    if not _has_fonts("WenQuanYi Micro Hei", "Noto Sans Thai"):
        pytest.skip("fonts-wqy-microhei and fonts-noto-core are not installed (make fonts)")
    text = _pdftotext(multilingual_run / "report.pdf")
    for tag in ("中文", "日本語", "한국어", "ภาษาไทย", "русский"):  # the per-tag page names every tag
        assert tag in text, tag
    assert "\ufffd" not in text
    for png in (multilingual_run / "plots").glob("*.png"):
        assert plots.unset(png.read_bytes()) == set(), png.name
