"""The pack behind the proxy: captured exchanges indexed by request for replay, and each new
capture written as a fixture plus a case of its tool set's contract.

The index is read and changed only on the server's event loop; files are written by one writer
thread, in arrival order, so concurrent requests never interleave two writes of one file."""
from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import ConfigError
from ...core.files import write_atomic
from ...core.hashing import canonical_json
from ...core.jsonvalue import differences
from ...core.version import __version__
from ...engine import recordings
from ...formats import NormalizeError, TranslationError, normalize
from ...formats.canonical import unnamed_call
from ...pack import loader
from ...pack.fixtures import boundary_of
from .. import changes, contracts, sessions, writer
from ..contracts import CAPTURED_BY, Case
from ..keys import KEY_IDS, may_hold_ids, request_key
from ..writer import scrub_all
from ..yamledit import InsertError
from . import checks
from .guard import Guard
from .routes import Route, kept_query, resolve
from .worker import Worker

DEFAULT_IGNORE = ("user", "metadata", "stream_options", "service_tier")


@dataclass
class Exchange:
    """One captured request and the answer it got, ready to be served again."""

    key: str
    occurrence: int  # the how-many-th request with this key it answered (from 1)
    file: str  # its fixture
    match: dict  # what the request is matched on: endpoint, query, body less the ignored fields
    status: int
    content_type: str
    stream: bool
    chunks: tuple[bytes, ...]  # the body as it is sent back (several pieces when streamed)
    headers: dict = field(default_factory=dict)  # retry-after, as the upstream gave it


@dataclass
class Capture:
    """What the server hands the store after forwarding a request: the exchange as it happened."""

    route: Route
    key: str
    occurrence: int
    match: dict
    query: dict
    body: dict
    secrets: tuple[str, ...]
    status: int
    content_type: str
    payload: bytes
    headers: dict
    latency_ms: int
    trace: dict | None = None  # {trace_id, span_id} of the app's span the call was made in (traceparent)


@dataclass
class Ready:
    """A capture ready to be written: its fixture document, place and case."""

    capture: Capture
    exchange: Exchange
    doc: dict
    path: str
    contract: str
    case: Case


def match_document(endpoint: str, query: dict, body: dict, ignore: tuple[str, ...], secrets: tuple[str, ...]) -> dict:
    """What a request is matched on: its endpoint, its query less credentials, and its body less
    the ignored top-level fields, with any credential in it blanked as it is on disk."""
    kept = {k: v for k, v in body.items() if k not in ignore}
    return scrub_all({"endpoint": endpoint, "query": kept_query(query.items()), "body": kept}, secrets)


def split_stream(text: bytes, content_type: str) -> tuple[bytes, ...]:
    """A recorded stream in the pieces it is replayed in: one per SSE event or NDJSON line."""
    sep = b"\n\n" if "event-stream" in content_type else b"\n" if "ndjson" in content_type else None
    if sep is None:
        return (text,)
    pieces = [p + sep for p in text.split(sep)]
    pieces[-1] = pieces[-1][: -len(sep)]
    return tuple(p for p in pieces if p)


def stored_response(payload: bytes, content_type: str) -> Any:
    """The answer as the fixture holds it: JSON as JSON, a stream (or any other text) as text."""
    text = payload.decode("utf-8", errors="replace")
    if "json" in content_type and "ndjson" not in content_type:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def payload_of(response: Any) -> bytes:
    """The bytes a stored answer is served as."""
    if isinstance(response, str):
        return response.encode("utf-8")
    return canonical_json(response).encode("utf-8")


