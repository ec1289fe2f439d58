"""The OpenAI Responses provider (`responses.create`; also Responses-compatible endpoints via base_url)."""

from __future__ import annotations

import openai as _sdk

from . import http
from .errors import StainlessProvider


class OpenAIResponsesProvider(StainlessProvider):
    """Sends Responses requests with the official SDK; one attempt per call, no SDK retries."""

    name = "openai-responses"
    wire = "openai-responses"
    shape_key = "output"
    what = "a Responses object"

    def __init__(self, *, api_key: str, base_url: str | None = None, stream: bool = False) -> None:
        # max_retries=0: the engine's retry policy is the only one.
        client = _sdk.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                             http_client=http.client(_sdk))
        super().__init__(_sdk, client, client.responses, api_key=api_key, stream=stream)
