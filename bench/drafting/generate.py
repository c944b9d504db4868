"""A draft goldset written by a chat model: questions in a user's words, each with verbatim quotes.

Passages (windows of about ``passage_chars`` characters, cut at paragraph breaks) are taken
round-robin over the documents, so that every document is asked about before any is asked about
twice; the order is fixed by the seed. Each call shows the model a few passages, labelled with
their document ids, and asks for ``per_call`` questions as JSON. A question is kept only when
(``bench.drafting.checks``)

* every quote resolves in its document (``find_quote``: as a reader copies it), else "invented quote";
* it does not copy its evidence: at least 80% of its content terms appear, in order, in one quote
  (for questions of three content terms or more), or the content-term Jaccard with one quote
  is 0.7 or more; such a question would test word matching, not retrieval;
* it is no near-duplicate of a question kept before it (content-term Jaccard 0.8 or more; 0.7 for a
  question in a script written without spaces, whose terms are character bigrams).

The model is asked for questions in the passages' language and for quotes in their own script.

Calls run concurrently but are read in the order they were planned, so the kept questions do not
depend on which reply came back first. Every reply is appended to ``<draft>.llm.jsonl`` (the prompt
hash, the model, the raw reply and its usage) as it arrives: a rerun of the same command finds its
calls there and sends none of them again, which is how a crashed or interrupted run resumes. The
prompt is the file ``prompts/draft_v2.md``; the chat model is asked through ``bench.llm``.
"""

from __future__ import annotations

import json
import random
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from bench.drafting.checks import QuestionChecks, Shown
from bench.drafting.draft import PENDING, Draft, DraftQuestion, Found, Passage, load_draft, save_draft
from bench.errors import BenchError
from bench.formatting import usd
from bench.inputs.corpus import Corpus
from bench.llm.asking import Request
from bench.llm.client import ChatClient
from bench.llm.http_api import redact_url
from bench.llm.prompts import load_template
from bench.llm.replies import Row, Tally, reply_text
from bench.llm.settings import ChatSettings

PROMPT = Path(__file__).with_name("prompts") / "draft_v2.md"
_TEMPLATE = load_template(PROMPT, {"system": (), "user": ("passages", "per_call")})
PROMPT_VERSION = _TEMPLATE.version  # llm-draft-v2: questions in the passages' language, quotes in their own script
SYSTEM_PROMPT, USER_PROMPT = _TEMPLATE.sections["system"], _TEMPLATE.sections["user"]

# Settings that decide what is asked: a draft made with others is not resumed but refused.
_SAME = (
    *("method", "corpus_sha256", "model", "prompt_version"),
    *("per_call", "passages_per_call", "passage_chars", "seed", "temperature"),
)


@dataclass(frozen=True)
class DraftPlan:
    """What each call shows and asks for: ``per_call`` questions about ``passages_per_call`` passages
    of about ``passage_chars`` characters, drawn in an order fixed by ``seed``."""

    per_call: int = 3
    passages_per_call: int = 3
    passage_chars: int = 1500
    seed: int = 0

    def check(self) -> None:
        if self.per_call < 1:
            raise BenchError(f"per_call = {self.per_call} must be at least 1")
        if self.passages_per_call < 1 or self.passage_chars < 100:
            raise BenchError("passages_per_call must be at least 1 and passage_chars at least 100")

    @property
    def max_tokens(self) -> int:
        """The reply a call allows: about 250 tokens a question."""
        return 250 * self.per_call + 200


@dataclass(frozen=True)
class Call:
    """One request: the passages it shows, and the request (messages, and the hash that finds its reply in the log)."""

    index: int
    passages: Shown
    request: Request


@dataclass
class GenerateReport:
    draft: Path
    meta: Path
    log: Path
    asked: int
    kept: int
    dropped: dict[str, int]
    stopped: str  # "enough questions", "budget", "passages used up"
    tally: Tally = field(default_factory=Tally)

    @property
    def calls_sent(self) -> int:
        return self.tally.sent

    @property
    def calls_cached(self) -> int:
        return self.tally.cached

    @property
    def prompt_tokens(self) -> int:
        return self.tally.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.tally.completion_tokens

    @property
    def tokens_estimated(self) -> bool:
        return self.tally.estimated

    @property
    def cost_usd(self) -> float:
        return self.tally.cost


