"""The message shapes the tracing conventions record, each read into the neutral (OpenAI chat)
form: OpenTelemetry GenAI `parts` messages and its older message events, OpenInference's
flattened `message.*` keys, openllmetry's `gen_ai.prompt.N.*`, and the answers they hold."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """What the model answered, as a trace recorded it."""

    content: str | None = None
    calls: list = field(default_factory=list)  # {"id", "name", "arguments"} (text or object)
    reasoning: str | None = None
    finish: str | None = None
    audio: dict | None = None  # an answer in audio: chat's `message.audio` ({data, transcript, ...})


def decoded(value: Any) -> Any:
    """A value that may be a JSON string of an object or a list, decoded."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def indexed(tree: Any) -> list:
    """A map of "0", "1", ... (what unflattening `x.0.y` gives) or a list, as a list in order."""
    if isinstance(tree, list):
        return tree
    if isinstance(tree, dict) and tree and all(str(k).isdigit() for k in tree):
        return [tree[k] for k in sorted(tree, key=int)]
    return []


def unflatten(attributes: dict, prefix: str) -> Any:
    """The attributes under *prefix* (`llm.input_messages.`) as one nested value; a list or map
    kept whole under the prefix's own name (`llm.input_messages`) is its start."""
    base = attributes.get(prefix[:-1])
    tree: dict = {str(i): v for i, v in enumerate(base)} if isinstance(base, list) else (
        dict(base) if isinstance(base, dict) else {})
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        node = tree
        parts = key[len(prefix):].split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = value
    return tree


def content_of(raw: Any) -> Any:
    """A message's content: a JSON string of content blocks (what openllmetry records for
    Anthropic) decoded; any other text, JSON or not, kept as the text it is."""
    value = decoded(raw)
    if isinstance(value, list) and value and all(isinstance(p, dict) and "type" in p for p in value):
        return value
    return raw


def text_of(content: Any) -> str | None:
    """The visible text of a content value: a string, a list of text parts, or text blocks."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return str(content)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type", part.get("kind", "text")) in _TEXT_KINDS:
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts) if texts else None


_TEXT_KINDS = ("text", "input_text", "output_text")
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3",
                  "audio/mp3": "mp3"}


def _kind(part: dict) -> Any:
    """A part's type: `type`, or `kind` (what pydantic-ai's first format version writes)."""
    return part.get("type", part.get("kind"))


# Part types that name a file by URL (pydantic-ai's), their modality.
_URL_KINDS = {"image-url": "image", "audio-url": "audio", "video-url": "video", "document-url": "document"}


def _nested_url(part: dict, kind: str) -> Any:
    """OpenInference's `{type: image, image: {image: {url}}}` (and `audio`): the URL it holds."""
    inner = part.get(kind)
    inner = inner.get(kind, inner) if isinstance(inner, dict) and isinstance(inner.get(kind), dict) else inner
    return inner.get("url") if isinstance(inner, dict) else None


def _inline(modality: str, mime: str, data: str) -> dict:
    """Inline base64 data of *modality* as a chat-completions part."""
    if modality == "audio":
        fmt = _AUDIO_FORMATS.get(mime.lower(), mime.rsplit("/", 1)[-1] or "wav")
        return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
    if modality == "image":
        return {"type": "image_url", "image_url": {"url": f"data:{mime or 'image/png'};base64,{data}"}}
    return {"type": "file", "file": {"file_data": f"data:{mime or 'application/octet-stream'};base64,{data}"}}


def _located(modality: str, url: str) -> dict:
    """A file named by URL (or a provider's file id) as a chat-completions part: an image by its
    URL, inline data by its data, anything else as a file reference."""
    if url.startswith("data:") and ";base64," in url:
        mime, data = url[5:].split(";base64,", 1)
        return _inline(mime.split("/", 1)[0] if mime else modality, mime, data)
    if modality == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"file_id": url}}


