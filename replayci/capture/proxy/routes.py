"""The wire APIs the proxy serves: which path is which API, where it goes upstream, whether a
request streams, the headers that pass, the secrets a request carries, and each provider's own
error body (so an SDK reports a proxy error the way it reports the provider's)."""
from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...core.provider_table import KEY_VARIABLES

# Upstream name -> the base URL its SDK uses by default (what --upstream NAME=URL replaces).
DEFAULT_UPSTREAMS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
# Upstream name -> the proxy's path prefix that stands for that base URL.
MOUNTS = {"openai": "/v1", "anthropic": "/anthropic", "gemini": "/gemini"}
# The variables the official SDKs read their base URL from (Python and Node alike), and the
# upstream each points at. OPENAI_API_BASE: openai-python before 1.0 and LangChain read it.
BASE_URL_VARIABLES = {
    "OPENAI_BASE_URL": "openai",
    "OPENAI_API_BASE": "openai",
    "ANTHROPIC_BASE_URL": "anthropic",
    "GOOGLE_GEMINI_BASE_URL": "gemini",
}
# In replay mode an SDK still wants a key before it sends anything: these stand in when unset.
REPLAY_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
REPLAY_PLACEHOLDER_KEY = "replayci-replay-no-key"
ENDPOINTS = ("POST /v1/chat/completions", "POST /v1/responses", "POST /anthropic/v1/messages",
             "POST /gemini/v1beta/models/MODEL:generateContent (and :streamGenerateContent, also under /v1)")

_GEMINI = re.compile(r"/gemini/(v1beta|v1)/models/([^/:]+):(generateContent|streamGenerateContent)\Z")
_FIXED = {
    "/v1/chat/completions": ("openai-chat", "openai"),
    "/v1/responses": ("openai-responses", "openai"),
    "/anthropic/v1/messages": ("anthropic", "anthropic"),
}
# Request headers that belong to one connection (or that the proxy sets itself), never forwarded.
_HOP_BY_HOP = frozenset(("host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
                         "trailer", "upgrade", "proxy-authorization", "proxy-connection", "accept-encoding"))
# Response headers the proxy does not pass back: framing and encoding are its own.
_NOT_RETURNED = frozenset(("content-length", "content-encoding", "transfer-encoding", "connection",
                           "keep-alive", "date", "server"))
# A header or query parameter whose name says it carries a credential, however spelled.
_SECRET_NAME = re.compile(r"(auth|key|token|secret|password|cookie|signature|credential)", re.I)
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 413: "INVALID_ARGUMENT", 502: "UNAVAILABLE"}
_ANTHROPIC_TYPE = {400: "invalid_request_error", 404: "not_found_error", 413: "request_too_large", 502: "api_error"}
_OPENAI_TYPE = {400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error",
                502: "server_error"}


@dataclass(frozen=True)
class Route:
    """One request's endpoint: its wire format, upstream, and the model its path names."""

    api: str  # the format name: openai-chat, openai-responses, anthropic, gemini
    upstream: str  # openai, anthropic, gemini
    path: str
    model: str | None = None  # Gemini names the model in the path
    streams_by_path: bool = False  # Gemini's :streamGenerateContent

    @property
    def upstream_path(self) -> str:
        """The path below the upstream's base URL."""
        return self.path[len(MOUNTS[self.upstream]):]

    def streams(self, body: dict) -> bool:
        """Whether the request asks for a streamed answer."""
        return self.streams_by_path or body.get("stream") is True


def resolve(path: str) -> Route | None:
    """The route of a request path, or None when the proxy does not serve it."""
    fixed = _FIXED.get(path)
    if fixed is not None:
        return Route(fixed[0], fixed[1], path)
    m = _GEMINI.match(path)
    if m is not None:
        return Route("gemini", "gemini", path, model=m.group(2), streams_by_path=m.group(3) == "streamGenerateContent")
    return None


def upstream_of_path(path: str) -> str:
    """Whose error shape a request to *path* gets, even when the path is unknown."""
    for name in ("anthropic", "gemini"):
        if path == MOUNTS[name] or path.startswith(MOUNTS[name] + "/"):
            return name
    return "openai"


