"""How fast bench turns documents into text, per format, and what the extraction cache saves.

    .venv/bin/python benchmarks/extraction_speed.py [--pages 200] [--html 200] [--office 30] [--repeats 1]

In one process, on files generated into a temporary folder (tests/inputs' fixture builders):

- PDF: ``write_long``'s text-only PDF of --pages pages, in pages per second;
- HTML: --html article pages (the test fixture's page, boilerplate and all, each with a paragraph
  of its own), in documents per second;
- DOCX and PPTX: --office files of each (the fixtures, each with a paragraph or slide of its own),
  in documents per second (and slides per second);
- a corpus folder holding all of them, loaded as ``load_corpus`` loads a folder (``load_folder``
  with an ``ExtractionCache`` on a fresh cache folder), then loaded again on that cache: the warm
  load must extract nothing. Both are also timed with every text read back once (what the corpus
  fingerprint of a run does).

Each extractor runs once on a small file before it is timed, so the libraries' import time is not
counted; throughput is the best of --repeats passes, each calling the extractor on the bytes
(no cache). Prints a table per part and the ratios.

    .venv/bin/python benchmarks/extraction_speed.py --folder ../shared/datasets/filings/pdfs [--workers N]
        [--files N] [--first-pages N] [--repeats N] [--baseline REV]

Real documents, today's extractors against a baseline's, side by side in one run. The baseline is
the code of git revision --baseline (default: the last commit whose ``pdf.py`` read PDFs with
pdfplumber, before PDFium), checked out into a temporary ``git worktree``; each load runs in a
subprocess of its own on its tree's code and a cold cache of its own: in one process
(``[documents] workers = 1``) and in worker processes (--workers, default one per core). Pages (or
documents) per second are printed for both codes and both loads, with the speed-up of today's code
over the baseline's (best of --repeats, all four loads alternated, so that others' load on a shared
machine weighs on all alike). Today's two loads must give the same documents, left-out files,
cache keys and texts, byte for byte (PDF extraction is deterministic); the baseline's texts are
compared too (pdfminer ordered tied text boxes by memory address there). --files takes the first
N files, --first-pages cuts each PDF to its first N pages (with pypdf, into a temporary folder), so
a run fits in a few minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.extraction_workers import cores
from bench.inputs.folder import load_folder
from bench.inputs.formats import Extracted, Limits, for_suffix
from tests.inputs import make_office, make_pdf


def _html_pages(n: int, folder: Path) -> list[bytes]:
    """The fixture article ``n`` times, each with a paragraph of its own, so no two pages share bytes
    (the cache keys on them)."""
    page = make_office.write_html_article(folder / "article.html").read_bytes()
    own = "<p>Article {i} measures chunk size number {i} against recall on corpus {c}.</p></article>"
    return [page.replace(b"</article>", own.format(i=i, c=i % 7).encode(), 1) for i in range(n)]


def _docx(i: int, folder: Path) -> bytes:
    import docx

    path = make_office.write_docx(folder / f"review-{i}.docx")
    document = docx.Document(str(path))
    document.add_paragraph(f"Review {i} adds a paragraph of its own about corpus {i}.")
    document.save(str(path))
    return path.read_bytes()


def _pptx(i: int, folder: Path) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    path = make_office.write_pptx(folder / f"deck-{i}.pptx")
    deck = Presentation(str(path))
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # Blank
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1)).text_frame.text = f"Deck {i}: its own slide."
    deck.save(str(path))
    return path.read_bytes()


def _best(repeats: int, run: Callable[[], list[Extracted]]) -> tuple[float, list[Extracted]]:
    """The best time of ``repeats`` calls, and what the last one returned."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
    return min(times), result


def _extract_all(suffix: str, files: list[bytes]) -> list[Extracted]:
    extractor = for_suffix(suffix)
    assert extractor is not None
    return [extractor.extract(data, Limits()) for data in files]


