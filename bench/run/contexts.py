"""The contexts a chat model writes for the chunks of the situated chunkers a run needs
([context.NAME], bench.chunking.situate): each chunk asked once, through the reply log under the
cache folder (a rerun, or another run over the same document and chunk, sends nothing), within the
run's budget for chat calls, priced per chunker and said in the manifest.

A budget that leaves chunks without a context stops the run before anything is indexed: a
comparison in which some chunks have their context and others not would measure the budget. A
reply that is empty or a refusal leaves its chunk without a context, counted and warned about.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bench.chunking.situate import MAX_TOKENS, load_prompt, requests, situated
from bench.errors import BenchError
from bench.formatting import usd
from bench.llm.asking import Asker, Request
from bench.llm.client import Usage
from bench.llm.http_api import redact_url
from bench.llm.replies import Prices, Row, reply_text
from bench.run.progress import warn

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from bench.chunking.context import ContextualTable
    from bench.chunking.table import ChunkTable
    from bench.config import Config
    from bench.config.tables import ChunkerSpec, ContextSpec
    from bench.core.operating import Figures
    from bench.inputs.corpus import Corpus
    from bench.llm.client import ChatClient
    from bench.llm.prompts import Template

REPLIES = Path("contexts") / "replies.jsonl"  # under the cache folder: the replies paid for
FIX_BUDGET = "raise --max-cost or [llm] max_cost; what was paid for is kept and a rerun resumes"


def failed(row: Row) -> bool:
    """A reply that gives no context: empty, or a refusal."""
    return bool(row.get("refusal")) or not reply_text(row).strip()


class Situating:
    """Writes the contexts of a run's situated chunkers; keeps, per chunker, its ``context_*``
    operating figures (``figures``) and, per [context.NAME], what it asked and spent (``spent``)."""

    def __init__(self, config: Config, cache_root: Path, progress: Progress, console: Console) -> None:
        self.config, self.root, self.progress, self.console = config, cache_root, progress, console
        self.log = cache_root / REPLIES
        self.figures: dict[str, Figures] = {}
        self.spent: dict[str, dict[str, object]] = {}
        self.paid = 0.0  # by the [context.NAME] tables asked so far: the budget is the run's

    def priced(self, chunker: str, figures: Figures) -> Figures:
        """A candidate's figures with its chunker's ``context_*`` ones: indexing this corpus means
        writing its contexts too (once per pipeline, however many stages it has)."""
        context = self.figures.get(chunker)
        if not context:
            return figures
        index = figures.get("index_cost_usd")
        cost = context["context_cost_usd"]
        both = index + cost if isinstance(index, int | float) and isinstance(cost, int | float) else None
        return {**figures, **context, "index_cost_usd": both}

    def tables(self, plain: dict[str, ChunkTable], corpus: Corpus, needed: set[str]) -> dict[str, ContextualTable]:
        """The table of every situated chunker in ``needed``, over its plain chunker's table."""
        out: dict[str, ContextualTable] = {}
        for spec in self.config.contexts:
            chunkers = situated_chunkers(self.config, spec, needed)
            if chunkers:
                out.update(self._situate(spec, chunkers, plain, corpus))
        return out

    def _situate(
        self, spec: ContextSpec, chunkers: list[ChunkerSpec], plain: dict[str, ChunkTable], corpus: Corpus
    ) -> dict[str, ContextualTable]:
        budget = self.config.llm.max_cost
        chat = self.config.chat(spec, f"[context.{spec.name}]", self.paid)
        client = chat.client(MAX_TOKENS, json_mode=False)
        asker = chat.asker(client, self.log)
        prompt = load_prompt(spec.prompt_path)
        keys: dict[str, list[str]] = {c.name: [] for c in chunkers}  # per chunk of each chunker: its request
        planned = planned_requests(client, prompt, spec, [(c.name, plain[c.plain]) for c in chunkers], corpus, keys)
        chunks = sum(len(plain[c.plain]) for c in chunkers)
        logged = set(asker.log.entries)  # what an earlier run paid for: found, not sent
        rows = self._ask(asker, planned, keys, f"situating {chunks:,} chunks with {spec.model}", chunks)
        tally = asker.tally
        self.paid += tally.cost
        if tally.skipped:
            cap = usd(budget) if budget is not None else "none"
            raise BenchError(
                f"[context.{spec.name}]: the budget (max cost {cap}) allowed {len(rows):,} of "
                f"{len(rows) + tally.skipped:,} contexts ({usd(tally.cost)} spent, {usd(tally.cost_sent)} of it this "
                f"run); {FIX_BUDGET}"
            )
        out: dict[str, ContextualTable] = {}
        failures = []
        for c in chunkers:
            chunk_rows = [rows[key] for key in keys[c.name]]
            contexts = {i: reply_text(row) for i, row in enumerate(chunk_rows) if not failed(row)}
            out[c.name] = situated(plain[c.plain], contexts)
            figures = _figures(spec, {key: rows[key] for key in keys[c.name]}, logged, chat.prices)
            failures.append(len(chunk_rows) - len(contexts))
            self.figures[c.name] = {**figures, "contexts_failed": failures[-1]}
            self._warn_failed(c.name, spec.model, chunk_rows)
        cached_price = chat.price_cached_in
        self.spent[spec.name] = {
            "model": spec.model,
            "base_url": redact_url(client.base_url),
            "prompt": prompt.describe(),
            "chunkers": [c.name for c in chunkers],
            "window_tokens": spec.window_tokens,
            "calls": {"sent": tally.sent, "from_cache": tally.cached, "not_sent_budget": tally.skipped},
            "tokens": {**tally.tokens(), "cached_prompt": tally.cached_prompt_tokens},
            "price_per_million": {"input": chat.price_in, "output": chat.price_out, "cached_input": cached_price},
            "cost_usd": round(tally.cost, 6),
            "cost_sent_usd": round(tally.cost_sent, 6),
            "max_cost_usd": budget,
            "failed": sum(failures),
        }
        return out

    def _ask(
        self, asker: Asker, planned: Iterator[Request], keys: dict[str, list[str]], label: str, chunks: int
    ) -> dict[str, Row]:
        """Every request's row, by key, with a line of progress; those the budget leaves are counted in
        the tally as skipped, unless the log holds them."""
        task = self.progress.add_task(label, total=chunks)
        rows: dict[str, Row] = {}

        def read(request: Request, row: Row) -> bool:
            rows[request.key] = row
            shown = f"{label}: {len(rows):,} of {chunks:,}, {usd(asker.tally.cost)} spent"
            self.progress.update(task, completed=len(rows), description=shown)
            return False

        ended = asker.in_order(planned, read)
        for _ in planned:  # the budget ended the stream: plan the rest, to count what it left
            pass
        if ended == "budget":
            for key in dict.fromkeys(key for table_keys in keys.values() for key in table_keys):
                if key in rows:
                    continue
                if key in asker.log.entries:  # an earlier run paid for it
                    rows[key] = asker.log.entries[key]
                    asker.tally.add(rows[key], asker.prices, sent=False)
                else:
                    asker.tally.skipped += 1
        else:
            self.progress.update(task, completed=chunks)
        return rows

    def _warn_failed(self, chunker: str, model: str, rows: list[Row]) -> None:
        """One line when replies gave some chunks no context."""
        missing = [row for row in rows if failed(row)]
        if missing:
            refused = sum(1 for row in missing if row.get("refusal"))
            warn(
                self.console,
                [
                    f"{chunker}: {len(missing)} of {len(rows)} chunks got no context from {model} ({refused} "
                    f"refused, {len(missing) - refused} empty); they are indexed without one"
                ],
            )