# --- passages ---------------------------------------------------------------------------------------


def windows(text: str, size: int) -> list[tuple[int, int]]:
    """The text cut into spans of at most about ``size`` characters, at paragraph breaks where there
    are any (else at a space), with no surrounding whitespace."""
    breaks = [m.end() for m in re.finditer(r"\n[ \t]*\n\s*", text)]
    spans, start, n = [], _skip_space(text, 0), len(text)
    while start < n:
        end = n
        if start + size < n:
            i = bisect_right(breaks, start + size) - 1
            if i >= 0 and breaks[i] > start + size // 3:
                end = breaks[i]
            else:
                space = max(text.rfind(" ", start, start + size), text.rfind("\n", start, start + size))
                end = space if space > start + size // 2 else start + size
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if stop > start:
            spans.append((start, stop))
        start = _skip_space(text, end)
    return spans


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def sampled_passages(corpus: Corpus, size: int, seed: int) -> Iterator[tuple[str, int, int]]:
    """Passages round-robin over the documents (in an order drawn from the seed): each document's
    passages in an order of their own, drawn from the seed and the document's id. Documents are read
    as they are reached."""
    order = list(range(len(corpus)))
    random.Random(seed).shuffle(order)
    cut: dict[int, list[tuple[int, int]]] = {}
    for round_ in range(1 << 62):
        shown = False
        for ordinal in order:
            if ordinal not in cut:
                doc = corpus.at(ordinal)
                spans = windows(doc.text, size)
                random.Random(f"{seed}\0{doc.id}").shuffle(spans)
                cut[ordinal] = spans
            if round_ < len(cut[ordinal]):
                shown = True
                yield (corpus.ids[ordinal], *cut[ordinal][round_])
        if not shown:
            return


def planned_calls(corpus: Corpus, client: ChatClient, plan: DraftPlan) -> Iterator[Call]:
    stream = sampled_passages(corpus, plan.passage_chars, plan.seed)
    for index in range(1 << 62):
        group = tuple(p for _, p in zip(range(plan.passages_per_call), stream, strict=False))
        if not group:
            return
        shown = "\n\n".join(
            f"<passage doc={json.dumps(doc, ensure_ascii=False)}>\n{corpus.get(doc).text[s:e]}\n</passage>"
            for doc, s, e in group
        )
        messages = _TEMPLATE.messages("user", per_call=str(plan.per_call), passages=shown)
        about: dict[str, object] = {"call": index, "prompt_version": PROMPT_VERSION}
        yield Call(index, group, Request(client.request_key(messages), messages, about))


def log_path(draft: Path) -> Path:
    """Where a draft's chat replies are kept: ``<name>.draft.jsonl`` → ``<name>.draft.llm.jsonl``."""
    return draft.with_name(draft.name.removesuffix(".jsonl") + ".llm.jsonl")


# --- the whole draft ----------------------------------------------------------------------------------