def _media_part(part: dict) -> dict | None:
    """A non-text content part (audio, an image, a file) as a chat-completions part, or None when
    it is not one: chat's own `input_audio` / `image_url` parts, GenAI's `blob`, `uri` and `file`
    parts, pydantic-ai's `binary` and `*-url` parts, OpenInference's `image` and `audio` contents."""
    kind = _kind(part)
    if kind in ("input_audio", "image_url") and isinstance(part.get(kind), dict):
        return {"type": kind, kind: part[kind]}
    if kind in _URL_KINDS:
        url = part.get("url")
        return _located(_URL_KINDS[kind], url) if isinstance(url, str) and url else None
    if kind not in ("blob", "uri", "image", "audio", "file", "binary"):
        return None
    mime = str(part.get("mime_type") or part.get("mimeType") or part.get("media_type") or "")
    modality = str(part.get("modality") or (mime.split("/", 1)[0] if mime else kind))
    url = part.get("uri", part.get("file_id"))
    if not isinstance(url, str) and kind in ("image", "audio"):
        url = _nested_url(part, kind)
    if isinstance(url, str) and url:
        return _located(modality, url)
    data = part.get("content", part.get("data", part.get("binary_content")))
    return _inline(modality, mime, data) if isinstance(data, str) and data else None


def input_content(parts: Any) -> str | list | None:
    """The content of an input message from its parts: its text when it is all text, else the
    chat-completions parts (text, then audio, images and files in their order): an audio
    question is a question. None when it holds neither."""
    parts = [parts] if isinstance(parts, dict) else parts
    if not isinstance(parts, list):
        return text_of(parts)
    media = [m for m in (_media_part(p) for p in parts if isinstance(p, dict)) if m is not None]
    if not media:
        return text_of(parts)
    out: list = []
    for part in parts:
        if isinstance(part, str):
            out.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type", part.get("kind", "text")) in _TEXT_KINDS:
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                out.append({"type": "text", "text": text})
        elif isinstance(part, dict) and (found := _media_part(part)) is not None:
            out.append(found)
    return out


def call(id_: Any, name: Any, arguments: Any) -> dict:
    return {"id": None if id_ is None else str(id_), "name": str(name or ""), "arguments": arguments}


def chat_call(c: dict) -> dict:
    """A call as a chat-completions `tool_calls` item, its arguments as text."""
    args = c["arguments"]
    text = args if isinstance(args, str) else json.dumps({} if args is None else args, ensure_ascii=False)
    return {"id": c["id"] or "", "type": "function", "function": {"name": c["name"], "arguments": text}}


def assistant(content: str | None, calls: list) -> dict:
    msg: dict = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [chat_call(c) for c in calls]
    return msg


def tool_result(call_id: Any, result: Any) -> dict:
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return {"role": "tool", "tool_call_id": "" if call_id is None else str(call_id), "content": text}


# ------------------------------------------------------------ OpenTelemetry GenAI parts


def _part_calls(parts: list) -> list:
    return [call(p.get("id"), p.get("name"), p.get("arguments")) for p in parts
            if isinstance(p, dict) and p.get("type") == "tool_call"]


def _part_texts(parts: list, kinds: tuple = ("text",)) -> str | None:
    texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") in kinds]
    texts = [t for t in texts if isinstance(t, str)]
    return "".join(texts) if texts else None


def genai_messages(messages: Any) -> list:
    """`gen_ai.input.messages` (role + parts) as neutral messages."""
    out: list = []
    for msg in indexed(decoded(messages)):
        if not isinstance(msg, dict):
            continue
        role, parts = str(msg.get("role") or "user"), indexed(msg.get("parts"))
        if "parts" not in msg and "content" in msg:
            parts = [{"type": "text", "content": text_of(msg.get("content"))}]
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "tool_call_response":
                out.append(tool_result(p.get("id"), p.get("response", p.get("result"))))
        if role == "tool":
            continue
        text, calls = _part_texts(parts), _part_calls(parts)
        if role == "assistant":
            out.append(assistant(text, calls))
        elif (content := input_content([_as_chat_part(p) for p in parts])) is not None or not any(
                isinstance(p, dict) and p.get("type") == "tool_call_response" for p in parts):
            out.append({"role": role, "content": content or ""})
    return out


