"""Which model API a recorded request went to, from its URL path (and, where one path serves
several wire forms, its body): the wire format replayci reads it in, the model a path names, or
why it is not imported — not a model call, or a model call of an API replayci does not check."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    """What a request path is: a model call in `api` (a format of `replayci.formats`), a model call
    replayci does not read (`unsupported` says which), or no model call (`skipped` says what)."""

    api: str | None = None
    model: str | None = None  # the model the path names (Gemini, Bedrock)
    streams: bool = False  # the path itself asks for a stream (Gemini, Bedrock)
    unsupported: str = ""
    skipped: str = ""


# (path pattern, format). A pattern's group 1, when it has one, is the model.
_MODEL_CALLS = (
    (re.compile(r"/chat/completions\Z"), "openai-chat"),
    (re.compile(r"/responses\Z"), "openai-responses"),
    (re.compile(r"/messages\Z"), "anthropic"),
    (re.compile(r"/models/([^/:]+):generateContent\Z"), "gemini"),
    (re.compile(r"/models/([^/:]+):streamGenerateContent\Z"), "gemini+stream"),
    (re.compile(r"/model/([^/]+)/converse\Z"), "bedrock"),
    (re.compile(r"/model/([^/]+)/converse-stream\Z"), "bedrock+stream"),
    (re.compile(r"/model/([^/]+)/invoke\Z"), "invoke"),
    (re.compile(r"/model/([^/]+)/invoke-with-response-stream\Z"), "invoke+stream"),
    (re.compile(r"/api/chat\Z"), "ollama"),
)
# Model calls of APIs replayci does not check, and how to name them.
_UNSUPPORTED = (
    (re.compile(r"/completions\Z"), "a legacy text completion (/completions): replayci checks chat APIs"),
    (re.compile(r"/api/generate\Z"), "an Ollama /api/generate call: replayci reads Ollama's /api/chat"),
    (re.compile(r"/v[12]/chat\Z"), "a Cohere chat call: replayci does not read Cohere's API"),
    (re.compile(r"/models/[^/:]+:(predict|generateText|generateMessage)\Z"),
     "a Google prediction or PaLM call: replayci reads Gemini generateContent"),
)
# A chat path that some APIs serve in the chat-completions form (Writer's /v1/chat) and Cohere's v1
# in its own (`message` and `chat_history`); Cohere's v2 /v2/chat is Cohere's whatever its body.
_OPENAI_LIKE_CHAT = re.compile(r"/v1/chat\Z")


def _chat_completions_body(body: Any) -> bool:
    """Whether a request body is in the chat-completions form: messages with roles, none of
    Cohere v1's keys."""
    if not isinstance(body, dict) or "message" in body or "chat_history" in body:
        return False
    messages = body.get("messages")
    return isinstance(messages, list) and bool(messages) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages)


# Paths of a model provider's API that are no model call.
_NOT_MODEL = re.compile(r"/(embeddings|audio/[a-z_]+|images/[a-z_]+|files|uploads|moderations|batches|"
                        r"fine_tuning/[a-z_/]+|models|messages/count_tokens|models/[^/:]+:(embedContent|"
                        r"batchEmbedContents|countTokens))(/[^/]*)?\Z")


def classify(method: str, path: str, body: Any = None) -> Endpoint:
    """The endpoint of a request: *path* is the URL's path, *body* the parsed request body."""
    if method.upper() != "POST":
        return Endpoint(skipped=f"a {method.upper()} request, not a model call")
    for pattern, api in _MODEL_CALLS:
        m = pattern.search(path)
        if m is None:
            continue
        model = m.group(1) if pattern.groups else None
        api, _, stream = api.partition("+")
        if api == "invoke":  # Bedrock InvokeModel: the model's own body (Claude's is Anthropic's)
            api = "anthropic" if isinstance(body, dict) and "anthropic_version" in body else "bedrock"
        return Endpoint(api=api, model=model, streams=bool(stream))
    if _OPENAI_LIKE_CHAT.search(path) and _chat_completions_body(body):
        return Endpoint(api="openai-chat")  # Writer's /v1/chat takes and answers chat completions
    for pattern, why in _UNSUPPORTED:
        if pattern.search(path):
            return Endpoint(unsupported=why)
    if _NOT_MODEL.search(path):
        return Endpoint(skipped=f"{path.rsplit('/', 1)[-1].split(':')[-1]}: not a model call")
    return Endpoint(skipped="not a model API path")