def generate_draft(
    corpus: Corpus,
    n: int,
    out: Path,
    chat: ChatSettings,
    plan: DraftPlan = DraftPlan(),
    *,
    force: bool = False,
    console: Console | None = None,
) -> GenerateReport:
    """Ask ``chat``'s model for questions about ``corpus`` until ``n`` are kept; write them as a draft at ``out``.

    ``chat.max_cost`` stops before a call whose estimate (the prompt's ASCII characters / 4 and its
    other characters one each, plus its max_tokens of reply) would take the draft's cost past it;
    replies found in the log count as spent, so a resumed run keeps to the same budget.
    """
    if n < 1:
        raise BenchError(f"n = {n} must be at least 1")
    plan.check()
    chat.check()
    out, console = Path(out), console or Console(stderr=True)
    client = chat.client(plan.max_tokens)
    meta: dict[str, object] = {
        "method": "llm", "corpus": {"path": str(corpus.path), "sha256": corpus.fingerprint},
        "base_url": redact_url(client.base_url), "model": chat.model, "prompt_version": PROMPT_VERSION,
        "per_call": plan.per_call, "passages_per_call": plan.passages_per_call, "passage_chars": plan.passage_chars,
        "seed": plan.seed, "temperature": chat.temperature, "max_tokens": client.max_tokens,
    }  # fmt: skip
    _check_overwrite(out, meta, force)
    asker = chat.asker(client, log_path(out))
    checks = QuestionChecks(corpus)
    calls: dict[str, Call] = {}

    def requests() -> Iterator[Request]:
        for call in planned_calls(corpus, client, plan):
            calls[call.request.key] = call
            yield call.request

    def read(request: Request, row: Row) -> bool:
        checks.read(calls[request.key].passages, reply_text(row), n)
        status.update(f"asking {chat.model}: {len(checks.kept)} of {n} questions kept, {usd(asker.tally.cost)} spent")
        return len(checks.kept) >= n

    def room(pending: int) -> bool:  # no more calls than could still be needed
        return len(checks.kept) + plan.per_call * pending < n

    with console.status(f"asking {chat.model} for {n} questions") as status:
        ended = asker.in_order(requests(), read, room)
    tally = asker.tally
    stopped = {"enough": "enough questions", "budget": "budget", "all asked": "passages used up"}[ended]
    if not checks.kept and stopped == "passages used up" and tally.sent + tally.cached == 0:
        raise BenchError(f"{corpus.path}: the documents hold no text to ask about")
    questions = [
        DraftQuestion(
            id=f"g{i:03d}",
            question=kept.question,
            origin="llm",
            status=PENDING,
            evidence=kept.evidence,
            passages=tuple(Passage(d, s, e, (Found("llm", 1, None),)) for d, s, e in kept.shown),
        )
        for i, kept in enumerate(checks.kept, 1)
    ]
    dropped = dict(sorted(checks.dropped.items(), key=lambda kv: (-kv[1], kv[0])))
    meta |= {
        "prompt": {"system": SYSTEM_PROMPT, "user": USER_PROMPT},
        "llm_log": asker.log.path.name,
        "asked": n,
        "kept": len(questions),
        "dropped": dropped,
        "stopped": stopped,
        "calls": {"sent": tally.sent, "from_log": tally.cached},
        "tokens": tally.tokens(),
        "price_per_million": {"input": chat.price_in, "output": chat.price_out},
        "cost_usd": round(tally.cost, 6),
        "max_cost_usd": chat.max_cost,
        "response_format": client.json_mode,
    }
    draft = Draft(out, questions, meta)
    save_draft(draft)
    report = GenerateReport(
        draft=out, meta=draft.meta_path, log=asker.log.path, asked=n, kept=len(questions), dropped=dropped,
        stopped=stopped, tally=tally,
    )  # fmt: skip
    _print_summary(console, report)
    return report


def _setting(meta: dict[str, object], key: str) -> object:
    """A setting of a draft's meta; the corpus counts by its fingerprint, wherever it lies."""
    if key == "corpus_sha256":
        corpus = meta.get("corpus")
        return corpus.get("sha256") if isinstance(corpus, dict) else None
    return meta.get(key)


def _check_overwrite(out: Path, meta: dict[str, object], force: bool) -> None:
    """An existing draft is resumed when it was made the same way and nobody has reviewed it yet."""
    if force or not out.exists():
        return
    old = load_draft(out)
    differ = [k for k in _SAME if _setting(old.meta, k) != _setting(meta, k)]
    if differ:
        raise BenchError(
            f"{out} exists and was made with other settings ({', '.join(differ)}); "
            "pass --force to replace it, or give another --out"
        )
    reviewed = sum(1 for q in old.questions if q.status != PENDING or q.note)
    if reviewed:
        raise BenchError(
            f"{out} exists and {reviewed} of its questions have been reviewed; "
            "pass --force to replace it (the review is lost), or give another --out"
        )


def _print_summary(console: Console, r: GenerateReport) -> None:
    why = {"budget": " (stopped: the next call would pass --max-cost)", "passages used up": " (every passage asked)"}
    console.print(f"kept {r.kept} of {r.asked} questions asked for{why.get(r.stopped, '')}")
    if r.dropped:
        console.print("dropped: " + ", ".join(f"{count} {reason}" for reason, count in r.dropped.items()))
    approx = " (estimated)" if r.tokens_estimated else ""
    console.print(
        f"calls: {r.calls_sent} sent, {r.calls_cached} from {r.log.name}; tokens: {r.prompt_tokens:,} in, "
        f"{r.completion_tokens:,} out{approx}; cost {usd(r.cost_usd)}"
    )
