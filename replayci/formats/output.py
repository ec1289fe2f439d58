"""Structured output: the JSON Schema a request asks its answer to follow, in whichever
provider's form it asks (OpenAI chat `response_format`, Responses `text.format`, Gemini
`generationConfig.responseSchema` / `responseJsonSchema`, Anthropic `output_format` /
`output_config.format`), and the answer's JSON read into the normalized document's `output`."""
from __future__ import annotations

from typing import Any

from ..core.jsonvalue import strict_loads
from ._common import as_dict
from .gemini import lower_schema

# Any JSON value: what a request that asks for JSON without a schema accepts.
ANY_JSON: dict = {}
_OBJECT = {"type": "object"}


def _format_schema(fmt: dict, nested: bool) -> Any:
    """The schema of an OpenAI or Anthropic format object ({type: json_schema, ...}; *nested*:
    chat's form, the schema inside `json_schema`), or None when it asks for no JSON."""
    kind = fmt.get("type")
    if kind == "json_object":
        return _OBJECT
    if kind != "json_schema":
        return None
    schema = as_dict(fmt.get("json_schema")).get("schema") if nested else fmt.get("schema")
    return schema if isinstance(schema, (dict, bool)) else ANY_JSON


def _gemini_schema(config: dict) -> Any:
    """The schema of a Gemini generationConfig (either spelling), None when it asks for text."""
    for camel, snake, lower in (("responseJsonSchema", "response_json_schema", False),
                                ("responseSchema", "response_schema", True)):
        schema = config.get(camel, config.get(snake))
        if isinstance(schema, dict):
            return lower_schema(schema) if lower else schema
    mime = config.get("responseMimeType", config.get("response_mime_type"))
    return ANY_JSON if isinstance(mime, str) and mime.strip().lower() == "application/json" else None


def output_schema(request: Any) -> Any:
    """The JSON Schema the answer to *request* (neutral, or in its provider's form) must
    follow: a schema, {} when any JSON will do; None when the request asks for no structured
    output."""
    if not isinstance(request, dict):
        return None
    found = None
    if "response_format" in request:
        found = _format_schema(as_dict(request["response_format"]), nested=True)
    if found is None and "text" in request:
        found = _format_schema(as_dict(as_dict(request["text"]).get("format")), nested=False)
    if found is None and ("output_format" in request or "output_config" in request):
        fmt = request.get("output_format") or as_dict(request.get("output_config")).get("format")
        found = _format_schema(as_dict(fmt), nested=False)
    if found is None and ("generationConfig" in request or "generation_config" in request):
        found = _gemini_schema(as_dict(request.get("generationConfig", request.get("generation_config"))))
    return found


def parse_output(text: Any) -> tuple[bool, Any, str]:
    """(parsed, value, why not): the answer's text read as one JSON value."""
    if not isinstance(text, str):
        return False, None, "the answer has no text"
    try:
        return True, strict_loads(text), ""
    except ValueError as exc:
        return False, None, f"not valid JSON ({exc})"
    except RecursionError:
        return False, None, "nested too deeply to read"


def with_output(response: dict, request: Any) -> dict:
    """*response* with `output`, its text read as JSON, when *request* asks for structured
    output and the answer is text (no tool call) that parses; else *response* as it is."""
    if "output" in response or not response.get("success", True) or response.get("tool_calls"):
        return response
    if output_schema(request) is None:
        return response
    parsed, value, _ = parse_output(response.get("content"))
    return {**response, "output": value} if parsed else response
