"""The live providers as plain data: their names, key variables and wire formats.

providers/ builds its table (with the SDK factories) on this; the layers below it (checks/,
pack/, config.py) and the command line's help read it here, without importing providers/.
"""
from __future__ import annotations

from dataclasses import dataclass

# Read before a provider's own variable: one setting for whichever provider a run uses.
PROVIDER_KEY_VARIABLE = "REPLAYCI_PROVIDER_KEY"


@dataclass(frozen=True)
class LiveProvider:
    """What replayci knows of a live provider without importing its SDK."""

    key_variable: str  # the provider's own API key variable
    wire: str  # the request and payload format it speaks: openai (chat completions) or anthropic (messages)

    @property
    def key_variables(self) -> tuple[str, str]:
        """The variables its API key is read from, first set wins."""
        return (PROVIDER_KEY_VARIABLE, self.key_variable)


LIVE_PROVIDERS: dict[str, LiveProvider] = {
    "openai": LiveProvider("OPENAI_API_KEY", "openai"),
    "anthropic": LiveProvider("ANTHROPIC_API_KEY", "anthropic"),
}

# Every variable an API key may come from: never handed to a tool command.
KEY_VARIABLES = (PROVIDER_KEY_VARIABLE, *(p.key_variable for p in LIVE_PROVIDERS.values()))

# What --provider takes: the recordings, or a live provider.
PROVIDERS = ("recorded", *LIVE_PROVIDERS)