def situated_chunkers(config: Config, spec: ContextSpec, needed: set[str]) -> list[ChunkerSpec]:
    """The chunkers of ``needed`` whose contexts ``spec`` writes."""
    return [c for c in config.chunkers if c.situated and c.context == spec.name and c.name in needed]


def planned_requests(
    client: ChatClient,
    prompt: Template,
    spec: ContextSpec,
    tables: list[tuple[str, ChunkTable]],
    corpus: Corpus,
    keys: dict[str, list[str]],
) -> Iterator[Request]:
    """Every chunk's request, made as it is sent (a document's text is not held once per chunk); the
    key of each chunk's is appended to ``keys[chunker]`` on the way. A chunk asked twice (the same
    text, window and prompt) is sent once."""
    seen: set[str] = set()
    for name, table in tables:
        for ask in requests(table, corpus, prompt, spec.window_tokens):
            key = client.request_key(ask.messages)
            keys[name].append(key)
            if key not in seen:
                seen.add(key)
                about = {"doc_id": ask.doc_id, "start": ask.start, "end": ask.end, "prompt": prompt.version}
                yield Request(key, ask.messages, about)


def _figures(spec: ContextSpec, rows: dict[str, Row], logged: set[str], prices: Prices) -> Figures:
    """One chunker's contexts as operating figures: every distinct request priced at its usage, those
    found in the log as they were billed when sent (``context_cost_usd`` joins ``index_cost_usd``)."""
    usages = [Usage.from_dict(row.get("usage")) for row in rows.values()]
    sent = sum(1 for key in rows if key not in logged)
    return {
        "context_model": spec.model,
        "context_cost_usd": sum(prices.cost(u) for u in usages),
        "context_calls_sent": sent,
        "context_calls_cached": len(rows) - sent,
        "context_tokens_in": sum(u.prompt_tokens for u in usages),
        "context_tokens_cached": sum(u.cached_prompt_tokens for u in usages),
        "context_tokens_out": sum(u.completion_tokens for u in usages),
    }
