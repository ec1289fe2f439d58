"""Live providers: one table of name -> SDK factory, key variables and wire format.

The factories import the provider SDKs only when a live provider is chosen, so
`--provider recorded` never imports openai, anthropic or httpx. The names, key variables and
wire formats are core.provider_table's plain data, which the layers below this one read.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.provider_table import LIVE_PROVIDERS, LiveProvider
from .base import Provider


def _openai(**kw) -> Provider:
    from .openai import OpenAIProvider  # why: the SDK is imported only when this provider is chosen

    return OpenAIProvider(**kw)


def _anthropic(**kw) -> Provider:
    from .anthropic import AnthropicProvider  # why: the SDK is imported only when this provider is chosen

    return AnthropicProvider(**kw)


# The client for each wire format: an OpenAI-compatible service is one more row of the data.
_CLIENTS: dict[str, Callable[..., Provider]] = {"openai": _openai, "anthropic": _anthropic}


@dataclass(frozen=True)
class ProviderEntry(LiveProvider):
    """One live provider: its key variables and wire format, and how to build its client."""

    factory: Callable[..., Provider]


TABLE: dict[str, ProviderEntry] = {
    name: ProviderEntry(p.key_variable, p.wire, _CLIENTS[p.wire]) for name, p in LIVE_PROVIDERS.items()
}


def api_key_for(provider: str, environ: Mapping[str, str]) -> str | None:
    """The API key for a live provider, from the environment only."""
    return next((environ[v] for v in TABLE[provider].key_variables if environ.get(v)), None)


def missing_key_message(provider: str) -> str:
    """The one line that says which variable to set."""
    shared, own = TABLE[provider].key_variables
    return f"no API key for {provider}: set {own} (or {shared}) in the environment"


def create(provider: str, *, api_key: str, base_url: str | None = None) -> Provider:
    """A live provider instance."""
    return TABLE[provider].factory(api_key=api_key, base_url=base_url)


def close_quietly(provider: Provider) -> None:
    """Close *provider*'s connection pool; a failure to close must not hide a run's outcome."""
    try:
        provider.close()
    except Exception:  # noqa: BLE001 - see the docstring
        pass
