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
        [--files N] [--first-pages N] [--repeats N]

Real documents: the folder is loaded as ``bench corpus stats`` loads it, once in this process
(``[documents] workers = 1``) and once in worker processes (--workers, default one per core), each
on a cold cache of its own, and pages (or documents) per second are printed side by side with the
speed-up (best of --repeats, serial and parallel alternated, so that others' load on a shared
machine weighs on both alike). The two reads must give the same documents, left-out files and
cache keys; texts that differ are named (on real PDFs pdfminer's layout grouping can order text
boxes differently in any two processes, serial or not). --files takes the first N files,
--first-pages cuts each PDF to its first N pages (with pypdf, into a temporary folder), so a run
fits in a few minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
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
    return [extractor.extract(data) for data in files]


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


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
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


def _timed_load(root: Path, cache_dir: Path, workers: int) -> tuple[float, list[tuple], dict[str, bytes], int]:
    """Seconds to load ``root`` on a cold cache, what it read, the cache's files, and pages."""
    cache = ExtractionCache(cache_dir)
    t0 = time.perf_counter()
    corpus = load_folder(root, cache, limits=Limits(workers=workers))
    seconds = time.perf_counter() - t0
    docs = [(d.id, d.text, d.pages) for d in corpus.documents]
    entries = {p.name: p.read_bytes() for p in sorted(cache_dir.glob("*.json"))}
    return seconds, [*docs, *corpus.left_out], entries, sum(len(d[2]) for d in docs)


def docs_of(read: list) -> list[tuple]:
    return [x for x in read if isinstance(x, tuple)]


def real_documents(folder: Path, workers: int, files: int | None, first_pages: int | None, repeats: int) -> None:
    """Serial against parallel extraction of a real folder, cold cache each time, best of ``repeats``."""
    with tempfile.TemporaryDirectory(prefix="bench-extraction-speed-") as tmp:
        root = folder
        if files is not None or first_pages is not None:
            root = Path(tmp) / "corpus"
            _copy(folder, root, files, first_pages)
        _warm_up(Path(tmp))  # the libraries' imports are not the serial run's to pay
        runs: dict[str, tuple] = {}
        for r in range(repeats):  # alternated, so that others' load weighs on both alike; best of each
            for name, n in (("serial", 1), ("parallel", workers)):
                run = _timed_load(root, Path(tmp) / f"{name}-{r}" / "extracted", n)
                if name not in runs or run[0] < runs[name][0]:
                    runs[name] = run
        (serial, s_read, s_cache, pages), (parallel, p_read, p_cache, _) = runs["serial"], runs["parallel"]
        docs = sum(1 for x in s_read if isinstance(x, tuple))
        unit, count = ("pages", pages) if pages else ("documents", docs)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{root}: {docs} documents, {pages} pages; {cores()} cores, load average {load}\n")
        rows = [
            ("one process", "1", f"{serial:.1f}", f"{count / serial:.2f}"),
            ("worker processes", f"{workers}", f"{parallel:.1f}", f"{count / parallel:.2f}"),
        ]
        print(_table(("cold load", "workers", "seconds", f"{unit}/s"), rows))
        print(f"\nspeed-up {serial / parallel:.2f}× with {workers} workers")
        shape = [x[0] if isinstance(x, tuple) else x for x in s_read], list(s_cache)
        if shape != ([x[0] if isinstance(x, tuple) else x for x in p_read], list(p_cache)):
            print("FAIL: the two reads have different documents, left-out files or cache keys")
            sys.exit(1)
        differ = [a[0] for a, b in zip(s_read, p_read, strict=True) if a != b]
        print(
            f"same documents, left-out files and reasons; texts byte for byte: {len(docs_of(s_read)) - len(differ)} "
            f"of {len(docs_of(s_read))}" + (f" (differ: {', '.join(differ)})" if differ else "")
        )
        if differ:  # pdfminer breaks ties in its layout grouping by memory address, in any two processes
            print(
                "pdfminer groups text boxes whose distances tie in an order set by memory addresses, so a PDF's text "
                "can differ between any two processes, serial or parallel alike"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=make_pdf.LONG_PAGES, help="pages of the long PDF")
    parser.add_argument("--html", type=int, default=200, help="HTML pages")
    parser.add_argument("--office", type=int, default=30, help="DOCX files, and as many PPTX files")
    parser.add_argument("--repeats", type=int, default=1, help="passes of each throughput timing (best is kept)")
    parser.add_argument("--folder", type=Path, help="real documents: serial against parallel extraction")
    parser.add_argument("--workers", type=int, default=cores(), help="worker processes of the parallel load")
    parser.add_argument("--files", type=int, help="with --folder: only its first N files")
    parser.add_argument("--first-pages", type=int, help="with --folder: each PDF cut to its first N pages")
    args = parser.parse_args()
    if args.folder is not None:
        real_documents(args.folder, args.workers, args.files, args.first_pages, args.repeats)
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
        seconds, rows = {}, []
        for name, files in sets.items():
            seconds[name], extracted = _best(args.repeats, lambda n=name, f=files: _extract_all(f".{n}", f))
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
        files = sum(len(f) for f in sets.values())
        ok = cold[2] == files and warm[2] == 0 and warm[3] == cold[3]
        print(f"cold extracted {cold[2]} of {files} files, warm {warm[2]}: {'PASS' if ok else 'FAIL'}")
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
