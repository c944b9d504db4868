"""Answers written by a chat model from a run's contexts: for each question of a candidate, in goldset
order, the question and that candidate's top k texts (numbered) go to the model with the answer
prompt (``prompts/answer_v2.md``), which asks it to answer only from them, in the question's language.

The answers file names each answer's contexts by unit id, so that scoring reads the same texts from
the run; each row keeps the model's raw reply and usage under ``generation``. An empty reply (a
refusal) is kept as the answer "" with ``"refused": true``, and what the model said instead, if
anything, as ``"refusal"``. Replies are appended to ``<out>.replies.jsonl`` as they arrive: the
same command after a failure sends only what is missing.
The file is unlabelled (``"labels": null`` in its meta) until a judge or a person labels it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bench.answers.calls import load_prompt, numbered, replies_path
from bench.answers.contexts import RunContexts
from bench.errors import BenchError
from bench.formatting import plural
from bench.inputs.answers import Answer, meta_path, save_answers
from bench.llm.asking import Request
from bench.llm.replies import Tally, reply_text
from bench.llm.settings import ChatSettings

PROMPT = Path(__file__).with_name("prompts") / "answer_v2.md"
PROMPT_NEEDS = {"system": (), "user": ("question", "contexts")}
MAX_TOKENS = 800  # of an answer, unless the chat settings give their own


@dataclass
class GenerateReport:
    out: Path
    meta: Path
    replies: Path
    answered: int
    refused: int
    not_asked: tuple[str, ...]  # question ids left out: the budget ran out first
    tally: Tally


def generate_answers(
    run: RunContexts,
    out: Path,
    chat: ChatSettings,
    *,
    prompt: Path | None = None,
    force: bool = False,
    console: Console | None = None,
) -> GenerateReport:
    """Ask ``chat``'s model to answer each of the candidate's questions from its top k; write the
    answers file ``out``.

    ``chat.max_cost`` leaves out the questions whose call (estimated by ``estimate_tokens`` plus
    ``max_tokens`` of reply, 800 unless ``chat`` says) would take the cost past it.
    """
    out, console = Path(out), console or Console(stderr=True)
    chat.check()
    if out.exists() and not force:
        raise BenchError(
            f"{out} exists; pass --force to replace it (replies already paid for are reused), or give another --out"
        )
    if not run.records:
        raise BenchError(f"{run.run.path}: candidate {run.candidate} answered no questions; rerun `bench run`")
    template = load_prompt(prompt or PROMPT, PROMPT_NEEDS)
    client = chat.client(MAX_TOKENS, json_mode=False)
    planned = []
    for record in run.records.values():  # in the run's (the goldset's) order
        units = run.top(record)
        contexts = numbered([run.text(u) for u in units])
        messages = template.messages("user", question=record.question, contexts=contexts)
        about = {"question_id": record.question_id, "prompt_version": template.version}
        planned.append(
            (record.question_id, tuple(u.id for u in units), Request(client.request_key(messages), messages, about))
        )
    asker, model = chat.asker(client, replies_path(out)), chat.model
    with console.status(f"asking {model} to answer {plural(len(planned), 'question')}") as status:
        asker.status = status
        rows = asker.ask((r for _, _, r in planned), f"answering with {model}")
    answers, not_asked = [], []
    for qid, unit_ids, request in planned:
        row = rows.get(request.key)
        if row is None:
            not_asked.append(qid)
            continue
        reply = reply_text(row)
        generation = {"model": model, "prompt_version": template.version, "reply": reply, "usage": row.get("usage")}
        extra: dict[str, object] = {"generation": generation}
        if not reply.strip():
            extra["refused"] = True
            if row.get("refusal"):
                extra["refusal"] = str(row["refusal"])  # what the model said instead of an answer
        answers.append(Answer(qid, reply.strip(), context_units=unit_ids, extra=extra))
    if not answers:
        raise BenchError(
            f"--max-cost {chat.max_cost:g} is less than one call is estimated to cost; raise it, or leave it out"
        )
    tally = asker.tally
    meta: dict[str, object] = {
        "generated": True,
        "labels": None,  # nobody has labelled the claims yet: a judge or a person does
        "run_id": run.run_id,
        "run_path": str(run.run.path),
        "candidate": run.candidate,
        "k": run.k,
        "goldset": run.run.manifest.goldset,
        "generator": chat.describe(client),
        "prompt": template.describe(with_text=True),
        "replies": replies_path(out).name,
        "answered": len(answers),
        "refused": sum(1 for a in answers if a.extra.get("refused")),
        "not_asked": not_asked,
        **tally.to_meta(chat.prices, chat.max_cost),
    }  # fmt: skip
    save_answers(out, answers, meta)
    report = GenerateReport(
        out=out, meta=meta_path(out), replies=replies_path(out), answered=len(answers),
        refused=sum(1 for a in answers if a.extra.get("refused")), not_asked=tuple(not_asked), tally=tally,
    )  # fmt: skip
    _print_summary(console, report)
    return report


def _print_summary(console: Console, r: GenerateReport) -> None:
    refused = f" ({r.refused} refused: empty reply)" if r.refused else ""
    console.print(f"answered {plural(r.answered, 'question')}{refused}")
    if r.not_asked:
        console.print(
            f"not asked: {plural(len(r.not_asked), 'question')} ({', '.join(r.not_asked[:5])}"
            f"{', …' if len(r.not_asked) > 5 else ''}): the next call would pass --max-cost"
        )
    console.print(r.tally.summary())