def error_body(upstream: str, status: int, message: str, code: str | None = None) -> dict:
    """An error body shaped as *upstream*'s own, so its SDK raises its usual error type."""
    if upstream == "anthropic":
        return {"type": "error", "error": {"type": _ANTHROPIC_TYPE.get(status, "api_error"), "message": message}}
    if upstream == "gemini":
        return {"error": {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}
    return {"error": {"message": message, "type": _OPENAI_TYPE.get(status, "server_error"), "param": None,
                      "code": code}}


def forwarded_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The app's request headers as sent upstream (its auth included), asking for no compression."""
    out = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]
    out.append(("accept-encoding", "identity"))
    return out


def returned_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream's response headers as handed back to the app."""
    return {k: v for k, v in headers if k.lower() not in _NOT_RETURNED}


def secrets_of(headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]],
               environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every credential a request carries (auth headers, a `key` parameter) and the API keys in
    the environment: none of them may reach the pack, in whatever part of an exchange."""
    found = set(environment_secrets(environ))
    for name, value in (*headers, *query):
        if credential_name(name) and value:
            found.add(value)
            found.update(credential_parts(value))
    # Longest first: a key that contains another is replaced whole.
    return tuple(sorted(found, key=len, reverse=True))


def credential_name(name: str) -> bool:
    """Whether a header, query parameter or form field named *name* carries a credential, by its
    name (Authorization, X-Amz-Security-Token, Cookie, Ocp-Apim-Subscription-Key, api_key, ...)."""
    return _SECRET_NAME.search(name) is not None


def environment_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The API keys the environment holds: whatever recording they turn up in, never written."""
    environ = os.environ if environ is None else environ
    return tuple(environ[var] for var in (*KEY_VARIABLES, "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN")
                 if environ.get(var))


# Where a credential's value splits into the parts an upstream may say back alone: the scheme
# and the key ("ApiKey K", "Bearer\tK"), a Digest's fields (response="K"), a list.
_PARTS = re.compile(r"[\s,;=\"']+")
_MIN_PART = 8  # shorter parts ("Bearer", "realm") are words, not keys
_WORD = re.compile(r"[A-Za-z-]{1,19}\Z")  # "Credential", "SignedHeaders": field names, not keys


def credential_parts(value: str) -> set[str]:
    """The parts of a credential header's value that are keys on their own, whatever its
    scheme; a Basic credential's user and password decoded."""
    parts = {p for p in _PARTS.split(value) if len(p) >= _MIN_PART and not _WORD.match(p)}
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() == "basic" and token.strip():
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            decoded = ""
        if decoded:
            parts.add(decoded)
            parts.update(p for p in decoded.split(":", 1) if len(p) >= _MIN_PART)
    return parts


def kept_query(query: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The query parameters that belong to a request's identity (`alt=sse`), credentials left out."""
    return {k: v for k, v in query if not _SECRET_NAME.search(k)}


def base_urls(port: int) -> dict[str, str]:
    """The base-URL variables pointing an SDK at a proxy on *port*."""
    root = f"http://127.0.0.1:{port}"
    return {var: root + MOUNTS[upstream] for var, upstream in BASE_URL_VARIABLES.items()}


def command_environment(port: int, mode: str, environ: Mapping[str, Any]) -> dict[str, str]:
    """The environment of a command run under the proxy: the SDKs pointed at it and, for a
    replay, placeholder keys where none is set (an SDK refuses to start without one)."""
    env = {**environ, **base_urls(port)}
    if mode == "replay":
        for var in REPLAY_KEY_VARIABLES:
            env.setdefault(var, REPLAY_PLACEHOLDER_KEY)
    return env


_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


def trace_context(traceparent: str | None) -> dict | None:
    """The trace and span ids of a W3C `traceparent` header (an instrumented app's HTTP client
    span the call was sent in), or None when there is none or it is not one (all-zero ids are
    invalid by the W3C rule)."""
    found = _TRACEPARENT.match(traceparent.strip().lower()) if isinstance(traceparent, str) else None
    if found is None or not int(found.group(1), 16) or not int(found.group(2), 16):
        return None
    return {"trace_id": found.group(1), "span_id": found.group(2)}