class Store:
    """The captured exchanges of one pack: served by request, and new ones written."""

    def __init__(self, pack_dir: str, *, ignore: tuple[str, ...] = DEFAULT_IGNORE,
                 redact_fields: tuple[str, ...] = (), log: Callable[[str], None] = print,
                 draft: bool = False, max_fixture_bytes: int = checks.MAX_FIXTURE_BYTES,
                 update: bool = False) -> None:
        self.pack_dir = os.path.abspath(pack_dir)
        self.max_fixture_bytes = max_fixture_bytes  # what the project's runs read fixtures under
        self.draft = draft  # contracts written as drafts (status: observed)
        self.update = update  # new behaviour accepted: nothing judged before it is written
        self.before: dict[str, str] | None = None  # with update: the contracts as they were
        self.ignore = tuple(ignore)
        self.redact_fields = tuple(redact_fields)
        self.log = log
        self.golden_dir, self.contracts_dir = writer.pack_dirs(self.pack_dir)
        self.written = 0  # fixtures written this session
        self._index: dict[str, dict[int, Exchange]] = {}  # key -> occurrence -> exchange
        self._seen: dict[str, int] = {}  # key -> requests with it this session
        self._cases: dict[str, dict[str, Case]] = {}  # contract -> case id -> case (writer thread)
        self._tools: dict[str, list[str]] = {}  # contract -> the tool names it is for
        self._dirty: set[str] = set()
        self._writer: Worker | None = None
        self._captured: list[tuple[Case, str, dict]] = []  # this session's captures: case, api, request sent
        self._sessions: dict[str, str] = {}  # key of each session the pack holds as a scenario -> its fixture
        self.guard: Guard | None = None  # over existing contracts: each capture judged before it is written

    @property
    def exchanges(self) -> int:
        """How many captured exchanges can be served."""
        return sum(len(by_k) for by_k in self._index.values())

    # ------------------------------------------------------------------ reading the pack

    def load(self) -> None:
        """Index every fixture the proxy captured into this pack earlier, and every one `replayci
        import` wrote (in file order: identical requests are answered in that order)."""
        for folder, _dirs, files in os.walk(self.golden_dir):
            for name in sorted(files):
                if name.endswith(".json"):
                    self._load_fixture(os.path.join(folder, name))
        if self.update:
            self.before = changes.snapshot(self.contracts_dir)
        if not self.draft and os.path.exists(os.path.join(self.pack_dir, "pack.yaml")):
            try:
                self.guard = Guard([loader.load_pack(self.pack_dir)], self.golden_dir, self.ignore,
                                   accept=self.update)
            except ConfigError as exc:
                self.log(f"replayci proxy: the pack does not load, so captures cannot be judged against its "
                         f"contracts before they are written: {exc}")

    def changed(self) -> list[str]:
        """With update: per contract, what the session changed."""
        return changes.describe(self.before, changes.snapshot(self.contracts_dir)) if self.before is not None else []

    def _load_fixture(self, path: str) -> None:
        try:
            doc = checks.load_capture(path)
        except OSError:
            return
        except ValueError as exc:
            self.log(f"replayci proxy: {path}: not served: {exc}")
            return
        meta = doc.get("meta") if isinstance(doc, dict) else None
        if isinstance(meta, dict) and "trajectory" in doc and isinstance(meta.get("key"), str):
            self._sessions[meta["key"]] = path
        if not isinstance(meta, dict):
            return
        captured = meta.get("captured_by") == CAPTURED_BY
        if not captured and not (isinstance(meta.get("imported_from"), dict) and "response" in doc):
            return
        problem = checks.capture_problem(doc, captured=captured)
        if problem:
            self.log(f"replayci proxy: {path}: not served: {problem}")
            return
        endpoint = str(meta.get("endpoint")) if captured else served_path(meta.get("api"), meta.get("endpoint"))
        route, original = resolve(endpoint), doc.get("original_request")
        if route is None or not isinstance(original, dict) or not isinstance(doc.get("request"), dict):
            return
        match = match_document(route.path, meta.get("query") or {}, original, self.ignore, ())
        # The key as written (a redacted request cannot give it again), unless another ignore list
        # made it, or an older replayci that kept the minted ids in it.
        trusted = captured and meta.get("ignore") == list(self.ignore) and isinstance(meta.get("key"), str) and (
            meta.get("key_ids") == KEY_IDS or not may_hold_ids(original))
        key = meta["key"] if trusted else request_key(match)
        k = meta.get("occurrence") if captured else max(self._index.get(key, {0: None})) + 1  # imported: in turn
        status = doc.get("status", 200)
        if type(k) is not int or type(status) is not int:
            return
        content_type, stream = str(meta.get("content_type") or "application/json"), bool(meta.get("stream"))
        payload = payload_of(doc.get("response"))
        chunks = split_stream(payload, content_type) if stream else (payload,)
        self._index.setdefault(key, {})[k] = Exchange(key, k, path, match, status, content_type, stream, chunks,
                                                      dict(meta.get("headers") or {}))
        if "session" in meta:  # a step of an imported scenario: served, but a case only through its scenario
            return
        contract = os.path.basename(os.path.dirname(path))
        case_id = os.path.splitext(os.path.basename(path))[0]
        self._add_case(contract, Case(case_id, f"{contract}/{case_id}.json", _describe(route, stream),
                                      str(meta.get("captured_at") or ""), route.upstream, doc["request"],
                                      doc.get("response"), status, dict(meta.get("headers") or {}) or None))

    def _add_case(self, contract: str, case: Case) -> None:
        self._cases.setdefault(contract, {})[case.id] = case
        self._tools[contract] = contracts.tool_names(case.neutral)

    # ------------------------------------------------------------------ serving

    def next_occurrence(self, key: str) -> int:
        """Count one more request with *key* this session; the how-many-th it is."""
        k = self._seen[key] = self._seen.get(key, 0) + 1
        return k

    def lookup(self, key: str, occurrence: int) -> Exchange | None:
        """The captured answer to the *occurrence*-th request with *key*, if there is one."""
        return self._index.get(key, {}).get(occurrence)

    def recorded(self, key: str) -> int:
        """How many answers to requests with *key* are captured."""
        return len(self._index.get(key, ()))

    def nearest(self, match: dict) -> tuple[Exchange, list[str]] | None:
        """The captured exchange whose request differs least from *match*, and where they differ."""
        best: tuple[Exchange, list[str]] | None = None
        for by_k in self._index.values():
            ex = by_k[min(by_k)]
            limit = len(best[1]) if best is not None else 1 << 30
            diffs = differences(ex.match, match, limit=limit)
            if best is None or len(diffs) < len(best[1]):
                best = (ex, diffs)
        return best

    # ------------------------------------------------------------------ capturing

    def capture(self, c: Capture) -> Exchange:
        """Index a forwarded exchange at once (an identical request may follow) and queue its write."""
        stream = c.route.streams(c.body)
        chunks = split_stream(c.payload, c.content_type) if stream else (c.payload,)
        earlier = self.lookup(c.key, c.occurrence)  # in the pack already, wherever its file now is
        ex = Exchange(c.key, c.occurrence, "", c.match, c.status, c.content_type, stream, chunks, c.headers)
        self._index.setdefault(c.key, {})[c.occurrence] = ex
        if self._writer is None:
            self._writer = Worker("replayci-proxy-writer", self.log, "replayci proxy: could not write to the pack",
                                  after_batch=self._write_contracts)
        self._writer.submit(lambda: self._persist(c, ex, earlier.file if earlier is not None else ""))
        return ex

    def flush(self) -> None:
        """Wait until every capture so far is on disk."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Write what is pending, then the agent sessions among this session's captures, and stop
        the writer."""
        if self._writer is not None:
            if self.guard is not None:
                self._writer.submit(lambda: self.guard.settle(self._commit))
            self._writer.submit(self._write_sessions)
            self._writer.flush()
            self._writer.close()
            self._writer = None

    def _persist(self, c: Capture, ex: Exchange, earlier: str = "") -> None:
        """Write one capture's fixture (runs on the writer thread); over contracts that judge it,
        hold it until the proxy stops, when its session is known (a session is written whole or
        not at all)."""
        ready = self._prepare(c, ex, earlier)
        if ready is None:
            return
        if self.guard is None:
            self._commit(ready)
        else:
            self.guard.hold(ready)

    def _prepare(self, c: Capture, ex: Exchange, earlier: str) -> Ready | None:
        """A capture's fixture document and place, or None when it is not to be written. An
        exchange the pack holds already in a file the user moved or renamed (*earlier*) is not
        written again: a second case for it would be a duplicate."""
        try:
            neutral = writer.neutral_request(c.body, c.route.api, c.route.model, c.secrets)
        except TranslationError as exc:
            self.log(f"replayci proxy: {c.route.path}: answered, but not written: {exc}")
            return None
        contract = contracts.contract_name(contracts.tool_names(neutral))
        stream = c.route.streams(c.body)
        meta = {"captured_by": CAPTURED_BY, "api": c.route.api, "endpoint": c.route.path,
                "query": kept_query(c.query.items()), "stream": stream, "key": c.key, "occurrence": c.occurrence,
                "ignore": list(self.ignore), "key_ids": KEY_IDS, "content_type": c.content_type,
                "latency_ms": c.latency_ms,
                "captured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                "replayci_version": __version__}
        if c.headers:
            meta["headers"] = c.headers
        if c.trace:
            meta["trace"] = c.trace
        doc = writer.fixture_document(neutral, scrub_all(c.body, c.secrets),
                                      scrub_all(stored_response(c.payload, c.content_type), c.secrets), c.status, meta)
        try:
            doc = recordings.redact(doc, self.redact_fields)
        except recordings.NotWritten as exc:
            self.log(f"replayci proxy: {c.route.path}: answered, but not written: {exc}")
            return None
        if self.redact_fields and isinstance(doc.get("request"), dict):  # the boundary of the request as written
            doc["boundary"] = boundary_of(doc["request"])
        # Named after the request as written: words a redact field blanks never reach a file name.
        case_id = contracts.case_name(writer.CASE_PREFIX[c.route.api], doc["request"], c.key, c.occurrence)
        path = os.path.join(self.golden_dir, contract, f"{case_id}.json")
        if earlier and os.path.abspath(earlier) != os.path.abspath(path) and os.path.exists(earlier):
            ex.file = earlier
            self.log(f"replayci proxy: {c.route.path}: the pack has this exchange already, in "
                     f"{os.path.relpath(earlier, self.pack_dir)}; not written again")
            return None
        case = Case(case_id, f"{contract}/{case_id}.json", _describe(c.route, stream), meta["captured_at"],
                    c.route.upstream, doc["request"], doc["response"], c.status, dict(c.headers) or None)
        return Ready(c, ex, doc, path, contract, case)

    def _commit(self, ready: Ready) -> None:
        """Write a capture's fixture and list its case."""
        c, doc, path, contract, case = ready.capture, ready.doc, ready.path, ready.contract, ready.case
        writer.ensure_pack(self.pack_dir, doc["request"].get("model"), "Captured by replayci proxy", "replayci proxy")
        try:  # what --record refuses to write (the pack would refuse to read it), the proxy refuses too
            recordings.write(path, doc, root=self.pack_dir, max_bytes=self.max_fixture_bytes)
        except recordings.NotWritten as exc:
            self.log(f"replayci proxy: {c.route.path}: answered, but not written: {exc}")
            return
        ready.exchange.file = path
        self.written += 1
        if case.normalized is None:  # kept for replay by the proxy; a run cannot judge it
            self.log(f"replayci proxy: {c.route.path}: captured in {os.path.relpath(path, self.pack_dir)} for "
                     f"replay, but no case lists it: replayci cannot read its answer ({_unreadable(case)})")
        self._add_case(contract, case)
        self._captured.append((case, c.route.api, doc["original_request"]))
        self._dirty.add(contract)

    def _write_contracts(self) -> None:
        """Each contract with new cases: rewritten while capture owns it, else cases appended."""
        for name in sorted(self._dirty):
            path = os.path.join(self.contracts_dir, f"{name}.yaml")
            cases = [c for c in self._cases[name].values() if c.normalized is not None]
            try:
                contracts.save(path, contracts.render(self._tools[name], cases, draft=self.draft),
                               [(c.id, contracts.entry_fields(c, self.draft)) for c in cases])
            except InsertError as exc:
                self.log(f"replayci proxy: {exc}: add the cases of {name}/ by hand")
        self._dirty.clear()


    def _write_sessions(self) -> None:
        """Each agent loop among this session's captures, not yet in the pack, as a scenario (runs
        on the writer thread, when the proxy stops: a loop may go on until then)."""
        captured = [(case, api, original) for case, api, original in self._captured if case.normalized is not None]
        calls = [sessions.Call(case.neutral, case.normalized, api) for case, api, _ in captured]
        for found in sessions.group(calls):
            key = sessions.session_key(calls, found)
            # The same loop (maybe with other minted ids), or the one it corresponds to: replaced.
            earlier = self._sessions.get(key) or (self.guard.session_fixture(
                captured[found.members[0]][1], calls[found.members[0]].neutral) if self.guard is not None else None)
            first = captured[found.members[0]][0]
            meta = {"session_of": [captured[m][0].input_ref for m in found.members], "key": key,
                    "api": captured[found.members[0]][1], "captured_at": first.captured_at,
                    "replayci_version": __version__}
            doc = sessions.scenario_document(calls, found, captured[found.members[0]][2], meta)
            case_id = os.path.splitext(os.path.basename(earlier))[0] if earlier else f"session-{key[:12]}"
            try:
                doc = recordings.redact(doc, self.redact_fields)
            except recordings.NotWritten as exc:
                self.log(f"replayci proxy: the session of {meta['session_of'][0]}: not written: {exc}")
                continue
            # Named from what it keeps (redacted): text redact.fields removes names no file or folder.
            name = os.path.basename(os.path.dirname(earlier)) if earlier else sessions.scenario_name(
                doc, key, lambda n: os.path.exists(os.path.join(self.contracts_dir, f"{n}.yaml")))
            path = earlier or os.path.join(self.golden_dir, name, f"{case_id}.json")
            writer.write_fixture(path, doc)
            contract = os.path.join(self.contracts_dir, f"{name}.yaml")
            if not os.path.exists(contract) or contracts.owned(_read(contract)):  # a contract taken over stays
                write_atomic(contract, writer.render_scenario_contract(doc, case_id, f"{name}/{case_id}.json",
                                                                       draft=self.draft))
            self._sessions[key] = path
            self.written += 1


def served_path(api: Any, endpoint: Any) -> str:
    """The proxy's path for an imported exchange's API and recorded path ("" when it serves none)."""
    endpoint = str(endpoint or "")
    if api == "anthropic" and endpoint.endswith("/messages"):
        return "/anthropic/v1/messages"
    if api in ("openai-chat", "openai-responses"):
        return "/v1/chat/completions" if api == "openai-chat" else "/v1/responses"
    m = _GEMINI_PATH.search(endpoint) if api == "gemini" else None
    return f"/gemini/{'v1' if m.group(1) == 'v1' else 'v1beta'}/models/{m.group(2)}:{m.group(3)}" if m else ""


_GEMINI_PATH = re.compile(r"/(v1beta\d*|v1)/(?:.*/)?models/([^/:]+):(generateContent|streamGenerateContent)\Z")


def _unreadable(case: Case) -> str:
    """Why a captured answer cannot be read."""
    try:
        doc = normalize(case.response, status=case.status, headers=case.headers)
    except NormalizeError as exc:
        return str(exc)
    if unnamed_call(doc) is not None:
        return "a tool call's name is no string"
    return "unknown"


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _describe(route: Route, stream: bool) -> str:
    return f"POST {route.path}" + (" (streamed)" if stream else "")
