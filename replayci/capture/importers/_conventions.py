"""What a span says about one model call, whichever convention wrote it: OpenTelemetry GenAI
(`gen_ai.input.messages` / `gen_ai.output.messages` / `gen_ai.tool.definitions`, or the older
message events), OpenInference (`llm.input_messages.*`, `llm.output_messages.*`, `llm.tools.*`,
`input.value`), openllmetry (`gen_ai.prompt.N.*`, `gen_ai.completion.N.*`,
`llm.request.functions.N.*`) and Logfire (`request_data`, `response_data`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from ... import formats
from . import _messages as m
from ._spans import Span

# Operations that are not one model call: agents, tools, embeddings.
_NOT_CALLS = {"invoke_agent": "an agent span", "create_agent": "an agent span", "execute_tool": "a tool span",
              "embeddings": "embeddings, not a model call"}
_CALL_OPERATIONS = ("chat", "generate_content", "text_completion", "completion", "responses")
_OI_KINDS = {"CHAIN": "a chain span", "TOOL": "a tool span", "AGENT": "an agent span",
             "RETRIEVER": "a retriever span", "EMBEDDING": "embeddings, not a model call",
             "RERANKER": "a reranker span", "GUARDRAIL": "a guardrail span", "EVALUATOR": "an evaluator span"}

# pydantic-ai's agent run span: the whole conversation, whose model request spans are the calls.
_AGENT_RUN = ("all_messages_events", "pydantic_ai.all_messages")
# What reading a recorded body may raise: it is data, and an unreadable one is no body.
UNREADABLE = (formats.NormalizeError, formats.TranslationError, TypeError, ValueError, KeyError,
               AttributeError, IndexError)
_ANTHROPIC = ("anthropic", "claude")
_GEMINI = ("gemini", "google", "vertex", "gcp.")
_BEDROCK = ("aws", "bedrock")


@dataclass
class Call:
    """A model call read from a span, in the neutral form, ready to rebuild in its wire form."""

    api: str  # the wire format to rebuild it in (a formats name)
    model: Any
    messages: list
    tools: list | None  # neutral tools; None when the span recorded no definitions
    params: dict
    answer: m.Answer
    body: dict | None  # the request body the span recorded, when in `api`'s form
    host: str = ""
    response_id: str = ""  # the provider's id of the answer, when the span kept it


class Passed(Exception):
    """A span that is no exchange: kind ("skipped", "unsupported", "not_captured") and reason."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _has(attrs: dict, prefix: str) -> bool:
    """Whether the span has attributes under *prefix*, flat (`x.0.y`) or whole (`x`)."""
    whole = prefix[:-1] if prefix.endswith(".") else None
    return any(k.startswith(prefix) or k == whole for k in attrs)


def provider_of(attrs: dict) -> str:
    for key in ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return attrs[key].lower()
    return ""


def _skip_reason(span: Span) -> str | None:
    """Why a span is not a model call, or None when it is one."""
    attrs = span.attributes
    op = attrs.get("gen_ai.operation.name") if isinstance(attrs.get("gen_ai.operation.name"), str) else None
    if op in _NOT_CALLS:
        return _NOT_CALLS[op]
    kind = str(attrs.get("openinference.span.kind") or "").upper()
    if kind in _OI_KINDS:
        return _OI_KINDS[kind]
    if op in _CALL_OPERATIONS or kind == "LLM" or attrs.get("llm.request.type") in ("chat", "completion"):
        return None
    markers = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt.", "gen_ai.completion.",
               "llm.input_messages.", "llm.output_messages.")
    if any(_has(attrs, p) for p in markers):
        return None
    if isinstance(attrs.get("request_data"), dict) and "LLM" in (attrs.get("logfire.tags") or ()):
        return None
    if any(k in attrs for k in _AGENT_RUN):
        return "an agent span"
    return "not a model call"


def _body(attrs: dict) -> dict | None:
    """The request body a span recorded (Logfire's `request_data`, OpenInference's JSON
    `input.value`), when it holds a conversation."""
    for key in ("request_data", "input.value"):
        value = m.decoded(attrs.get(key))
        if isinstance(value, dict) and any(value.get(k) for k in ("messages", "input", "contents", "prompt",
                                                                   "inputText")):
            return value
    return None


def _body_form(body: dict | None) -> str | None:
    if body is None:
        return None
    try:
        return formats.request_format(body)
    except UNREADABLE:  # a recorded body is data: a failure means no form
        return None