def _as_chat_part(part: Any) -> Any:
    """A GenAI text part ({type: text, content}) as chat's ({type: text, text}); others as they are."""
    if isinstance(part, dict) and part.get("type") == "text" and "text" not in part:
        return {"type": "text", "text": part.get("content")}
    return part


def genai_system(instructions: Any) -> list:
    value = decoded(instructions)
    text = _part_texts(indexed(value)) if isinstance(value, list) else text_of(value)
    return [{"role": "system", "content": text}] if text else []


def _audio_of(parts: list) -> dict | None:
    """The audio an answer's parts hold (a blob or binary part of audio), as chat's `message.audio`."""
    for part in parts:
        found = _media_part(part) if isinstance(part, dict) else None
        if found is not None and found["type"] == "input_audio":
            return {"data": found["input_audio"]["data"]}
    return None


def genai_answer(messages: Any, finish_reasons: Any = None) -> Answer | None:
    """`gen_ai.output.messages`: the answer's text, tool calls and reasoning."""
    value = decoded(messages)
    if not isinstance(value, list):
        return None
    answer = Answer()
    for msg in value:
        if not isinstance(msg, dict):
            continue
        parts = indexed(msg.get("parts"))
        text = _part_texts(parts)
        if text is not None:
            answer.content = (answer.content or "") + text
        answer.calls.extend(_part_calls(parts))
        reasoning = _part_texts(parts, ("reasoning", "thinking"))
        if reasoning:
            answer.reasoning = (answer.reasoning or "") + reasoning
        answer.audio = answer.audio or _audio_of(parts)
        answer.finish = answer.finish or msg.get("finish_reason")
    reasons = decoded(finish_reasons)
    if answer.finish is None and isinstance(reasons, list) and reasons:
        answer.finish = reasons[0]
    return answer


# ------------------------------------------------------------ chat-style messages


def chat_calls(tool_calls: Any) -> list:
    """Calls from chat-style `tool_calls` ({id, function: {name, arguments}}, or flat)."""
    out = []
    for c in indexed(decoded(tool_calls)):
        if not isinstance(c, dict):
            continue
        c = c.get("tool_call", c) if isinstance(c.get("tool_call"), dict) else c
        fn = c.get("function")
        if isinstance(fn, dict):
            out.append(call(c.get("id"), fn.get("name"), fn.get("arguments")))
        else:
            out.append(call(c.get("id"), fn if isinstance(fn, str) else c.get("name"), c.get("arguments")))
    return out


