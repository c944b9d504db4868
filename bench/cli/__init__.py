"""Command line: parses arguments and calls one library function per command.

Commands live beside the stage they drive: ``shootout`` (run, chunk, report), ``runs`` (compare,
history, check, export), ``goldset`` (validate, lock, stats, import), ``draft`` (goldset draft),
``review`` (goldset review), ``corpus`` (stats, text), ``models``, and ``answers`` (score, agree)
with ``answers_chat`` (answers generate, answers judge), and ``judge`` (a relevance judge's grades of a run).
"""

from bench.cli import (  # noqa: F401  (each registers its commands)
    answers,
    answers_chat,
    corpus,
    draft,
    goldset,
    judge,
    models,
    review,
    runs,
    shootout,
)
from bench.cli.app import EXIT_BAD_INPUT, main

__all__ = ["EXIT_BAD_INPUT", "main"]
