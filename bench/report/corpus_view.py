"""What the terminal shows of a corpus: the tables of ``bench corpus stats`` (the spinner while its
files are read and the warnings are ``bench.run.progress``'s)."""

from __future__ import annotations

from rich.table import Table

from bench.text.languages import language_name


def corpus_stats_tables(stats: dict) -> list[Table]:
    """Documents, pages and characters per format, then every file left out and why."""
    formats = Table(title=f"{stats['corpus']}: {stats['documents']:,} documents", title_justify="left")
    for col in ("format", "documents", "pages", "characters"):
        formats.add_column(col, justify="left" if col == "format" else "right")
    for name, row in stats["formats"].items():
        pages = f"{row['pages']:,}" if row["pages"] else "–"
        formats.add_row(name, f"{row['documents']:,}", pages, f"{row['characters']:,}")
    tables = [formats]
    if stats.get("languages"):
        tables.append(languages_table(stats["languages"], stats["documents"]))
    if stats["left_out"]:
        left = Table(title=f"{len(stats['left_out']):,} files left out", title_justify="left")
        for col in ("file", "kind", "why"):
            left.add_column(col, overflow="fold")
        for x in stats["left_out"]:
            left.add_row(x["path"], x["kind"], x["reason"])
        tables.append(left)
    if stats["notes"]:
        notes = Table(title="read, with a note", title_justify="left")
        notes.add_column("file", overflow="fold")
        notes.add_column("note", overflow="fold")
        for doc, lines in stats["notes"].items():
            notes.add_row(doc, "; ".join(lines))
        tables.append(notes)
    return tables


def languages_table(mix: dict, documents: int) -> Table:
    """The corpus's languages by share of characters, and the scripts they are written in."""
    table = Table(title="languages, by characters", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value")
    for code, share in mix.get("shares", {}).items():
        table.add_row(f"{language_name(code)} ({code})", f"{share:.1%}")
    scripts = ", ".join(f"{name} {share:.0%}" for name, share in mix.get("scripts", {}).items() if share >= 0.005)
    if scripts:
        table.add_row("scripts", scripts)
    sampled = mix.get("texts", 0)
    table.add_row("sampled", f"{sampled:,} of {documents:,} documents" if sampled < documents else "every document")
    return table
