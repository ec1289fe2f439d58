"""vcrpy cassettes (YAML and JSON, as vcrpy, pytest-recording and pydantic-ai write them):
`interactions[].request{method, uri, body, headers}` and `response{status, headers, body{string}}`,
bodies as text, `!!binary` or base64, content-encoded or not, and pydantic-ai's `parsed_body`.

YAML is read with the safe loader: a tag that would build a Python object (`!!python/object`) is
refused, never constructed."""
from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from ...core.errors import ConfigError, Problem
from . import Reading, read_bytes
from .http import Http, each_entry

NAME = "cassette"
_YAML_START = re.compile(rb"(?:\A|\n)interactions:")
# LangChain's partner packages serialize vcrpy's own lists, `requests:` and `responses:` (keys
# sorted: `requests` first), gzipped.
_YAML_PAIRS = re.compile(rb"requests:\n")
_JSON_START = re.compile(rb"\A\s*\{")


def detect(path: str, head: bytes) -> bool:
    """A cassette: YAML whose top level has `interactions:` (or starts with LangChain's
    `requests:`), or a JSON object with "interactions" (and no HAR `log`)."""
    if _JSON_START.match(head):
        return b'"interactions"' in head and b'"log"' not in head[:200]
    return _YAML_START.search(head) is not None or _YAML_PAIRS.match(head) is not None


def read(path: str, display: str) -> Reading:
    """Every interaction of the cassette at *path*, as model exchanges or passed over."""
    data = read_bytes(path, display)
    doc = _load_json(data, display) if _JSON_START.match(data) else _load_yaml(data, display)
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    if interactions is None and isinstance(doc, dict) and isinstance(doc.get("requests"), list) \
            and isinstance(doc.get("responses"), list) and len(doc["requests"]) == len(doc["responses"]):
        interactions = [{"request": q, "response": a} for q, a in zip(doc["requests"], doc["responses"], strict=True)]
    if not isinstance(interactions, list):
        raise ConfigError(Problem(display, None, None, "not a cassette: expected a top-level 'interactions' list "
                                  "(vcrpy's form)"))
    return each_entry(Reading(display, NAME), interactions, _http, f"{display}: interaction")


def _load_json(data: bytes, display: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(Problem(display, None, None, f"not UTF-8 text ({exc})")) from None
    except RecursionError:
        raise ConfigError(Problem(display, None, None, "nested too deeply for replayci to read")) from None
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        raise ConfigError(Problem(display, line, col, f"not valid JSON: {getattr(exc, 'msg', exc)}")) from None


def _load_yaml(data: bytes, display: str) -> Any:
    import yaml  # why: only cassettes in YAML need it

    from ._yamlload import Loader  # why: with yaml, only when a cassette is YAML

    try:
        doc = yaml.load(data, Loader=Loader)  # noqa: S506 - the safe loader: no tag builds an object
    except yaml.YAMLError as exc:
        _check_utf8(data, display)  # a byte that is not UTF-8: named by its line, not its offset
        raise _located(exc, display) from None
    # No `version`: pydantic-ai writes none. A cassette cut short reads as far as it goes (a cut
    # inside an entry fails to parse, and is named with its line).
    return doc


def _check_utf8(data: bytes, display: str) -> None:
    """A ConfigError naming the line, column and value of the first byte that is not UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(Problem(display, line, column, f"byte 0x{data[exc.start]:02x} is not UTF-8 (the file "
                                  "is in another encoding, Latin-1 or Windows-1252?): save it as UTF-8")) from None


def _located(exc: Exception, display: str) -> ConfigError:
    """A YAML error as a ConfigError with its line and column."""
    import yaml  # why: only cassettes in YAML need it

    from ._yamlload import AliasBomb  # why: with yaml, only when a cassette is YAML

    if isinstance(exc, AliasBomb):
        mark = exc.problem_mark
        return ConfigError(Problem(display, mark.line + 1, mark.column + 1, f"refused: {exc.problem}"))
    if not isinstance(exc, yaml.MarkedYAMLError):
        return ConfigError(Problem(display, None, None, f"not valid YAML: {exc}"))
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    problem = str(exc.problem or exc)
    if "python/" in problem:
        tag = problem.split("tag '", 1)[-1].split("'", 1)[0]
        return ConfigError(Problem(display, line, col, f"the cassette holds a Python object tag ({tag}): "
                                   "replayci never builds objects from a file; refused"))
    return ConfigError(Problem(display, line, col, f"not valid YAML (truncated?): {problem}"))


def _http(n: int, interaction: Any, where: str) -> Http:
    request = interaction.get("request") if isinstance(interaction, dict) else None
    response = interaction.get("response") if isinstance(interaction, dict) else None
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise ConfigError(Problem(where, None, None, "expected an object with 'request' and 'response'"))
    uri = request.get("uri")
    if not isinstance(uri, str):
        raise ConfigError(Problem(where, None, None, "the request has no 'uri'"))
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if type(code) is not int:
        raise ConfigError(Problem(where, None, None, "the response has no status code (status: {code: N})"))
    return Http(n, str(request.get("method") or "GET"), uri, _headers(request.get("headers")),
                _body(request, where, "request"), code, _headers(response.get("headers")),
                _body(response, where, "response") or b"")


def _headers(headers: Any) -> list[tuple[str, str]]:
    """vcrpy's headers ({name: [values]} or {name: value}) as (name, value) pairs."""
    out = []
    for name, values in (headers or {}).items() if isinstance(headers, dict) else ():
        for value in values if isinstance(values, list) else [values]:
            out.append((str(name), str(value)))
    return out


def _body(part: dict, where: str, what: str) -> bytes | None:
    """A request's or response's body as bytes: `parsed_body` (pydantic-ai), a string, `!!binary`,
    `{string: ...}` or `{base64_string: ...}`."""
    if "parsed_body" in part:
        return json.dumps(part["parsed_body"], ensure_ascii=False).encode("utf-8")
    body = part.get("body")
    if isinstance(body, dict):
        if "base64_string" in body:
            return _base64(body["base64_string"], where, what)
        body = body.get("string")
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", "surrogatepass")
    raise ConfigError(Problem(where, None, None, f"the {what} body is a {type(body).__name__}, expected text"))


def _base64(text: Any, where: str, what: str) -> bytes:
    try:
        return base64.b64decode(str(text), validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(Problem(where, None, None, f"the {what} body is not valid base64 ({exc})")) from None
