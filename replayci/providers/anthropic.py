"""The Anthropic messages provider: neutral requests in the Messages API's form."""

from __future__ import annotations

import anthropic as _sdk

from . import http
from .errors import StainlessProvider


class AnthropicProvider(StainlessProvider):
    """Sends Messages requests with the official SDK; one attempt per call, no SDK retries.

    Parameters its create() does not name (the 2.x SDK takes no temperature) go in extra_body.
    """

    name = "anthropic"
    wire = "anthropic"
    shape_key = "content"
    what = "a message"

    def __init__(self, *, api_key: str, base_url: str | None = None, stream: bool = False) -> None:
        # max_retries=0: the engine's retry policy is the only one.
        client = _sdk.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                http_client=http.client(_sdk))
        super().__init__(_sdk, client, client.messages, api_key=api_key, stream=stream)
