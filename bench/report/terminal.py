"""Terminal tables: the ranked shootout and the model list."""

from __future__ import annotations

from rich.table import Table

from bench.embedders import MODELS
from bench.metrics import metric_key

COLUMNS = ("mrr", "recall", "hit_rate", "ndcg", "precision", "map")


def shootout_table(summary: dict, title: str = "") -> Table:
    k = summary["k"]
    table = Table(title=title or f"Candidates ranked by mrr@{k}, then recall@{k} ({summary['unit']} unit)",
                  title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("candidate (model/chunker/index)")
    for name in COLUMNS:
        table.add_column(metric_key(name, k), justify="right")
    table.add_column("chunks", justify="right")
    table.add_column("embed s", justify="right")
    table.add_column("query p50 ms", justify="right")
    best = {name: max(c["quality"][metric_key(name, k)] for c in summary["candidates"]) for name in COLUMNS}
    for c in summary["candidates"]:
        cells = []
        for name in COLUMNS:
            value = c["quality"][metric_key(name, k)]
            text = f"{value:.3f}"
            cells.append(f"[bold green]{text}[/]" if value == best[name] and value > 0 else text)
        opsf = c["ops"]
        table.add_row(str(c["rank"]), c["id"], *cells, str(opsf.get("n_chunks", "")),
                      _num(opsf.get("embed_seconds"), "{:.1f}"), _num(opsf.get("query_embed_ms_p50"), "{:.1f}"))
    return table


def models_table() -> Table:
    table = Table(title="Models (listed without loading weights)", title_justify="left")
    for col in ("name", "kind", "dims", "max tokens", "$/Mtok", "description"):
        table.add_column(col)
    for name in MODELS:
        spec = MODELS.get(name)
        kind = "lexical" if spec.lexical else spec.loader
        table.add_row(name, kind, _num(spec.dims, "{}"), _num(spec.max_tokens, "{}"),
                      _num(spec.price_per_mtok, "{:g}"), spec.description)
    return table


def _num(value, fmt: str) -> str:
    return "—" if value is None else fmt.format(value)
