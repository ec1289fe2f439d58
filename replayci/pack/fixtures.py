"""Golden fixtures and recordings: read, checked for shape, turned into documents."""
from __future__ import annotations

import os
from typing import Any

from ..checks.schemas import tool_schema
from ..core.errors import ConfigError, Problem
from ..core.hashing import boundary_hashes, schema_field, tools_key, tools_key_of
from ..core.jsonvalue import json_type
from ..core.memo import Memo
from ..core.paths import display_path, inside
from ..core.records import record
from ..formats import NormalizeError, TranslationError, normalize, request_format, to_neutral
from ..formats.canonical import unnamed_call
from . import vocabulary as spec
from .sources import DEFAULT_MAX_JSON_BYTES, load_json, locate_json, parse_request_json, read_text


@record
class Fixture:
    display: str
    request: dict
    boundary: dict | None
    response: dict | None  # normalized, or None when the fixture has none
    raw: dict
    tools_key: str  # canonical JSON of request.tools: the boundary hash's input, a cache key
    mcp_server: str | None = None  # the server named by `tools: {"$mcp": NAME}`, when it is one


def _problem_at(path: str, display: str, key: tuple, message: str) -> Problem:
    """A problem located by a slow re-read of the file (only ever on the error path)."""
    try:
        doc = locate_json(read_text(path, display, max_bytes=DEFAULT_MAX_JSON_BYTES), display)
        return doc.problem(key, message)
    except ConfigError:
        return Problem(display, None, None, message)


def check_shape(raw: Any, path: str, display: str, *, recording: bool = False,
                tools_key: str | None = None) -> list[Problem]:
    """What is wrong with a fixture's (or recording's) top-level shape."""
    problems = []
    if not isinstance(raw, dict):
        return [Problem(display, 1, 1, "expected a JSON object with request and response")]
    allowed = spec.FIXTURE_KEYS
    for key in raw:
        if key not in allowed:
            problems.append(_problem_at(path, display, (key,), spec.unknown_key_message(key, allowed)))
    for key in ("request", "boundary", "meta", "original_request"):
        if key in raw and not isinstance(raw[key], dict):
            problems.append(_problem_at(path, display, (key,), f"'{key}' must be an object"))
    if "response" in raw and not isinstance(raw["response"], (dict, list, str)):
        problems.append(_problem_at(path, display, ("response",),
                                    "'response' must be an object, a JSON array of stream chunks or a stream's text"))
    status = raw.get("status")
    if "status" in raw and not (type(status) is int and 100 <= status <= 599):
        problems.append(_problem_at(path, display, ("status",), "'status' must be an HTTP status (100 to 599)"))
    request = raw.get("request")
    if isinstance(request, dict):
        problems += _request_problems(request, path, display, tools_key)
    boundary = raw.get("boundary")
    if isinstance(boundary, dict):
        problems += _boundary_problems(boundary, path, display)
    if recording and not {"response", "trajectory", "tool_results"} & raw.keys():
        problems.append(Problem(display, 1, 1, "a recording needs a 'response'"))
    return problems


def _request_problems(request: dict, path: str, display: str, tools_key: str | None) -> list[Problem]:
    """The request's messages and tools must be lists, and each tool's schema a JSON Schema."""
    problems = []
    for key in ("messages", "tools"):
        if key in request and not isinstance(request[key], list):
            problems.append(_problem_at(path, display, ("request", key), f"'{key}' must be a list"))
    if isinstance(request.get("tools"), list):
        for key, message in _tool_schema_problems_cached(request["tools"], tools_key):
            problems.append(_problem_at(path, display, ("request", "tools") + key, message))
    return problems


def _boundary_problems(boundary: dict, path: str, display: str) -> list[Problem]:
    """The boundary holds only its known keys, each a string (or null)."""
    problems = []
    for key, value in boundary.items():
        if key not in spec.BOUNDARY_KEYS:
            problems.append(_problem_at(path, display, ("boundary", key),
                                        spec.unknown_key_message(key, spec.BOUNDARY_KEYS)))
        elif value is not None and not isinstance(value, str):
            problems.append(_problem_at(path, display, ("boundary", key), f"'{key}' must be a string"))
    return problems


_schema_problems: Memo = Memo()


def tool_schema_problems(tools: list) -> list[tuple[tuple, str]]:
    """(key path below request.tools, message) of each problem a fixture offering *tools* has."""
    return _tool_schema_problems_cached(tools, None)


def _tool_schema_problems_cached(tools: list, key: str | None) -> list[tuple[tuple, str]]:
    """_tool_schema_problems, once per distinct tools list (fixtures of a contract share one);
    *key* is the tools' canonical JSON when the caller has it."""
    if key is None:
        try:
            key = tools_key(tools)
        except (TypeError, ValueError):
            return _tool_schema_problems(tools, "")
    found = _schema_problems.get(key)
    if found is None:
        found = _schema_problems.put(key, _tool_schema_problems(tools, key))
    return found