def _warm_up(folder: Path) -> None:
    """One small file per format, so that first-call imports are not timed."""
    small = {
        ".pdf": make_pdf.report_bytes(),
        ".html": make_office.write_html_article(folder / "warm.html").read_bytes(),
        ".docx": make_office.write_docx(folder / "warm.docx").read_bytes(),
        ".pptx": make_office.write_pptx(folder / "warm.pptx").read_bytes(),
    }
    for suffix, data in small.items():
        _extract_all(suffix, [data])


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def _load(root: Path, cache_dir: Path) -> tuple[float, float, int, int]:
    """Seconds to load the folder, seconds to read every text back, files extracted, cache entries."""
    cache = ExtractionCache(cache_dir)
    t0 = time.perf_counter()
    corpus = load_folder(root, cache, limits=Limits(workers=1))  # against the one-process timings above
    loaded = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = corpus.fingerprint
    read = time.perf_counter() - t0
    return loaded, read, cache.extracted, len(list(cache_dir.glob("*.json")))


def _copy(source: Path, target: Path, files: int | None, first_pages: int | None) -> None:
    """The first ``files`` files of ``source`` into ``target``, each PDF cut to its ``first_pages``."""
    import pypdf

    target.mkdir()
    for file in sorted(f for f in source.iterdir() if f.is_file() and not f.name.startswith("."))[:files]:
        if first_pages is None or file.suffix.lower() != ".pdf":
            (target / file.name).write_bytes(file.read_bytes())
            continue
        reader, writer = pypdf.PdfReader(file), pypdf.PdfWriter()
        for page in reader.pages[:first_pages]:
            writer.add_page(page)
        writer.write(target / file.name)


_LOAD = """
import hashlib, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench.inputs.extraction_cache import ExtractionCache
from bench.inputs.folder import load_folder
from bench.inputs.formats import Limits
load_folder(Path(sys.argv[5]), ExtractionCache(Path(sys.argv[5]).parent / "warm-cache"))  # imports untimed
cache_dir = Path(sys.argv[3])
cache = ExtractionCache(cache_dir)
t0 = time.perf_counter()
corpus = load_folder(Path(sys.argv[2]), cache, limits=Limits(workers=int(sys.argv[4])))
seconds = time.perf_counter() - t0
docs = [[d.id, hashlib.sha256(d.text.encode()).hexdigest(), len(d.pages)] for d in corpus.documents]
print(json.dumps({"seconds": seconds, "docs": docs, "left_out": [str(x) for x in corpus.left_out],
                  "cache": sorted(p.name for p in cache_dir.glob("*.json"))}))
"""


def _load_in(tree: Path, root: Path, cache_dir: Path, workers: int) -> dict:
    """A cold load of ``root`` by the code in ``tree``, in a subprocess: seconds, documents (id,
    text sha256, pages), left-out files and cache entries."""
    import json
    import subprocess

    # a small PDF first, so that the libraries' imports are not the timed load's to pay
    warm = cache_dir.parent / "warm"
    warm.mkdir(parents=True, exist_ok=True)
    (warm / "warm.pdf").write_bytes(make_pdf.report_bytes())
    args = [sys.executable, "-c", _LOAD, str(tree), str(root), str(cache_dir), str(workers), str(warm)]
    done = subprocess.run(args, capture_output=True, text=True, check=False, cwd=tree)
    if done.returncode:
        raise SystemExit(f"the load in {tree} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _baseline_revision() -> str:
    """The commit before pdf.py first read PDFs with PDFium."""
    import subprocess

    here = Path(__file__).resolve().parents[1]
    path = "bench/inputs/formats/pdf.py"
    log = subprocess.run(
        ["git", "log", "--format=%H", "--", path], capture_output=True, text=True, cwd=here, check=True
    )
    newer = None
    for commit in log.stdout.split():
        source = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, text=True, cwd=here)
        if source.returncode == 0 and "pdf_engine" not in source.stdout:
            if newer is None:
                break
            return f"{newer}^"
        newer = commit
    raise SystemExit("no baseline found: pass --baseline REV")


