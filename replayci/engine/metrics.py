"""Latency, cost and tokens: on each response document, and per case."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.prices import Price, cost_of, price_of, usage_tokens


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def measure(response: dict, *, latency_ms: Any, model: Any, prices: Mapping[str, Price]) -> dict:
    """*response* with its `latency_ms` (None when unknown) and `cost_usd`, priced as the
    response's own model, else *model* (the recording's or the run's)."""
    price = price_of(response.get("model") or model, prices)
    return {**response, "latency_ms": latency_ms if _number(latency_ms) else None,
            "cost_usd": cost_of(response.get("usage"), price)}


def measure_steps(steps: list[dict], *, latencies: list | None, model: Any,
                  prices: Mapping[str, Price]) -> list[dict]:
    """A trajectory's steps, each response measured (its own latency when the calls were timed)."""
    latencies = latencies if latencies is not None and len(latencies) == len(steps) else [None] * len(steps)
    return [{**s, "response": measure(s["response"], latency_ms=ms, model=model, prices=prices)}
            for s, ms in zip(steps, latencies, strict=True)]


def _total(values: Iterable[Any]) -> Any:
    known = [v for v in values if _number(v)]
    return round(sum(known), 10) if known else None


def case_metrics(responses: list[dict], latency_ms: Any = None) -> dict:
    """A case's `latency_ms`, `cost_usd` and `tokens` over its model responses (a scenario's
    steps): sums of what is known; *latency_ms* when given (a recording's total)."""
    latencies, costs, tokens = [], [], []  # (one pass, no generators: asked once per case)
    for r in responses:
        latencies.append(r.get("latency_ms"))
        costs.append(r.get("cost_usd"))
        tokens.append(usage_tokens(r.get("usage")))
    if not _number(latency_ms):
        latency_ms = _total(latencies)
    return {"latency_ms": latency_ms if _number(latency_ms) else None,
            "cost_usd": _total(costs), "tokens": _total(tokens)}


def repeated_metrics(runs: list) -> dict:
    """One case run N times (results with latency_ms, cost_usd, tokens): the mean latency; the
    cost and tokens of all N runs (every run was paid for)."""
    latencies = [r.latency_ms for r in runs if _number(r.latency_ms)]
    return {"latency_ms": round(sum(latencies) / len(latencies)) if latencies else None,
            "cost_usd": _total(r.cost_usd for r in runs), "tokens": _total(r.tokens for r in runs)}
