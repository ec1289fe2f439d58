"""What a model call costs: built-in prices per million tokens, overrides, and the cost of a usage.

The table is data kept here rather than a price library: it is read on every recorded run,
which must start in milliseconds and never reach the network. Prices are USD per million
tokens (input, output, cached input), checked against the `genai-prices` data (0.2.3); a
model with prices by prompt length is listed at its lowest tier. A team whose contract or
model differs sets `pricing:` in .replayci.yml.
"""
from __future__ import annotations

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


_OPENAI = {
    "gpt-4o": (2.5, 10, 1.25),
    "gpt-4o-2024-05-13": (5, 15, None),
    "gpt-4o-mini": (0.15, 0.6, 0.075),
    "gpt-4.1": (2, 8, 0.5),
    "gpt-4.1-mini": (0.4, 1.6, 0.1),
    "gpt-4.1-nano": (0.1, 0.4, 0.025),
    "o1": (15, 60, 7.5),
    "o3": (2, 8, 0.5),
    "o3-mini": (1.1, 4.4, 0.55),
    "o3-pro": (20, 80, None),
    "o4-mini": (1.1, 4.4, 0.275),
    "gpt-5": (1.25, 10, 0.125),
    "gpt-5-mini": (0.25, 2, 0.025),
    "gpt-5-nano": (0.05, 0.4, 0.005),
    "gpt-5-pro": (15, 120, None),
    "gpt-5.1": (1.25, 10, 0.125),
    "gpt-5.2": (1.75, 14, 0.175),
    "gpt-5.2-pro": (21, 168, None),
    "gpt-5.3": (1.75, 14, 0.175),
    "gpt-5.4": (2.5, 15, 0.25),
    "gpt-5.4-mini": (0.75, 4.5, 0.075),
    "gpt-5.4-nano": (0.2, 1.25, 0.02),
    "gpt-5.4-pro": (30, 180, None),
    "gpt-5.5": (5, 30, 0.5),
    "gpt-5.5-pro": (30, 180, None),
    "gpt-5.6-luna": (0.2, 1.2, 0.02),
    "gpt-5.6-terra": (2, 12, 0.2),
    "gpt-5.6-sol": (4, 20, 0.4),
    "gpt-6-luna": (0.1, 0.5, 0.01),
    "gpt-6-sol": (2, 10, 0.2),
    "gpt-6-astra": (10, 50, 1),
    "gpt-6.1-terra": (1, 5, 0.05),
    "gpt-6.1-sol": (2, 10, 0.1),
}

_ANTHROPIC = {
    "claude-3-haiku": (0.25, 1.25, 0.03),
    "claude-3-5-haiku": (0.8, 4, 0.08),
    "claude-3-5-sonnet": (3, 15, 0.3),
    "claude-3-7-sonnet": (3, 15, 0.3),
    "claude-3-opus": (15, 75, 1.5),
    "claude-haiku-4-5": (1, 5, 0.1),
    "claude-haiku-5-5": (0.1, 0.5, 0.01),
    "claude-sonnet-4": (3, 15, 0.3),
    "claude-sonnet-4-5": (3, 15, 0.3),
    "claude-sonnet-4-6": (3, 15, 0.3),
    "claude-sonnet-5": (2, 10, 0.2),
    "claude-sonnet-5-5": (2, 10, 0.1),
    "claude-opus-4": (15, 75, 1.5),
    "claude-opus-4-1": (15, 75, 1.5),
    "claude-opus-4-5": (5, 25, 0.5),
    "claude-opus-4-6": (5, 25, 0.5),
    "claude-opus-4-7": (5, 25, 0.5),
    "claude-opus-4-8": (5, 25, 0.5),
    "claude-opus-5": (5, 25, 0.5),
    "claude-opus-5-5": (4, 20, 0.2),
    "claude-fable-5": (10, 50, 1),
    "claude-fable-5-1": (10, 50, 0.25),
    "claude-fable-5-2": (8, 40, 0.2),
    "claude-mythos-5-2": (8, 40, 0.2),
}

_GEMINI = {
    "gemini-2.0-flash": (0.1, 0.4, 0.025),
    "gemini-2.5-flash": (0.3, 2.5, 0.03),
    "gemini-2.5-flash-lite": (0.1, 0.4, 0.01),
    "gemini-2.5-pro": (1.25, 10, 0.125),
    "gemini-3-flash-preview": (0.5, 3, 0.05),
    "gemini-3-pro-preview": (2, 12, 0.2),
    "gemini-3.1-flash-lite": (0.25, 1.5, 0.025),
    "gemini-3.1-pro-preview": (2, 12, 0.2),
    "gemini-3.5-flash": (1.5, 9, 0.15),
    "gemini-3.5-flash-lite": (0.3, 2.5, 0.03),
    "gemini-3.6-flash": (1.5, 7.5, 0.15),
    "gemini-3.7-flash": (1.5, 7.5, 0.15),
    "gemini-3.8-flash": (1.5, 7.5, 0.15),
    "gemini-4-argon": (4, 20, 0.2),
}

BUILT_IN: dict[str, Price] = {name: Price(*p) for table in (_OPENAI, _ANTHROPIC, _GEMINI)
                              for name, p in table.items()}

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