def _tool_schema_problems(tools: list, key: str) -> list[tuple[tuple, str]]:
    """(key path below request.tools, message) for each tool whose parameter schema is not
    a valid JSON Schema, or whose name an earlier tool has."""
    out = []
    names: dict[str, int] = {}
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        fn, where = (tool["function"], (i, "function")) if isinstance(tool.get("function"), dict) \
            else (tool, (i,))
        if isinstance(fn.get("name"), str):
            if fn["name"] in names:  # which one the model calls would be a guess
                out.append((where + ("name",), f"tool {fn['name']!r} is offered twice "
                            f"(first at tools[{names[fn['name']]}])"))
            names.setdefault(fn["name"], i)
        field = schema_field(fn)
        why = tool_schema(key, i, fn[field]).problem() if field is not None else None
        if why is not None:
            name = fn.get("name")
            out.append((where + (field,), f"invalid JSON Schema for tool "
                        f"{name if isinstance(name, str) else i + 1}: {why}"))
    return out


def refusal(raw: dict, display: str) -> str | None:
    """Why a pack would refuse the fixture *raw* about to be written (its shape, its request's
    lists, tool schemas and boundary, a request no form converts), or None."""
    problems = check_shape(raw, "", display)
    request = raw.get("request")
    if not problems and isinstance(request, dict) and request_format(request) not in (None, "openai-chat"):
        try:
            _neutral(request, "", display)
        except ConfigError as exc:
            problems = exc.problems
    return "; ".join(p.message for p in problems) or None


def kept_headers(raw: dict) -> dict | None:
    """The answer headers a capture or import kept (meta.headers), which may type an error."""
    meta = raw.get("meta")
    headers = meta.get("headers") if isinstance(meta, dict) else None
    return headers if isinstance(headers, dict) else None


def normalized(raw_response: Any, path: str, display: str, key: tuple = ("response",),
               status: int | None = None, headers: Any = None) -> dict:
    try:
        doc = normalize(raw_response, status=status, headers=headers)
    except NormalizeError as exc:
        raise ConfigError(_problem_at(path, display, key, str(exc))) from None
    odd = unnamed_call(doc)
    if odd is not None:
        raise ConfigError(_problem_at(path, display, key, f"tool call {odd[0]}: the tool name "
                                      f"must be a string, got {json_type(odd[1])}"))
    return doc


def request_as_read(request: dict) -> dict:
    """A fixture's request as a run reads it: in the neutral form when it is written in another
    API's form (Responses, Anthropic, Ollama, ...), so checks and boundary hashes do not depend on
    the form a fixture was written in. Raises TranslationError (and what a malformed request
    raises) when it does not convert."""
    if request_format(request) in (None, "openai-chat"):
        return request
    return to_neutral(request)[1]


def boundary_of(request: dict) -> dict:
    """The boundary a fixture of *request* pins: the hashes of the request as a run reads it (the
    one place import, the proxy and the loader agree on), and its model."""
    try:
        read = request_as_read(request)
    except (TranslationError, AttributeError, TypeError, KeyError, ValueError):  # refused when loaded
        read = request
    return {"model": request.get("model"), **boundary_hashes(read)}


def _neutral(request: dict, path: str, display: str) -> dict:
    """*request*, written in another API's form, as a run reads it (`request_as_read`)."""
    try:
        neutral = request_as_read(request)
    except (TranslationError, AttributeError, TypeError, KeyError) as exc:
        form = request_format(request)
        raise ConfigError(_problem_at(path, display, ("request",), f"the request ({form} form) cannot be "
                                      f"converted to the neutral form: {exc}")) from None
    return neutral


_tools_files: Memo = Memo()  # (real path, mtime, size) of a tools file -> (tools, canonical JSON)


def _tools_ref(request: Any) -> str | None:
    """The file a request's `tools: {"$ref": ...}` names, or None when its tools are inline."""
    tools = request.get("tools") if isinstance(request, dict) else None
    if isinstance(tools, dict) and set(tools) == {"$ref"} and isinstance(tools["$ref"], str):
        return tools["$ref"]
    return None


def _referenced_tools(ref: str, path: str, display: str) -> tuple[list, str]:
    """The tools array a fixture's `{"$ref": ...}` names (a file inside the fixture's pack,
    relative to the pack directory) and its canonical JSON; once per file and version."""
    where = ("request", "tools", "$ref")
    found = _pack_above(os.path.dirname(os.path.abspath(path)))
    pack_dir = found[0] if found else os.path.dirname(os.path.abspath(path))
    target = os.path.normpath(os.path.join(pack_dir, ref))
    if os.path.isabs(ref) or not inside(pack_dir, target):
        raise ConfigError(_problem_at(path, display, where, f"tools $ref {ref!r} leads out of the pack "
                                      f"({display_path(pack_dir)}); a pack reads only its own files"))
    try:
        st = os.stat(target)
    except OSError:
        raise ConfigError(_problem_at(path, display, where, f"tools $ref {ref!r}: no such file "
                                      f"{display_path(target)} (the path is relative to the pack directory)")) from None
    key = (os.path.realpath(target), st.st_mtime_ns, st.st_size)
    known = _tools_files.get(key)
    if known is None:
        tools = load_json(target, display_path(target))
        if not isinstance(tools, list):
            raise ConfigError(Problem(display_path(target), 1, 1,
                                      f"expected a JSON array of tools (named by {display}), got {json_type(tools)}"))
        known = _tools_files.put(key, (tools, tools_key(tools)))
    return known


