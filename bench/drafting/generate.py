"""A draft goldset written by a chat model: questions in a user's words, each with verbatim quotes.

Passages (windows of about ``passage_chars`` characters, cut at paragraph breaks) are taken
round-robin over the documents, so that every document is asked about before any is asked about
twice; the order is fixed by the seed. Each call shows the model a few passages, labelled with
their document ids, and asks for ``per_call`` questions as JSON. A question is kept only when
(``bench.drafting.judging``)

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
calls there and sends none of them again, which is how a crashed or interrupted run resumes.
"""

from __future__ import annotations

import json
import random
import re
import threading
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.drafting.chat import ChatClient, ReplyLog, Usage, estimate_tokens
from bench.drafting.draft import PENDING, Draft, DraftQuestion, Found, Passage, load_draft, save_draft
from bench.drafting.judging import Judge
from bench.embedders.http_api import Aborted, redact_url
from bench.errors import BenchError
from bench.formatting import usd
from bench.inputs.corpus import Corpus

PROMPT_VERSION = "llm-draft-v2"  # v2: questions in the passages' language, quotes in their own script

SYSTEM_PROMPT = (
    "You write test questions for a search engine over a knowledge base. Each question is one that a "
    "real user of this knowledge base would type, in their own words: everyday words and synonyms, "
    "not phrases copied from the text, and never 'the passage' or 'the document'. Users write in the "
    "language of their knowledge base: each question is in the language of the passages it asks about "
    "(Chinese passages get Chinese questions), never translated. Each question is answered by the "
    "passages, and is supported by quotes copied character for character from them, in their own script."
)
USER_PROMPT = """Passages from the knowledge base, each labelled with its document id:

{passages}

Write {per_call} questions about these passages. Most are answered by one quote; about one in three \
needs two quotes (from different passages where possible), each of them necessary for the answer. \
A quote is a sentence or two copied exactly from one passage, with that passage's document id.

Write each question in the same language as the passages that answer it, not in English unless they \
are in English, and never translated. Copy each quote exactly as the passage writes it: the same \
characters and punctuation (full-width 。，、 stay full-width), nothing translated, no spaces added.

Reply with JSON only, in this form:
{"questions": [{"question": "...", "evidence": [{"doc": "<document id>", "quote": "<verbatim text>"}]}]}"""

# Settings that decide what is asked: a draft made with others is not resumed but refused.
_SAME = (
    *("method", "corpus_sha256", "model", "prompt_version"),
    *("per_call", "passages_per_call", "passage_chars", "seed", "temperature"),
)


@dataclass(frozen=True)
class Call:
    """One request: the passages it shows, its messages and the hash that finds its reply in the log."""

    index: int
    passages: tuple[tuple[str, int, int], ...]
    messages: list[dict[str, str]]
    key: str


@dataclass
class GenerateReport:
    draft: Path
    meta: Path
    log: Path
    asked: int
    kept: int
    dropped: dict[str, int]
    calls_sent: int
    calls_cached: int
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool
    cost_usd: float
    stopped: str  # "enough questions", "budget", "passages used up"


@dataclass
class _Tally:
    dropped: Counter = field(default_factory=Counter)
    sent: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    cost: float = 0.0

    def add(self, usage: Usage, price_in: float, price_out: float) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.estimated = self.estimated or usage.estimated
        self.cost += (usage.prompt_tokens * price_in + usage.completion_tokens * price_out) / 1e6


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


def planned_calls(
    corpus: Corpus, client: ChatClient, per_call: int, passages_per_call: int, passage_chars: int, seed: int
) -> Iterator[Call]:
    stream = sampled_passages(corpus, passage_chars, seed)
    for index in range(1 << 62):
        group = [p for _, p in zip(range(passages_per_call), stream, strict=False)]
        if not group:
            return
        shown = "\n\n".join(
            f"<passage doc={json.dumps(doc, ensure_ascii=False)}>\n{corpus.get(doc).text[s:e]}\n</passage>"
            for doc, s, e in group
        )
        user = USER_PROMPT.replace("{per_call}", str(per_call)).replace("{passages}", shown)  # passages last
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
        yield Call(index, tuple(group), messages, client.request_key(messages))


def log_path(draft: Path) -> Path:
    """Where a draft's chat replies are kept: ``<name>.draft.jsonl`` → ``<name>.draft.llm.jsonl``."""
    return draft.with_name(draft.name.removesuffix(".jsonl") + ".llm.jsonl")


# --- the whole draft ----------------------------------------------------------------------------------