def real_documents(
    folder: Path, workers: int, files: int | None, first_pages: int | None, repeats: int, baseline: str | None
) -> None:
    """The baseline's and today's extraction of a real folder, in one process and in workers, cold
    cache each time, best of ``repeats``."""
    import subprocess

    here = Path(__file__).resolve().parents[1]
    revision = subprocess.run(
        ["git", "rev-parse", "--short", baseline or _baseline_revision()],
        capture_output=True,
        text=True,
        cwd=here,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-extraction-speed-") as tmp:
        root = folder.resolve()
        if files is not None or first_pages is not None:
            root = Path(tmp) / "corpus"
            _copy(folder, root, files, first_pages)
        old_tree = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), revision], cwd=here, check=True)
        try:
            runs: dict[tuple[str, int], dict] = {}
            for r in range(repeats):  # alternated, so that others' load weighs on all alike; best of each
                for code, tree in (("baseline", old_tree), ("today", here)):
                    for n in (1, workers):
                        run = _load_in(tree, root, Path(tmp) / f"{code}-{n}-{r}" / "extracted", n)
                        if (code, n) not in runs or run["seconds"] < runs[code, n]["seconds"]:
                            runs[code, n] = run
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=here, check=False)
        _print_side_by_side(root, revision, workers, runs)