def mcp_tools(request: Any) -> dict | None:
    """A request's `tools: {"$mcp": SERVER, "pinned": [...]}`, or None when its tools are not
    an MCP server's."""
    tools = request.get("tools") if isinstance(request, dict) else None
    return tools if isinstance(tools, dict) and "$mcp" in tools else None


def _pinned_tools(tools: dict, path: str, display: str) -> tuple[list, str]:
    """The tools pinned beside an MCP server's name, and their canonical JSON."""
    where = ("request", "tools")
    name = tools["$mcp"]
    if not isinstance(name, str) or not name or set(tools) - {"$mcp", "pinned"}:
        raise ConfigError(_problem_at(path, display, where, 'expected {"$mcp": SERVER NAME} '
                                      '(with "pinned": [tools] once `replayci pin` wrote them)'))
    if "pinned" not in tools:
        raise ConfigError(_problem_at(path, display, where + ("$mcp",), f"the tools of MCP server "
                                      f"'{name}' are not pinned: run `replayci pin` to fetch them"))
    if not isinstance(tools["pinned"], list):
        raise ConfigError(_problem_at(path, display, where + ("pinned",), "'pinned' must be a list "
                                      "of tools (run `replayci pin` to write it again)"))
    return tools["pinned"], tools_key(tools["pinned"])


def load_fixture(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Fixture:
    """Read a golden fixture; raises ConfigError with located problems."""
    raw, tools_key = parse_request_json(read_text(path, display, max_bytes=max_bytes), display)
    request = raw.get("request") if isinstance(raw, dict) else None
    ref, pinned, server = _tools_ref(request), None, None
    if ref is not None:
        request["tools"], tools_key = _referenced_tools(ref, path, display)
    elif mcp_tools(request) is not None:
        server = request["tools"]["$mcp"]
        pinned, tools_key = _pinned_tools(request["tools"], path, display)
        request["tools"] = pinned
    problems = check_shape(raw, path, display, tools_key=tools_key)
    if problems:
        raise ConfigError(problems)
    response = raw.get("response")
    request = request or {}
    if request_format(request) not in (None, "openai-chat"):
        if pinned is None:
            request = _neutral(request, path, display)
        else:  # pinned MCP tools are in the neutral form already, whatever the request's form
            request = {**_neutral({k: v for k, v in request.items() if k != "tools"}, path, display),
                       "tools": pinned}
        tools_key = tools_key_of(request)
    return Fixture(
        display=display,
        request=request,
        boundary=raw.get("boundary"),
        response=normalized(response, path, display, status=raw.get("status"), headers=kept_headers(raw))
        if response is not None else None,
        raw=raw,
        tools_key=tools_key if tools_key is not None else tools_key_of(request),
        mcp_server=server,
    )


@record
class Recording:
    path: str
    display: str
    meta: dict
    boundary: dict | None
    response: dict | None
    raw: dict


def recording_path(recordings_dir: str, contract: str, case: str) -> str:
    return os.path.join(recordings_dir, contract, f"{case}.json")


_packs_above: Memo = Memo()


def _pack_above(folder: str) -> tuple[str, str, str] | None:
    """(pack directory, its real path, *folder*'s real path) for the nearest directory with a
    pack.yaml at or above *folder*; None when there is none (cached per folder)."""
    if folder in _packs_above:
        return _packs_above[folder]
    here, found = folder, None
    while True:
        if os.path.isfile(os.path.join(here, "pack.yaml")) or os.path.isfile(os.path.join(here, "pack.yml")):
            found = (here, os.path.realpath(here), os.path.realpath(folder))
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return _packs_above.put(folder, found)


def outside_pack(path: str) -> str | None:
    """The pack directory that *path* (a recording under it) escapes through a symlink of the
    file or of a directory below the pack, else None."""
    path = os.path.abspath(path)
    found = _pack_above(os.path.dirname(path))
    if found is None:
        return None
    pack_dir, real_pack, real_folder = found
    real = os.path.realpath(path) if os.path.islink(path) else os.path.join(real_folder, os.path.basename(path))
    if real == real_pack or real.startswith(real_pack + os.sep):
        return None
    return pack_dir


def load_recording(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Recording:
    pack_dir = outside_pack(path)
    if pack_dir is not None:
        raise ConfigError(Problem(display, None, None, "a symlink that leads out of the pack "
                                  f"({display_path(pack_dir)}); a pack reads only its own files"))
    raw = load_json(path, display, max_bytes=max_bytes)
    problems = check_shape(raw, path, display, recording=True)
    if problems:
        raise ConfigError(problems)
    response = raw.get("response")
    return Recording(path, display, raw.get("meta") or {}, raw.get("boundary"),
                     normalized(response, path, display) if response is not None else None, raw)
