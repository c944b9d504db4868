"""`bench answers score | agree`: the answer layer beside retrieval (docs/answers.md). The commands that
ask a chat model, `generate` and `judge`, are in answers_chat."""

from __future__ import annotations

import click

from bench.cli.app import main


@main.group()
def answers() -> None:
    """Score answers beside retrieval: groundedness, answer relevance, and how far a judge agrees with people."""
