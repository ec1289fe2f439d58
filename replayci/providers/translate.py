"""Neutral requests -> provider SDK call arguments (pure functions, no SDK imports).

The formats turn the neutral request into each API's request body (`from_neutral`); this module
only fits a body to an SDK's `create()`: the run's model wins, streaming is the provider's to
choose, and parameters the installed SDK does not name travel in `extra_body`.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..formats import TranslationError, from_neutral

# Never taken from a request document: the run decides the model and whether to stream.
_NEVER = frozenset({"model", "stream", "stream_options"})


def sdk_kwargs(body: dict, model: str, accepted: Collection[str] | None = None) -> dict:
    """kwargs for an SDK's create(): *model*, the body's parameters the SDK names (*accepted*,
    from its signature; None: all), the others in ``extra_body`` (e.g. vLLM's ``top_k``)."""
    kwargs: dict[str, Any] = {"model": model}
    extra: dict[str, Any] = {}
    for key, value in body.items():
        if key in _NEVER:
            continue
        if accepted is None or key in accepted:
            kwargs[key] = value
        else:
            extra[key] = value
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def to_wire(request: dict, wire: str, model: str, *, accepted: Collection[str] | None = None) -> dict:
    """kwargs for the SDK call of the *wire* format: the neutral *request* in that API's form."""
    if not isinstance(request.get("messages"), list):
        raise TranslationError("the request has no 'messages' list")
    return sdk_kwargs(from_neutral(request, wire), model, accepted)
