"""What a model call costs: built-in prices per million tokens, overrides, and the cost of a usage.

The table is data kept beside this module (prices.json) rather than a price library: it is
read on every recorded run, which must start in milliseconds and never reach the network. Prices are USD per million
tokens (input, output, cached input), checked against the `genai-prices` data (0.2.3); a
model with prices by prompt length is listed at its lowest tier. A team whose contract or
model differs sets `pricing:` in .replayci.yml.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from .memo import Memo

# What a request sent through a batch API costs less than the listed price (a share of it).
BATCH_DISCOUNT = 0.5


class Price(NamedTuple):
    """USD per million tokens; cached input None when the model has no cache price; the share
    of these prices the providers' batch APIs take off (half, as OpenAI and Anthropic charge)."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    batch_discount: float = BATCH_DISCOUNT


def _built_in() -> dict[str, Price]:
    """The table of prices.json beside this module: {vendor: {model: [input, output, cached input]}}."""
    with open(os.path.join(os.path.dirname(__file__), "prices.json"), encoding="utf-8") as fh:
        vendors = json.load(fh)
    return {name: Price(*p) for table in vendors.values() for name, p in table.items()}


BUILT_IN: dict[str, Price] = _built_in()

# Where a dated snapshot or a variant continues a model's name: gpt-4o-2024-08-06,
# claude-sonnet-4-5@20250929 (Vertex), ft:... never; and gpt-5 never prices gpt-5.4.
_SEPARATORS = "-@:"


def price_table(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Price]:
    """The built-in prices with .replayci.yml's `pricing:` entries over them."""
    if not overrides:
        return BUILT_IN
    table = dict(BUILT_IN)
    for model, entry in overrides.items():
        table[model.lower()] = Price(entry["input_per_mtok"], entry["output_per_mtok"],
                                     entry.get("cached_input_per_mtok"),
                                     entry.get("batch_discount", BATCH_DISCOUNT))
    return table


def batch_prices(table: Mapping[str, Price]) -> dict[str, Price]:
    """*table* at batch prices: every price less the model's batch discount."""
    return {name: _batch_price(p) for name, p in table.items()}


def _batch_price(price: Price) -> Price:
    keep = 1 - price.batch_discount
    cached = None if price.cached_input_per_mtok is None else price.cached_input_per_mtok * keep
    return Price(price.input_per_mtok * keep, price.output_per_mtok * keep, cached, price.batch_discount)


_built_in_prices: Memo = Memo()  # model name -> (its BUILT_IN price,): every response asks


def price_of(model: Any, table: Mapping[str, Price] = BUILT_IN) -> Price | None:
    """The price of *model*: its own entry, else the longest key it continues after a '-', '@'
    or ':' (a dated snapshot); None when the table has none."""
    if not isinstance(model, str) or not model:
        return None
    if table is not BUILT_IN:
        return _price_in(model, table)
    known = _built_in_prices.get(model)
    if known is None:
        known = _built_in_prices.put(model, (_price_in(model, table),))
    return known[0]


def _price_in(model: str, table: Mapping[str, Price]) -> Price | None:
    """price_of, looked up in *table*."""
    name = model.strip().lower()
    if name.startswith("models/"):  # Gemini's resource name
        name = name[len("models/"):]
    while name:
        found = table.get(name)
        if found is not None:
            return found
        cut = max(name.rfind(s) for s in _SEPARATORS)
        if cut <= 0:
            return None
        name = name[:cut]
    return None


def _count(value: Any) -> int:
    return value if _is_count(value) and value > 0 else 0


def cost_of(usage: Any, price: Price | None) -> float | None:
    """USD for *usage* ({input_tokens, output_tokens, cached_input_tokens: the part of the input
    read from the cache}) at *price*; None when either is unknown."""
    if price is None or not isinstance(usage, Mapping):
        return None
    inputs, outputs = usage.get("input_tokens"), usage.get("output_tokens")
    if not (isinstance(inputs, int) or isinstance(outputs, int)):
        return None
    given = _count(inputs)
    cached = min(_count(usage.get("cached_input_tokens")), given)
    cached_price = price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    total = ((given - cached) * price.input_per_mtok + cached * cached_price
             + _count(outputs) * price.output_per_mtok) / 1_000_000
    return round(total, 10)


def usage_tokens(usage: Any) -> int | None:
    """Input + output tokens of *usage*; None when it reports neither."""
    if not isinstance(usage, Mapping):
        return None
    inputs, outputs = usage.get("input_tokens"), usage.get("output_tokens")
    if not (_is_count(inputs) or _is_count(outputs)):
        return None
    return _count(inputs) + _count(outputs)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