def _api(span: Span, provider: str, body: dict | None) -> str:
    """The wire format a span's call is rebuilt in: the provider's API, and among OpenAI's the
    Responses API when the span or the recorded body says so."""
    attrs = span.attributes
    form = _body_form(body)
    if (attrs.get("gen_ai.operation.name") == "text_completion" or span.name == "openai.completion"
            or (provider.startswith("openai") and attrs.get("llm.request.type") == "completion")):
        raise Passed("unsupported", "OpenAI legacy text completions (/v1/completions); replayci reads chat APIs")
    if provider.startswith(_BEDROCK) and body is not None:
        claude = "anthropic_version" in body or "claude" in str(_model(attrs, body)).lower()
        if form == "bedrock" or (form == "anthropic" and claude):
            return form
        raise Passed("unsupported", f"a Bedrock InvokeModel body of a non-Claude model ({_model(attrs, body)}); "
                     "replayci reads Bedrock Converse and Claude bodies")
    if not provider and form in ("anthropic", "gemini", "bedrock"):
        return form
    if provider.startswith(_ANTHROPIC):
        return "anthropic"
    if provider.startswith(_GEMINI):
        return "gemini"
    if provider.startswith(_BEDROCK):
        return "bedrock"
    if span.name == "openai.response" or span.name.startswith("Responses API") or form == "openai-responses":
        return "openai-responses"
    return "openai-chat"


def _kept(body: dict | None, api: str) -> dict | None:
    """The recorded body, when it is a request of *api* (a plain Anthropic body reads as chat too)."""
    form = _body_form(body)
    if body is not None and (form == api or (form == "openai-chat" and api == "anthropic"
                                             and body.get("max_tokens") is not None)):
        return body
    return None


def _model(attrs: dict, body: dict | None) -> Any:
    for key in ("gen_ai.request.model", "llm.model_name", "gen_ai.response.model"):
        if attrs.get(key):
            return attrs[key]
    return (body or {}).get("model", (body or {}).get("modelId"))


def _events(span: Span) -> list:
    listed = span.attributes.get("events")  # Logfire keeps the message events as an attribute
    if isinstance(m.decoded(listed), list):
        return [("", e) for e in m.decoded(listed) if isinstance(e, dict)]
    return [(name, attrs) for name, attrs in span.events if name.startswith("gen_ai.")]


def _inputs(attrs: dict, events: list, body: dict | None) -> list | None:
    """The request's messages, by the first convention the span holds."""
    if "gen_ai.input.messages" in attrs:
        return m.genai_system(attrs.get("gen_ai.system_instructions")) + m.genai_messages(
            attrs["gen_ai.input.messages"])
    for prefix in ("llm.input_messages.", "gen_ai.prompt."):
        if _has(attrs, prefix):
            return m.chat_messages(m.unflatten(attrs, prefix))
    found, _ = m.event_messages(events)
    if found:
        return found
    if body is not None:
        try:
            return formats.to_neutral(body)[1].get("messages")
        except UNREADABLE:  # an unreadable body holds no messages
            return None
    return None


def _response_data(value: Any) -> m.Answer | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("message"), dict):
        return m.chat_answer([value["message"]])
    if isinstance(value.get("combined_chunk_content"), str):
        return m.Answer(content=value["combined_chunk_content"] or None)
    return None


def _wire_answer(value: Any) -> m.Answer | None:
    """An answer from a recorded response body (OpenInference's `output.value`)."""
    value = m.decoded(value)
    if not isinstance(value, dict):
        return None
    try:
        doc = formats.normalize(value)
    except UNREADABLE:  # not a response body
        return None
    if not doc.get("success"):
        return None
    calls = [m.call(c.get("id"), c.get("name"), c.get("arguments_raw") or c.get("arguments"))
             for c in doc.get("tool_calls") or []]
    return m.Answer(content=doc.get("content"), calls=calls, reasoning=doc.get("reasoning"),
                    finish=doc.get("stop_reason"))


def _cut_off(value: Any) -> bool:
    """Whether a recorded response body stopped at its token limit."""
    raw = m.decoded(value)
    if not isinstance(raw, dict):
        return False
    return str(raw.get("stop_reason") or raw.get("stopReason") or "").lower() in ("max_tokens", "length")


def _answer(attrs: dict, events: list) -> m.Answer | None:
    """The answer, by the first convention the span holds."""
    if "gen_ai.output.messages" in attrs:
        return m.genai_answer(attrs["gen_ai.output.messages"], attrs.get("gen_ai.response.finish_reasons"))
    for prefix in ("llm.output_messages.", "gen_ai.completion."):
        if _has(attrs, prefix):
            found = m.chat_answer(m.unflatten(attrs, prefix))
            if found is not None and _cut_off(attrs.get("output.value")):
                found.finish = "length"  # the response body beside says it stopped at its token limit
            return found
    _, found = m.event_messages(events)
    if found is not None:
        return found
    found = _response_data(m.decoded(attrs.get("response_data"))) or _wire_answer(attrs.get("output.value"))
    output = attrs.get("output")  # the OpenAI Agents SDK's span data, as Logfire records it
    if found is None and isinstance(output, list) and output and all(isinstance(x, dict) and "role" in x
                                                                     for x in output):
        found = m.chat_answer(output)
    return found