def _print_side_by_side(root: Path, revision: str, workers: int, runs: dict[tuple[str, int], dict]) -> None:
    first = runs["today", 1]
    pages, docs = sum(d[2] for d in first["docs"]), len(first["docs"])
    unit, count = ("pages", pages) if pages else ("documents", docs)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{root}: {docs} documents, {pages} pages; {cores()} cores, load average {load}")
    print(f"baseline: {revision} (in a git worktree); today: the working tree\n")
    rows = []
    for n, name in ((1, "one process"), (workers, "worker processes")):
        old, new = runs["baseline", n]["seconds"], runs["today", n]["seconds"]
        rows.append(
            (name, f"{n}", f"{old:.1f}", f"{count / old:.2f}", f"{new:.1f}", f"{count / new:.2f}", f"{old / new:.2f}×")
        )
    header = ("cold load", "workers", "baseline s", f"{unit}/s", "today s", f"{unit}/s", "speed-up")
    print(_table(header, rows))
    best_old = min(runs["baseline", n]["seconds"] for n in (1, workers))
    best_new = min(runs["today", n]["seconds"] for n in (1, workers))
    speed_up = best_old / best_new
    print(f"\nbest of each: today {count / best_new:.2f} {unit}/s against {count / best_old:.2f}: {speed_up:.2f}×")
    a, b = runs["today", 1], runs["today", workers]
    if (a["docs"], a["left_out"], a["cache"]) != (b["docs"], b["left_out"], b["cache"]):
        print("FAIL: today's two loads differ in documents, texts, left-out files or cache keys")
        sys.exit(1)
    print(
        "today: one process and workers give the same documents, texts (byte for byte), left-out files and cache keys"
    )
    old_docs = {d[0]: d[1] for d in runs["baseline", 1]["docs"]}
    differ = sum(1 for d in a["docs"] if old_docs.get(d[0]) != d[1])
    print(f"texts that differ from the baseline's: {differ} of {docs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=make_pdf.LONG_PAGES, help="pages of the long PDF")
    parser.add_argument("--html", type=int, default=200, help="HTML pages")
    parser.add_argument("--office", type=int, default=30, help="DOCX files, and as many PPTX files")
    parser.add_argument("--repeats", type=int, default=1, help="passes of each throughput timing (best is kept)")
    parser.add_argument("--folder", type=Path, help="real documents: the baseline's code against today's")
    parser.add_argument("--baseline", help="with --folder: the git revision to compare with (default: before PDFium)")
    parser.add_argument("--workers", type=int, default=cores(), help="worker processes of the parallel load")
    parser.add_argument("--files", type=int, help="with --folder: only its first N files")
    parser.add_argument("--first-pages", type=int, help="with --folder: each PDF cut to its first N pages")
    args = parser.parse_args()
    if args.folder is not None:
        real_documents(args.folder, args.workers, args.files, args.first_pages, args.repeats, args.baseline)
        return

    with tempfile.TemporaryDirectory(prefix="bench-extraction-speed-") as tmp:
        work, corpus = Path(tmp) / "work", Path(tmp) / "corpus"
        work.mkdir()
        corpus.mkdir()
        t0 = time.perf_counter()
        pdf = make_pdf.write_long(corpus / "long.pdf", pages=args.pages).read_bytes()
        html = _html_pages(args.html, work)
        docx = [_docx(i, work) for i in range(args.office)]
        pptx = [_pptx(i, work) for i in range(args.office)]
        for suffix, files in ((".html", html), (".docx", docx), (".pptx", pptx)):
            for i, data in enumerate(files):
                (corpus / f"{suffix[1:]}-{i:04d}{suffix}").write_bytes(data)
        print(f"generated {1 + len(html) + len(docx) + len(pptx)} files in {time.perf_counter() - t0:.1f} s")
        _warm_up(work)

        # throughput: the extractor on the bytes, no cache
        sets = {"pdf": [pdf], "html": html, "docx": docx, "pptx": pptx}
        seconds: dict[str, float] = {}
        rows: list[tuple[str, ...]] = []
        for name, files in sets.items():
            seconds[name], extracted = _best(args.repeats, lambda n=name, f=files: _extract_all(f".{n}", f))  # type: ignore[misc]
            if name == "pdf":
                assert len(extracted[0].pages) == args.pages
                assert make_pdf.long_sentence(args.pages, 39) in extracted[0].text
            pages = sum(len(x.pages) for x in extracted)
            per_page = f"{pages / seconds[name]:.1f}" if pages else "–"
            rate = len(files) / seconds[name]
            rows.append((name, f"{len(files)}", f"{pages or '–'}", f"{seconds[name]:.2f}", f"{rate:.2f}", per_page))
        print()
        print(_table(("format", "files", "pages", "seconds", "files/s", "pages/s"), rows))
        ms = {name: 1000 * seconds[name] / len(files) for name, files in sets.items()}
        pdf_page = 1000 * seconds["pdf"] / args.pages
        print(
            f"\nper PDF page {pdf_page:.1f} ms, per HTML page {ms['html']:.1f} ms, per DOCX {ms['docx']:.1f} ms, "
            f"per PPTX {ms['pptx']:.1f} ms: an HTML page extracts {pdf_page / ms['html']:.1f}× as fast as a PDF "
            f"page, a PPTX {ms['docx'] / ms['pptx']:.1f}× as fast as a DOCX"
        )

        # the folder, cold then warm on the same cache
        cache_dir = Path(tmp) / "cache" / "extracted"
        cold, warm = _load(corpus, cache_dir), _load(corpus, cache_dir)
        print()
        header = ("corpus load", "load s", "read-back s", "extracted", "cache entries")
        loads = [(w, f"{x[0]:.2f}", f"{x[1]:.2f}", f"{x[2]}", f"{x[3]}") for w, x in (("cold", cold), ("warm", warm))]
        print(_table(header, loads))
        extraction = sum(seconds.values())
        print(
            f"\ncold: {extraction:.2f} s of it extraction (the table above), {cold[0] - extraction:.2f} s reading, "
            f"hashing and writing the cache; warm load {cold[0] / warm[0]:.0f}× faster than cold "
            f"({(cold[0] + cold[1]) / (warm[0] + warm[1]):.0f}× with every text read back)"
        )
        total = sum(len(f) for f in sets.values())
        ok = cold[2] == total and warm[2] == 0 and warm[3] == cold[3]
        print(f"cold extracted {cold[2]} of {total} files, warm {warm[2]}: {'PASS' if ok else 'FAIL'}")
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
