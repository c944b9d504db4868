"""What generating and judging answers share: the placeholders their prompt files may use, the
contexts as the models see them, and where a file's replies are kept. The chat model is asked
through ``bench.llm``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.llm.prompts import Template, load_template

# Every placeholder of an answer prompt or a rubric: a section that uses one it is not given is refused.
PLACEHOLDERS = ("question", "answer", "contexts", "claim")


def load_prompt(path: Path, needs: dict[str, tuple[str, ...]]) -> Template:
    """An answer prompt or a rubric (``bench.llm.prompts``), its placeholders those of the answer layer."""
    return load_template(path, needs, known=PLACEHOLDERS)


def numbered(contexts: Sequence[str]) -> str:
    """Contexts as the models see them: numbered in the order given, nothing else about them."""
    if not contexts:
        return "(no contexts were given)"
    return "\n\n".join(f"[{i}]\n{text.strip()}" for i, text in enumerate(contexts, 1))


def replies_path(out: Path) -> Path:
    return out.with_name(out.name + ".replies.jsonl")