# What an instrumentation writes instead of content it was told not to capture.
_ELIDED = ("<elided>",)


def _elided(messages: list | None, answer: m.Answer | None, events: list) -> bool:
    texts = [msg.get("content") if isinstance(msg, dict) else None for msg in messages or []] + [
        answer.content if answer else None]
    texts += [attrs.get("content") for _, attrs in events if isinstance(attrs, dict)]
    return any(t in _ELIDED for t in texts)


def neutral_tool(tool: Any) -> dict | None:
    """A tool definition in any provider's form (chat's `{type, function}`, Responses' flat
    one, Anthropic's `input_schema`, Bedrock's `toolSpec`, Gemini's declaration) as neutral."""
    tool = m.decoded(tool)
    if not isinstance(tool, dict):
        return None
    tool = tool.get("tool", tool) if isinstance(tool.get("tool"), dict) else tool
    if isinstance(tool.get("function"), dict):
        tool = tool["function"]
    elif isinstance(tool.get("toolSpec"), dict):
        spec = tool["toolSpec"]
        tool = {"name": spec.get("name"), "description": spec.get("description"),
                "parameters": (spec.get("inputSchema") or {}).get("json")}
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return None
    params = m.decoded(next((tool[k] for k in ("parameters", "input_schema", "inputSchema", "parameters_json_schema")
                             if k in tool), None))
    fn: dict = {"name": name}
    if isinstance(tool.get("description"), str):
        fn["description"] = tool["description"]
    fn["parameters"] = params if isinstance(params, dict) else {"type": "object"}
    return {"type": "function", "function": fn}


def _schema_given(tool: Any) -> bool:
    """Whether a listed tool definition holds its parameter schema (not its name alone)."""
    tool = m.decoded(tool)
    if not isinstance(tool, dict):
        return False
    tool = tool.get("tool", tool) if isinstance(tool.get("tool"), dict) else tool
    tool = tool.get("function", tool.get("toolSpec", tool)) if isinstance(
        tool.get("function", tool.get("toolSpec")), dict) else tool
    return any(isinstance(m.decoded(tool.get(k)), dict) for k in ("parameters", "input_schema", "inputSchema",
                                                                   "parameters_json_schema"))


def _tools(attrs: dict, body: dict | None) -> tuple[list | None, bool]:
    """The tool definitions, by the first convention the span holds (None when it has none), and
    whether one of them is a name without its parameter schema."""
    listed: Any = None
    if "gen_ai.tool.definitions" in attrs:
        listed = m.indexed(m.decoded(attrs["gen_ai.tool.definitions"]))
    elif _has(attrs, "llm.tools."):
        listed = [t.get("tool", t).get("json_schema") if isinstance(t, dict) and isinstance(t.get("tool", t), dict)
                  else t for t in m.indexed(m.unflatten(attrs, "llm.tools."))]
    elif _has(attrs, "llm.request.functions."):
        listed = m.indexed(m.unflatten(attrs, "llm.request.functions."))
    elif isinstance(m.decoded(attrs.get("model_request_parameters")), dict):  # pydantic-ai's
        given = m.decoded(attrs["model_request_parameters"])
        listed = [t for key in ("function_tools", "output_tools") if isinstance(given.get(key), list)
                  for t in given[key]]
    elif body is not None:  # the request as sent: a tool without parameters takes none
        try:
            listed = formats.to_neutral(body)[1].get("tools")
        except UNREADABLE:
            listed = None
        tools = [t for t in (neutral_tool(x) for x in listed or []) if t is not None]
        return tools or None, False
    tools = [t for t in (neutral_tool(x) for x in listed or []) if t is not None]
    return tools or None, not all(_schema_given(x) for x in listed or [] if neutral_tool(x) is not None)


_PARAMS = (("gen_ai.request.max_tokens", "max_tokens"), ("gen_ai.request.temperature", "temperature"),
           ("gen_ai.request.top_p", "top_p"), ("gen_ai.request.stop_sequences", "stop"))
_INVOCATION = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "stop")


def _params(attrs: dict) -> dict:
    params = {}
    invocation = m.decoded(attrs.get("llm.invocation_parameters"))
    if isinstance(invocation, dict):
        params.update({k: invocation[k] for k in _INVOCATION if invocation.get(k) is not None})
    for key, name in _PARAMS:
        if attrs.get(key) is not None and (name != "stop" or attrs[key]):
            params[name] = attrs[key]
    return params


