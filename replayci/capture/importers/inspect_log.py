"""inspect_ai eval logs, `.json` or `.eval` (a zip, read member by member in memory, never
extracted): each `model` event's `call` holds the exact provider request and response
(`fidelity: wire`); model events without a call (mock models, logs written without calls) are
listed as not captured."""
from __future__ import annotations

import re
import zipfile
from typing import Any

from ... import formats
from ..proxy.routes import secrets_of
from . import Exchange, Passed, Reading
from ._conventions import UNREADABLE
from ._rebuild import SDK_ONLY, endpoint
from ._tracefiles import MAX_BYTES, fail, parse_text, read_documents

NAME = "inspect"

_ZIP = b"PK\x03\x04"
_MEMBERS = (b"header.json", b"_journal/start.json", b"samples/")
_JSON_LOG = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,')
_ATTACHMENT = "attachment://"


def detect(path: str, head: bytes) -> bool:
    """A zip holding an eval log's members, or an EvalLog JSON object (version, eval, ...)."""
    if head.startswith(_ZIP):
        return any(member in head for member in _MEMBERS)
    return _JSON_LOG.match(head) is not None and b'"eval"' in head


def _zip_documents(archive: zipfile.ZipFile, display: str) -> tuple[dict, list[tuple[str, Any]]]:
    """(the header, [(member name, sample)]) of an `.eval` zip."""
    names = archive.namelist()
    if "header.json" not in names and "_journal/start.json" not in names:
        raise fail(display, "a zip that is not an inspect_ai eval log (no header.json or _journal/start.json)")
    samples = []
    for name in sorted(n for n in names if n.startswith("samples/") and n.endswith(".json")):
        samples.append((name, _member(archive, name, display)))
    head_name = "header.json" if "header.json" in names else "_journal/start.json"
    return _member(archive, head_name, display), samples


def _member(archive: zipfile.ZipFile, name: str, display: str) -> Any:
    where = f"{display} (member {name})"
    with archive.open(name) as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise fail(where, f"member is over the limit of {MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail(where, "not valid UTF-8") from None
    return parse_text(text, where)


def _samples(path: str, display: str) -> list[tuple[str, Any]]:
    """[(where, sample)] of a log in either form."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                header, samples = _zip_documents(archive, display)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
            raise fail(display, f"an unreadable zip: {exc}") from None
        except RuntimeError as exc:  # zipfile's word for an encrypted member: no password to give it
            raise fail(display, f"an unreadable zip: {exc} (replayci reads unencrypted eval logs)") from None
        if not isinstance(header, dict) or "eval" not in header:
            raise fail(display, "not an inspect_ai eval log: its header has no 'eval'")
        return samples
    docs = read_documents(path, display)
    log = docs[0][1] if len(docs) == 1 else None
    if not isinstance(log, dict) or "eval" not in log or not isinstance(log.get("samples", []), list):
        raise fail(display, "not an inspect_ai eval log: expected a JSON object with 'eval' and 'samples'")
    return [(f"samples[{i}]", s) for i, s in enumerate(log.get("samples") or [])]


def _resolved(value: Any, attachments: dict) -> Any:
    """*value* with `attachment://ID` strings replaced by the attachment they name."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT):], value)
    if isinstance(value, dict):
        return {k: _resolved(v, attachments) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, attachments) for v in value]
    return value


def _secrets(request: dict) -> tuple[str, ...]:
    headers = request.get("extra_headers")
    if not isinstance(headers, dict):
        return ()
    # Headers whose names say they carry a credential (the proxy's and the HTTP importers' rule).
    return secrets_of([(str(k), v) for k, v in headers.items() if isinstance(v, str)], (), environ={})


def _exchange(event: dict, entry: str, group: str, attachments: dict) -> Exchange | Passed:
    model = event.get("model")
    call = event.get("call")
    if not isinstance(call, dict) or not isinstance(call.get("request"), dict):
        return Passed(entry, "not_captured", f"model {model!r}: the event holds no provider call "
                      "(a mock model, or a log written without calls)")
    raw = _resolved(call["request"], attachments)
    request = {k: v for k, v in raw.items() if k not in SDK_ONLY}
    response = _resolved(call.get("response"), attachments)
    if response is None:
        return Passed(entry, "not_captured", f"model {model!r}: the call has no response (it failed)")
    form = formats.request_format(request)
    if form is None:
        return Passed(entry, "unsupported", f"model {model!r}: a request form replayci does not read")
    try:
        formats.normalize(response)
    except formats.NormalizeError as exc:
        return Passed(entry, "unsupported", f"model {model!r}: {exc}")
    name = request.get("model") or str(model or "").split("/", 1)[-1]
    return Exchange(entry=entry, endpoint=endpoint(form, name), request=request, response=response,
                    fidelity="wire", group=group, secrets=_secrets(raw))


def read(path: str, display: str) -> Reading:
    reading = Reading(file=display, format=NAME)
    for where, sample in _samples(path, display):
        if not isinstance(sample, dict):
            raise fail(display, f"{where}: a sample must be a JSON object")
        attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
        group = f"{sample.get('id')}/{sample.get('epoch', 1)}"
        events = sample.get("events") or []
        if not isinstance(events, list):
            raise fail(display, f"{where}.events: expected a list of events")
        for index, event in enumerate(events):
            if isinstance(event, dict) and event.get("event") == "model":
                try:
                    found = _exchange(event, f"{group}/{index}", group, attachments)
                except UNREADABLE as exc:  # a log's values are data: an odd shape is one call passed over
                    found = Passed(f"{group}/{index}", "unsupported", f"a model event replayci cannot read ({exc})")
                (reading.exchanges if isinstance(found, Exchange) else reading.passed).append(found)
    return reading