def blocks_calls(content: Any) -> list:
    """Calls from Anthropic-style content blocks (`tool_use`)."""
    blocks = content_of(content)
    return [call(b.get("id"), b.get("name"), b.get("input")) for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_use"] if isinstance(blocks, list) else []


def chat_message(msg: dict) -> list:
    """A chat-style message ({role, content, tool_calls, tool_call_id}) as neutral messages;
    content as Anthropic blocks (text, tool_use, tool_result) is read too."""
    role = str(msg.get("role") or "user")
    content = content_of(msg.get("content"))
    if content is None and msg.get("contents") is not None:  # OpenInference's content parts
        content = [p.get("message_content", p) for p in indexed(msg["contents"]) if isinstance(p, dict)]
    results = [tool_result(b.get("tool_use_id"), text_of(b.get("content")) or b.get("content"))
               for b in (content if isinstance(content, list) else [])
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    if role == "tool":
        return [tool_result(msg.get("tool_call_id", msg.get("id")), text_of(content) or "")]
    if role == "assistant":
        calls = chat_calls(msg.get("tool_calls")) or blocks_calls(content)
        return [assistant(text_of(content), calls)]
    if results:
        return results
    found = input_content(content)
    return [] if found is None else [{"role": role, "content": found}]


def chat_messages(messages: Any) -> list:
    out: list = []
    for msg in indexed(decoded(messages)):
        if isinstance(msg, dict):
            out.extend(chat_message(msg.get("message", msg) if isinstance(msg.get("message"), dict) else msg))
    return out


def _thinking(content: Any) -> str | None:
    texts = [p.get("text", p.get("content")) for p in content if isinstance(p, dict) and _kind(p) == "thinking"] \
        if isinstance(content, list) else []
    return "".join(t for t in texts if isinstance(t, str)) or None


def chat_answer(messages: Any) -> Answer | None:
    """The answer held by chat-style output messages (OpenInference, openllmetry, Logfire's
    `response_data.message`); openllmetry's `thinking` role is reasoning."""
    items = indexed(decoded(messages))
    if not items:
        return None
    answer = Answer()
    for msg in items:
        if not isinstance(msg, dict):
            continue
        msg = msg.get("message", msg) if isinstance(msg.get("message"), dict) else msg
        content = content_of(msg.get("content"))
        if content is None and msg.get("contents") is not None:
            content = [p.get("message_content", p) for p in indexed(msg["contents"]) if isinstance(p, dict)]
        text = text_of(content)
        thought = _thinking(content)  # pydantic-ai's `{kind: thinking, text}` parts
        if thought:
            answer.reasoning = (answer.reasoning or "") + thought
        if msg.get("role") == "thinking":
            answer.reasoning = (answer.reasoning or "") + (text or "")
            continue
        if text is not None:
            answer.content = (answer.content or "") + text
        answer.calls.extend(chat_calls(msg.get("tool_calls")) or blocks_calls(content))
        if isinstance(msg.get("reasoning"), str):
            answer.reasoning = (answer.reasoning or "") + msg["reasoning"]
        if isinstance(msg.get("audio"), dict):
            answer.audio = msg["audio"]
        answer.finish = answer.finish or msg.get("finish_reason")
    return answer


# ------------------------------------------------------------ older GenAI message events

_EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}


def event_messages(events: list) -> tuple[list, Answer | None]:
    """(input messages, answer) of the older GenAI events: `gen_ai.*.message` events are the
    input, `gen_ai.choice` the answer; without a choice, the assistant messages after the last
    other message are the answer (what Logfire records for the Responses API)."""
    inputs: list = []
    answer: Answer | None = None
    for name, attrs in events:
        name = attrs.get("event.name", name) if isinstance(attrs, dict) else name
        name = name if isinstance(name, str) else ""
        if name == "gen_ai.choice" or (isinstance(attrs, dict) and "message" in attrs and "index" in attrs):
            msg = decoded(attrs.get("message")) if isinstance(attrs, dict) else None
            found = chat_answer([msg]) if isinstance(msg, dict) else None
            if found is not None:
                found.finish = found.finish or attrs.get("finish_reason")
                answer = _merged(answer, found)
            continue
        role = _EVENT_ROLES.get(name) or (attrs.get("role") if isinstance(attrs, dict) else None)
        if isinstance(role, str) and role and isinstance(attrs, dict):
            inputs.extend(chat_message({**attrs, "role": role, "content": attrs.get("content")}))
    if answer is None:
        tail = len(inputs)
        while tail > 0 and inputs[tail - 1]["role"] == "assistant":
            tail -= 1
        if tail < len(inputs):
            answer = chat_answer(inputs[tail:])
            inputs = inputs[:tail]
    return inputs, answer


def _merged(first: Answer | None, second: Answer) -> Answer:
    if first is None:
        return second
    if second.content is not None:
        first.content = (first.content or "") + second.content
    first.calls.extend(second.calls)
    first.finish = first.finish or second.finish
    return first