def _host(attrs: dict) -> str:
    if isinstance(attrs.get("server.address"), str):
        return attrs["server.address"]
    base = attrs.get("gen_ai.openai.api_base")
    return (urlsplit(base).hostname or "") if isinstance(base, str) else ""


def _response_id(attrs: dict) -> str:
    value = attrs.get("gen_ai.response.id")
    return value if isinstance(value, str) else ""


def _called_tools(messages: list, answer: m.Answer) -> list:
    """Each tool the span shows called, declared by name only (for those it has no definition of)."""
    names = [c["function"]["name"] for msg in messages for c in msg.get("tool_calls") or []]
    names += [c["name"] for c in answer.calls]
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in dict.fromkeys(n for n in names if n)]


def _arguments_lost(attrs: dict, answer: m.Answer, tools: list | None) -> bool:
    """Whether the span recorded a streamed answer whose tool call has empty arguments although
    its tool requires some: the instrumentation kept the call but not the streamed arguments
    (an answer cut off at its token limit says so by its finish reason and is kept)."""
    output = m.decoded(attrs.get("output.value"))
    if not (isinstance(output, dict) and output.get("streaming") is True) or answer.finish == "length":
        return False
    required = {t["function"]["name"]: (t["function"].get("parameters") or {}).get("required")
                for t in tools or []}
    return any(m.decoded(c["arguments"]) in (None, "", {}) and required.get(c["name"])
               for c in answer.calls)


# Attributes the GenAI conventions may put on an event instead of the span (the inference
# details event a streamed call's instrumentation emits once the stream has ended).
_EVENT_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                     "gen_ai.tool.definitions")
# The earlier conventions' content events: the prompt and the completion, each one attribute.
_CONTENT_EVENTS = {"gen_ai.content.prompt": ("gen_ai.prompt", "user"),
                   "gen_ai.content.completion": ("gen_ai.completion", "assistant")}


def _as_messages(value: Any, role: str) -> Any:
    """A whole `gen_ai.prompt` / `gen_ai.completion` value as a list of messages: a JSON list
    as it is, text as one message of *role*."""
    found = m.decoded(value)
    if isinstance(found, list):
        return found
    if isinstance(found, dict):
        return found if m.indexed(found) else [found]
    return [{"role": role, "content": found}] if isinstance(found, str) and found else value


def with_event_content(span: Span) -> Span:
    """*span* with the messages its events hold as attributes (those it has itself win)."""
    attrs = dict(span.attributes)
    for name, values in span.events:
        if not isinstance(values, dict):
            continue
        for key in _EVENT_ATTRIBUTES:
            if key in values:
                attrs.setdefault(key, values[key])
        if name in _CONTENT_EVENTS:
            key, role = _CONTENT_EVENTS[name]
            if key in values and not _has(attrs, key + "."):
                attrs[key] = values[key]
    for key, role in _CONTENT_EVENTS.values():
        if key in attrs:  # a whole prompt or completion, not openllmetry's indexed keys
            attrs[key] = _as_messages(attrs[key], role)
    return replace(span, attributes=attrs) if attrs != span.attributes else span


def read_call(span: Span) -> tuple[Call, bool]:
    """(the span's call, whether its tools were inferred from the calls); raises `Passed`."""
    span = with_event_content(span)
    reason = _skip_reason(span)
    if reason is not None:
        raise Passed("skipped", reason)
    attrs = span.attributes
    body = _body(attrs)
    api = _api(span, provider_of(attrs), body)
    events = _events(span)
    messages, answer = _inputs(attrs, events, body), _answer(attrs, events)
    if (not messages and answer is None) or _elided(messages, answer, events):
        raise Passed("not_captured", "content not captured")
    if answer is None:
        why = f"the call failed ({span.error}) and " if span.error else ""
        raise Passed("not_captured", f"{why}its answer was not captured")
    if not messages:
        raise Passed("not_captured", "content not captured (the request's messages)")
    tools, schemaless = _tools(attrs, body)
    if _arguments_lost(attrs, answer, tools):
        raise Passed("not_captured", "a streamed tool call's arguments were not captured")
    called = _called_tools(messages, answer)
    declared = {t["function"]["name"] for t in tools or ()}
    undefined = [t for t in called if t["function"]["name"] not in declared]
    # A tool called that the span holds no definition of, or one listed by its name alone (no
    # parameter schema recorded): its arguments cannot be checked against what the model was given.
    inferred = bool(undefined) or schemaless
    if undefined:
        tools = (tools or []) + undefined
    keep = None if inferred else _kept(body, api)
    call = Call(api=api, model=_model(attrs, body), messages=messages, tools=tools, params=_params(attrs),
                answer=answer, body=keep, host=_host(attrs), response_id=_response_id(attrs))
    return call, inferred
