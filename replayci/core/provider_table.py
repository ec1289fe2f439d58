"""The live providers as plain data: their names, key variables, wire formats and models.

providers/ builds its table (with the SDK factories) on this; the layers below it (checks/,
pack/, config/) and the command line's help read it here, without importing providers/.
"""
from __future__ import annotations

import re

from .records import record

# Read before a provider's own variable: one setting for whichever provider a run uses.
PROVIDER_KEY_VARIABLE = "REPLAYCI_PROVIDER_KEY"

# The model names each vendor's own API serves (a model named otherwise may be anyone's).
MODEL_VENDORS = {
    "OpenAI": re.compile(r"(gpt-|chatgpt-|o[134](-|$)|text-davinci)"),
    "Anthropic": re.compile(r"claude-"),
    "Google": re.compile(r"(models/)?(gemini|gemma)-"),
}


@record
class LiveProvider:
    """What replayci knows of a live provider without importing its SDK."""

    own_keys: tuple[str, ...]  # its own API key variables, first set wins; () when its SDK finds credentials
    wire: str  # the format it speaks (a formats/ module's NAME)
    vendor: str | None  # whose models it serves (MODEL_VENDORS); None: any vendor's (Bedrock names its own ids)
    sdk: str  # the package its SDK comes in
    extra: str | None = None  # the replayci extra that installs it (None: a dependency of replayci)

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The variables its API key is read from, first set wins."""
        return (PROVIDER_KEY_VARIABLE, *self.own_keys) if self.own_keys else ()


LIVE_PROVIDERS: dict[str, LiveProvider] = {
    "openai": LiveProvider(("OPENAI_API_KEY",), "openai-chat", "OpenAI", "openai"),
    "openai-responses": LiveProvider(("OPENAI_API_KEY",), "openai-responses", "OpenAI", "openai"),
    "anthropic": LiveProvider(("ANTHROPIC_API_KEY",), "anthropic", "Anthropic", "anthropic"),
    "gemini": LiveProvider(("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini", "Google", "google-genai", "gemini"),
    "bedrock": LiveProvider((), "bedrock", None, "boto3", "bedrock"),
}

# Every variable an API key may come from: never handed to a tool command.
KEY_VARIABLES = tuple(dict.fromkeys(v for p in LIVE_PROVIDERS.values() for v in p.key_variables))

# What --provider takes: the recordings, or a live provider.
PROVIDERS = ("recorded", *LIVE_PROVIDERS)


def model_vendor(model: str) -> str | None:
    """The vendor whose own API serves *model*, when its name says so."""
    return next((vendor for vendor, pattern in MODEL_VENDORS.items() if pattern.match(model)), None)


def foreign_model(provider: str, model: str, *, base_url: str | None = None) -> str | None:
    """The vendor of *model* when *provider* cannot serve it (an OpenAI model on anthropic), else None.

    An OpenAI-compatible endpoint (openai with a base_url: a gateway, vLLM, Ollama) may serve any
    vendor's model; Bedrock names models by its own ids (anthropic.claude-...), never by a bare name.
    """
    entry = LIVE_PROVIDERS[provider]
    if entry.wire == "openai-chat" and base_url:
        return None
    vendor = model_vendor(model)
    return vendor if vendor is not None and vendor != entry.vendor else None
