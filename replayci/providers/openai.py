"""The OpenAI chat-completions provider (also any OpenAI-compatible endpoint via base_url)."""

from __future__ import annotations

import openai as _sdk

from . import http
from .errors import StainlessProvider


class OpenAIProvider(StainlessProvider):
    """Sends chat completions with the official SDK; one attempt per call, no SDK retries."""

    name = "openai"
    wire = "openai-chat"
    shape_key = "choices"
    what = "a chat completion"
    # A streamed call asks for usage in its last chunk, as a non-streamed answer has it.
    stream_kwargs = {"stream": True, "stream_options": {"include_usage": True}}

    def __init__(self, *, api_key: str, base_url: str | None = None, stream: bool = False) -> None:
        # max_retries=0: the engine's retry policy is the only one.
        client = _sdk.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                             http_client=http.client(_sdk))
        super().__init__(_sdk, client, client.chat.completions, api_key=api_key, stream=stream)
