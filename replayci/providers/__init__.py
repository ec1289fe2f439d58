"""Live providers: one table of name -> SDK factory, key variables and wire format.

The factories import the provider SDKs only when a live provider is chosen, so
`--provider recorded` never imports openai, anthropic, google-genai, boto3 or httpx. The names,
key variables and wire formats are core.provider_table's plain data, which the layers below this
one read.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from ..core.errors import ConfigError
from ..core.provider_table import LIVE_PROVIDERS, LiveProvider
from ..core.records import record
from .base import Provider

# The client module and class for each wire format.
_CLIENTS = {
    "openai-chat": ("openai", "OpenAIProvider"),
    "openai-responses": ("openai_responses", "OpenAIResponsesProvider"),
    "anthropic": ("anthropic", "AnthropicProvider"),
    "gemini": ("gemini", "GeminiProvider"),
    "bedrock": ("bedrock", "BedrockProvider"),
}


def client_module(provider: str):
    """The module of *provider*'s client; a missing SDK is a ConfigError that says what to install."""
    entry = LIVE_PROVIDERS[provider]
    try:
        # why: the SDK is imported only when this provider is chosen
        return importlib.import_module(f"{__name__}.{_CLIENTS[entry.wire][0]}")
    except ModuleNotFoundError as exc:
        if (exc.name or "replayci").startswith("replayci"):
            raise
        install = f"pip install 'replayci[{entry.extra}]'" if entry.extra else f"pip install {entry.sdk}"
        raise ConfigError(f"--provider {provider} needs the {entry.sdk} package ({exc.name} is missing): "
                          f"{install}") from None


def _factory(provider: str) -> Callable[..., Provider]:
    def build(**kw) -> Provider:
        return getattr(client_module(provider), _CLIENTS[LIVE_PROVIDERS[provider].wire][1])(**kw)

    return build


@record
class ProviderEntry(LiveProvider):
    """One live provider: its key variables and wire format, and how to build its client."""

    factory: Callable[..., Provider] | None = None


TABLE: dict[str, ProviderEntry] = {
    name: ProviderEntry(p.own_keys, p.wire, p.vendor, p.sdk, p.extra, factory=_factory(name))
    for name, p in LIVE_PROVIDERS.items()
}


def api_key_for(provider: str, environ: Mapping[str, str]) -> str | None:
    """The API key for a live provider, from the environment only (Bedrock: the AWS secret key
    boto3 finds, so that it is scrubbed from answers like any key)."""
    entry = TABLE[provider]
    if not entry.own_keys:
        return client_module(provider).find_credentials(environ)
    # Whitespace around a key (a secret pasted with its newline) is no part of it: sent as is,
    # it would make every request an illegal header.
    return next((environ[v].strip() for v in entry.key_variables if (environ.get(v) or "").strip()), None)


def missing_key_message(provider: str) -> str:
    """The one line that says which variable to set."""
    entry = TABLE[provider]
    if not entry.own_keys:
        return (f"no AWS credentials for {provider}: boto3 found none (set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)")
    shared, *own = entry.key_variables
    return f"no API key for {provider}: set {' or '.join(own)} (or {shared}) in the environment"


def base_url_hint(provider: str, base_url: str | None) -> str | None:
    """A warning when *base_url* ends in /v1 for a provider whose SDK adds /v1 itself, else None."""
    if TABLE[provider].sdk != "anthropic" or not base_url or not base_url.rstrip("/").endswith("/v1"):
        return None
    # Not refused: a gateway may route any path, but the vendor's own API answers 404.
    return (f"--base-url {base_url} ends in /v1, but the Anthropic SDK adds /v1 itself (calls go to "
            ".../v1/v1/messages): drop the trailing /v1")


def create(provider: str, *, api_key: str, base_url: str | None = None, stream: bool = False) -> Provider:
    """A live provider instance (streaming its calls when *stream*)."""
    factory = TABLE[provider].factory
    assert factory is not None
    return factory(api_key=api_key, base_url=base_url, stream=stream)


def close_quietly(provider: Provider) -> None:
    """Close *provider*'s connection pool; a failure to close must not hide a run's outcome."""
    try:
        provider.close()
    except Exception:  # noqa: BLE001 - see the docstring
        pass
