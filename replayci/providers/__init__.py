"""Providers turn a request document into a provider payload; a registry of factories.

The factories import the provider SDKs only when a live provider is chosen, so
`--provider recorded` never imports openai, anthropic or httpx.
"""
from __future__ import annotations

from collections.abc import Callable

from .base import Provider

LIVE_PROVIDERS = ("openai", "anthropic")
PROVIDER_NAMES = ("recorded", *LIVE_PROVIDERS)

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _openai(**kw) -> Provider:
    from .openai import OpenAIProvider

    return OpenAIProvider(**kw)


def _anthropic(**kw) -> Provider:
    from .anthropic import AnthropicProvider

    return AnthropicProvider(**kw)


FACTORIES: dict[str, Callable[..., Provider]] = {"openai": _openai, "anthropic": _anthropic}


def api_key_for(provider: str, environ) -> str | None:
    """The API key for a live provider, from the environment only."""
    return environ.get("REPLAYCI_PROVIDER_KEY") or environ.get(KEY_VARIABLES[provider]) or None


def create(provider: str, *, api_key: str, base_url: str | None = None) -> Provider:
    """A live provider instance."""
    return FACTORIES[provider](api_key=api_key, base_url=base_url)