def generate_draft(
    corpus: Corpus,
    n: int,
    out: Path,
    *,
    base_url: str,
    model: str,
    api_key_env: str = "OPENAI_API_KEY",
    max_cost: float | None = None,
    price_in: float = 0.0,
    price_out: float = 0.0,
    per_call: int = 3,
    concurrency: int = 4,
    seed: int = 0,
    force: bool = False,
    console: Console | None = None,
    passages_per_call: int = 3,
    passage_chars: int = 1500,
    temperature: float = 0.0,
    max_attempts: int = 6,
    timeout_s: float = 120.0,
) -> GenerateReport:
    """Ask ``model`` for questions about ``corpus`` until ``n`` are kept; write them as a draft at ``out``.

    Prices are USD per million tokens. ``max_cost`` stops before a call whose estimate (the prompt's
    ASCII characters / 4 and its other characters one each, plus its max_tokens of reply) would take
    the draft's cost past it; replies found in the log count as spent, so a resumed run keeps to the
    same budget.
    """
    for name, value in (("n", n), ("per_call", per_call), ("concurrency", concurrency)):
        if value < 1:
            raise BenchError(f"{name} = {value} must be at least 1")
    if passages_per_call < 1 or passage_chars < 100:
        raise BenchError("passages_per_call must be at least 1 and passage_chars at least 100")
    out, console = Path(out), console or Console(stderr=True)
    max_tokens = 250 * per_call + 200
    client = ChatClient(
        base_url,
        model,
        api_key_env=api_key_env,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
    )
    meta: dict[str, Any] = {
        "method": "llm", "corpus": {"path": str(corpus.path), "sha256": corpus.fingerprint},
        "base_url": redact_url(client.base_url), "model": model, "prompt_version": PROMPT_VERSION,
        "per_call": per_call, "passages_per_call": passages_per_call, "passage_chars": passage_chars,
        "seed": seed, "temperature": temperature, "max_tokens": max_tokens,
    }  # fmt: skip
    _check_overwrite(out, meta, force)
    log = ReplyLog(log_path(out))
    calls = planned_calls(corpus, client, per_call, passages_per_call, passage_chars, seed)
    tally = _Tally()
    judge = Judge(corpus, tally.dropped)
    prices = (price_in, price_out)
    with console.status(f"asking {model} for {n} questions") as status:
        stopped = _ask(client, calls, log, judge, tally, n, per_call, concurrency, max_cost, prices, max_tokens, status)
    if not judge.kept and stopped == "passages used up" and tally.sent + tally.cached == 0:
        raise BenchError(f"{corpus.path}: the documents hold no text to ask about")
    questions = [
        DraftQuestion(
            id=f"g{i:03d}",
            question=question,
            origin="llm",
            status=PENDING,
            evidence=spans,
            passages=tuple(Passage(d, s, e, (Found("llm", 1, None),)) for d, s, e in call.passages),
        )
        for i, (question, spans, call) in enumerate(judge.kept, 1)
    ]
    dropped = dict(sorted(tally.dropped.items(), key=lambda kv: (-kv[1], kv[0])))
    meta |= {
        "prompt": {"system": SYSTEM_PROMPT, "user": USER_PROMPT},
        "llm_log": log.path.name,
        "asked": n,
        "kept": len(questions),
        "dropped": dropped,
        "stopped": stopped,
        "calls": {"sent": tally.sent, "from_log": tally.cached},
        "tokens": {"prompt": tally.prompt_tokens, "completion": tally.completion_tokens, "estimated": tally.estimated},
        "price_per_million": {"input": price_in, "output": price_out},
        "cost_usd": round(tally.cost, 6),
        "max_cost_usd": max_cost,
        "response_format": client.json_mode,
    }
    draft = Draft(out, questions, meta)
    save_draft(draft)
    report = GenerateReport(
        out, draft.meta_path, log.path, n, len(questions), dropped, tally.sent, tally.cached,
        tally.prompt_tokens, tally.completion_tokens, tally.estimated, tally.cost, stopped,
    )  # fmt: skip
    _print_summary(console, report)
    return report


def _setting(meta: dict, key: str) -> object:
    """A setting of a draft's meta; the corpus counts by its fingerprint, wherever it lies."""
    if key == "corpus_sha256":
        corpus = meta.get("corpus")
        return corpus.get("sha256") if isinstance(corpus, dict) else None
    return meta.get(key)


def _check_overwrite(out: Path, meta: dict, force: bool) -> None:
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


def _ask(client, calls, log, judge, tally, n, per_call, concurrency, max_cost, prices, max_tokens, status) -> str:
    """Send calls (at most ``concurrency`` at once, no more than could still be needed) and read
    their replies in planned order until ``n`` questions are kept; why it stopped."""
    abort = threading.Event()
    pending: deque[tuple[Call, Future | dict, float]] = deque()
    reserved, stopped, held = 0.0, "", None  # held: a call waiting for the replies in flight to bill
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench-draft")

    def send(call: Call) -> dict:
        reply = client.complete(call.messages, abort)
        return log.add(call.key, reply, call=call.index, model=client.model, prompt_version=PROMPT_VERSION)

    try:
        while True:
            while not stopped and len(pending) < concurrency and len(judge.kept) + per_call * len(pending) < n:
                call, held = held or next(calls, None), None
                if call is None:
                    stopped = "passages used up"
                elif call.key in log.entries:
                    pending.append((call, log.entries[call.key], 0.0))
                else:
                    prompt = sum(estimate_tokens(m["content"]) for m in call.messages)
                    estimate = (prompt * prices[0] + max_tokens * prices[1]) / 1e6
                    if max_cost is not None and tally.cost + reserved + estimate > max_cost:
                        if reserved:  # the calls in flight may cost less than their estimates
                            held = call
                            break
                        stopped = "budget"
                    else:
                        reserved += estimate
                        pending.append((call, pool.submit(send, call), estimate))
            if not pending:
                return stopped
            call, answer, estimate = pending.popleft()
            if isinstance(answer, dict):
                tally.cached += 1
                row = answer
            else:
                row = answer.result()
                tally.sent += 1
                reserved -= estimate
            tally.add(Usage.from_dict(row.get("usage")), *prices)
            judge.read(call, str(row.get("reply", "")), n)
            status.update(f"asking {client.model}: {len(judge.kept)} of {n} questions kept, {usd(tally.cost)} spent")
            if len(judge.kept) >= n:
                stopped = "enough questions"
                break
        for _, answer, _ in pending:  # replies already on their way are paid for: log and count them
            if isinstance(answer, Future) and not answer.cancel():
                try:
                    tally.add(Usage.from_dict(answer.result().get("usage")), *prices)
                    tally.sent += 1
                except (BenchError, Aborted):
                    pass
        return stopped
    except BaseException:
        abort.set()  # the other calls stop retrying: this draft fails anyway (what came back is logged)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


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
