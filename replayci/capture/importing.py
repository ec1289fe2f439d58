"""`replayci import`: the model traffic teams already recorded — cassettes, HAR files, trace
exports, eval logs — written into a pack in the proxy's fixture form, agent loops as scenarios.

Everything is read, converted and checked before anything is written: bad input leaves the pack
as it was. Identical exchanges are written once; an exchange (or session) whose `meta.key` the pack
already holds, under whatever file name, is not written again."""
from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.files import write_all_atomic
from ..core.hashing import h
from ..core.jsonvalue import indented_members, json_type, member_text
from ..core.memo import collector_paused
from ..core.version import __version__
from ..engine import parallel, recordings
from ..formats import NormalizeError, TranslationError, normalize, read_stream_twice
from ..formats.canonical import unnamed_call
from ..pack.fixtures import kept_headers, tool_schema_problems
from ..pack.sources import DEFAULT_MAX_JSON_BYTES
from . import contracts, sessions, writer
from .endpoints import classify
from .importers import IMPORTERS, Exchange, Passed, Reading, importer
from .inference import case_expectations
from .proxy.routes import environment_secrets

FORMATS = ("auto", *IMPORTERS)
_FIXTURE_KEYS = {"boundary", "meta", "original_request", "request", "response", "status"}
_HEAD = 65536


@dataclass
class FileReport:
    """What one source file gave."""

    file: str
    format: str
    imported: int = 0  # exchanges written as cases of their own
    in_sessions: int = 0  # exchanges written as steps of a new scenario
    present: int = 0  # exchanges (or sessions) the pack holds already
    duplicates: int = 0  # identical to an exchange read before in this import
    skipped: list[Passed] = field(default_factory=list)
    unsupported: list[Passed] = field(default_factory=list)
    not_captured: list[Passed] = field(default_factory=list)
    sessions: int = 0  # sessions found (new or not)
    tools_inferred: int = 0
    # entry -> (the fixture holding that exchange, new or not; its step when that is a scenario's)
    placed: dict = field(default_factory=dict)
    scenarios: list = field(default_factory=list)  # (entries, the scenario fixture holding that session)


@dataclass
class ImportResult:
    files: list[FileReport]
    unrecognized: list[str]  # files inside the folders given that no format reads
    fixtures: int = 0  # fixture files written
    contracts: list[str] = field(default_factory=list)  # contract files written


@dataclass
class _Item:
    """One model exchange, converted: ready to be written."""

    reading: Reading
    exchange: Exchange
    api: str
    neutral: dict
    original: dict
    response: Any
    normalized: dict
    key: str
    texts: dict[str, str] | None  # original, request, response as the fixture writes them (None: not kept)
    as_run: dict | None  # the answer as a run reads the fixture (Case.normalized's reading)
    expectations: dict | None = None  # its case's own checks, worked out with it (Case.expectations)

    @property
    def stream(self) -> bool:
        return isinstance(self.response, str) or self.exchange.request.get("stream") is True


@dataclass
class _Group:
    """One agent's exchanges of a reading, and the sessions among them (indices into *items*)."""

    items: list[_Item]
    calls: list[sessions.Call]
    found: list[sessions.Session]


def import_sources(sources: list[str], pack_dir: str, fmt: str = "auto", *, draft: bool = False,
                   redact_fields: tuple[str, ...] = (), log: Callable[[str], None] = print,
                   max_fixture_bytes: int = DEFAULT_MAX_JSON_BYTES, processes: int | None = None) -> ImportResult:
    """Import every model exchange of *sources* (files or folders) into the pack at *pack_dir*;
    an exchange whose fixture would be over *max_fixture_bytes* (the project's fixtures.max_bytes:
    what its runs read) is listed as not imported. Many files are read and converted on two
    cores (*processes*: 1 or 2 as set, None by their number), with the same result."""
    with collector_paused():  # what an import builds holds no cycles: ~20% of its time was collecting
        return _import(sources, pack_dir, fmt, draft, redact_fields, log, max_fixture_bytes, processes)


def _import(sources: list[str], pack_dir: str, fmt: str, draft: bool, redact_fields: tuple[str, ...],
            log: Callable[[str], None], max_bytes: int, processes: int | None) -> ImportResult:
    files, unrecognized = _expand(sources, fmt)
    read = _read_all(files, max_bytes, processes, draft)
    problems = [p for _, found, _ in read for p in found]
    if problems:
        raise ConfigError(problems)
    reports = [report for _, _, (report, _) in read]
    plan = _Plan(os.path.abspath(pack_dir), draft, redact_fields, max_bytes)
    for _, _, (report, groups) in read:
        plan.add_reading(groups, report)
    result = ImportResult(reports, unrecognized)
    plan.write(result, log)
    return result


# From this many files, an import reads and converts them on two cores.
SPLIT_MIN_FILES = 32


def _read_all(files: list[tuple[str, str, Any]], max_bytes: int, processes: int | None,
              draft: bool = False) -> list[tuple]:
    """Each file read, its exchanges converted and grouped into sessions, in order: (reading or
    None, its problems, (its report, its groups)). Many files go to two processes, each taking
    the next unit of files (a forked child sends its units back pickled); the result is the same."""
    def one(n: int) -> tuple:
        path, display, module = files[n]
        try:
            reading = module.read(path, display)
        except ConfigError as exc:
            return None, exc.problems, (None, [])
        report = FileReport(reading.file, reading.format)
        return reading, [], (report, _grouped(_convert_all(reading, report, max_bytes), report, draft))

    two = processes >= 2 if processes is not None else len(files) >= SPLIT_MIN_FILES
    if not (two and len(files) > 1 and parallel.fork_safe()):
        return [one(n) for n in range(len(files))]
    # Units of consecutive files by size, largest first (parallel.plan_units, as a split run's
    # contracts); their results are put back in file order.
    units = [r for unit in parallel.plan_units([parallel.file_costs(f[0] for f in files)]) for _, r in unit]
    done = parallel.by_units(len(units), lambda taken: ((u, [one(n) for n in units[u]]) for u in taken))
    return [got for u in sorted(range(len(units)), key=lambda u: units[u].start) for got in done[u]]


def _expand(sources: list[str], fmt: str) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """(path, display, importer module) of every file to read, and the files inside folders that
    no format reads. A file named on the command line must be of a format read."""
    modules = _modules(fmt)
    files, unrecognized, problems = [], [], []
    for source in sources:
        if os.path.isdir(source):
            for folder, dirs, names in os.walk(source):
                dirs.sort()
                for name in sorted(names):
                    path = os.path.join(folder, name)
                    display = os.path.join(source, os.path.relpath(path, source))
                    module = _detect(path, modules)
                    (files.append((path, display, module)) if module else unrecognized.append(display))
        elif os.path.isfile(source):
            module = modules[0] if fmt != "auto" else _detect(source, modules)
            if module is None:
                problems.append(Problem(source, None, None, "not a recording replayci reads: expected a vcrpy "
                                        "cassette, a HAR file, an OpenTelemetry trace export or an inspect_ai "
                                        "eval log (--format names one)"))
            else:
                files.append((source, source, module))
        else:
            problems.append(Problem(source, None, None, "no such file or folder"))
    if problems:
        raise ConfigError(problems)
    return files, unrecognized


def _modules(fmt: str) -> list:
    """The importer modules *fmt* asks for (auto: every one available, in registry order)."""
    names = list(IMPORTERS) if fmt == "auto" else [fmt]
    out = []
    for name in names:
        try:
            out.append(importer(name))
        except ModuleNotFoundError as exc:
            if not str(exc.name or "").endswith(f".importers.{IMPORTERS[name]}"):
                raise
            if fmt != "auto":
                raise ConfigError(f"--format {name}: this installation has no reader for it") from None
    return out


def _detect(path: str, modules: list) -> Any:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return None
    return next((m for m in modules if m.detect(path, head)), None)


def _convert_all(reading: Reading, report: FileReport, max_bytes: int) -> list[_Item]:
    """The reading's exchanges replayci reads, converted; the others listed on the report."""
    for passed in reading.passed:
        {"skipped": report.skipped, "unsupported": report.unsupported}.get(passed.kind, report.not_captured).append(
            passed)
    out = []
    for ex in reading.exchanges:
        got = _convert(reading, ex, max_bytes)
        if isinstance(got, Passed):
            report.unsupported.append(got)
        else:
            out.append(got)
            report.tools_inferred += ex.tools_inferred
    return out


def _grouped(items: list[_Item], report: FileReport, draft: bool) -> list[_Group]:
    """A reading's exchanges by agent, with the sessions among them; each exchange outside a
    session (a case of its own) with its case's checks worked out (not for a draft)."""
    by_group: dict[str, list[_Item]] = {}
    for item in items:
        by_group.setdefault(item.exchange.group, []).append(item)
    out = []
    for group in by_group.values():
        calls = [sessions.Call(i.neutral, i.normalized, i.api) for i in group]
        found = sessions.group(calls)
        report.sessions += len(found)
        members = {m for s in found for m in s.members}
        for n, item in enumerate(group):
            if n not in members and not draft:
                item.expectations = case_expectations(item.as_run, item.neutral)
        out.append(_Group(group, calls, found))
    return out


def _convert(reading: Reading, ex: Exchange, max_bytes: int) -> _Item | Passed:
    # The environment's keys, wherever a recording holds them (a trace's span, an eval log), are
    # kept out as the entry's own credentials are.
    ex.secrets = tuple(sorted(set(ex.secrets) | set(environment_secrets()), key=len, reverse=True))
    try:
        return _converted(reading, ex, max_bytes)
    except RecursionError:  # what the pack reads it could not: a body nested too deeply
        return Passed(ex.entry, "unsupported", "not imported: it is nested too deeply for replayci to read")
    except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
        # A recording is data: a shape no reader foresaw (a list where an object belongs) is one
        # exchange passed over with the reason, never the whole import stopped.
        why = writer.scrub_all(f"{type(exc).__name__}: {exc}", tuple(ex.secrets))
        return Passed(ex.entry, "unsupported", f"not imported: a shape replayci does not read ({why})")


def _tools_refusal(neutral: dict) -> str | None:
    """Why the request's tools are not ones a provider accepts or a pack reads, or None: a list
    of objects, a function each with a name, no name offered twice, each schema a JSON Schema."""
    tools = neutral.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return f"the request's tools are JSON {json_type(tools)}, not a list of tools"
    for n, tool in enumerate(tools):
        if not isinstance(tool, dict) or not tool:
            return f"tools[{n}] is {'an empty object' if tool == {} else 'JSON ' + json_type(tool)}, not a tool"
        fn = tool.get("function")
        if "function" in tool or tool.get("type") == "function":
            name = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(name, str) or not name:
                return f"tools[{n}] is a function without a name"
    found = tool_schema_problems(tools)
    if found:
        where, message = found[0]
        return f"tools{''.join(f'[{k}]' if isinstance(k, int) else f'.{k}' for k in where)}: {message}"
    return None


def _converted(reading: Reading, ex: Exchange, max_bytes: int) -> _Item | Passed:
    endpoint = classify("POST", ex.endpoint, ex.request)
    if endpoint.api is None:
        return Passed(ex.entry, "unsupported", endpoint.unsupported or f"{ex.endpoint}: not a model API path")
    secrets = tuple(ex.secrets)
    try:
        neutral = writer.neutral_request(ex.request, endpoint.api, endpoint.model, secrets)
    except TranslationError as exc:
        return Passed(ex.entry, "unsupported", f"the request does not read as {endpoint.api}: {exc}")
    refused = _tools_refusal(neutral)
    if refused is not None:  # the provider would have refused it, and a pack refuses its fixture
        return Passed(ex.entry, "unsupported", f"not imported: {refused}")
    response = writer.scrub_all(ex.response, secrets)
    try:
        if isinstance(response, str):
            normalized, as_run = read_stream_twice(response, endpoint.api, status=ex.status, headers=ex.headers)
        else:
            normalized = as_run = normalize(response, status=ex.status, headers=ex.headers)
    except NormalizeError as exc:
        return Passed(ex.entry, "unsupported", f"the answer does not read as {endpoint.api}: {exc}")
    if writer.scrub_all(normalized, secrets) is not normalized:  # a key split over a stream's events
        return Passed(ex.entry, "unsupported", "not imported: the answer, read whole, spells a credential "
                      "(split over its events, or escaped): it cannot be written without it")
    odd = unnamed_call(normalized) or (unnamed_call(as_run) if as_run is not None else None)
    if odd is not None:  # what a pack refuses to read (pack.fixtures.normalized)
        return Passed(ex.entry, "unsupported", f"not imported: tool call {odd[0]} of the answer has a name "
                      f"that is no string ({json_type(odd[1])}), which a pack cannot hold")
    original = writer.scrub_all(ex.request, secrets)
    # What the fixture will hold, checked as the proxy checks what it records: never a file the
    # pack would refuse to read (a lone surrogate, over the size limit, nested too deeply).
    texts = _member_texts({"original": original, "request": neutral, "response": response})
    why = _refusal({"request": neutral, "original": original, "response": response}, texts,
                   f"{reading.file}: entry {ex.entry}", max_bytes)
    if why is not None:
        return Passed(ex.entry, "unsupported", why.replace("recording not written", "not imported", 1))
    key = h({"endpoint": ex.endpoint, "query": ex.query, "request": original, "response": response,
             "status": ex.status})
    return _Item(reading, ex, endpoint.api, neutral, original, response, normalized, key, texts, as_run)


def _member_texts(members: dict[str, Any]) -> dict[str, str] | None:
    """Each member's text as the fixture will hold it (encoded once, for the check on reading
    and for the fixture written), or None when one needs `recordings.dumps`'s own handling."""
    try:
        return {key: member_text(value) for key, value in members.items()}
    except (ValueError, TypeError, RecursionError):
        return None


def _refusal(document: dict, texts: dict[str, str] | None, where: str, max_bytes: int) -> str | None:
    """`recordings.refusal` of *document*, from its members' *texts* when there are some."""
    if texts is None:
        return recordings.refusal(document, where, max_bytes)
    try:
        recordings.checked_text(indented_members(texts) + "\n", where, max_bytes)
    except recordings.NotWritten as exc:
        return str(exc)
    return None


def existing_keys(golden_dir: str) -> dict[str, str]:
    """meta.key -> fixture path of every fixture under *golden_dir* that has one."""
    out: dict[str, str] = {}
    for folder, dirs, names in os.walk(golden_dir):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as fh:
                    doc = json.load(fh)
            except (OSError, ValueError):
                continue
            meta = doc.get("meta") if isinstance(doc, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("key"), str) and (
                    "imported_from" in meta or "trajectory" in doc):
                out.setdefault(meta["key"], path)
    return out


class _Plan:
    """The files an import writes, decided before the first is written."""

    def __init__(self, pack_dir: str, draft: bool, redact_fields: tuple[str, ...], max_bytes: int) -> None:
        self.pack_dir, self.draft, self.redact_fields, self.max_bytes = pack_dir, draft, redact_fields, max_bytes
        self.golden_dir, self.contracts_dir = writer.pack_dirs(pack_dir)
        self.known = existing_keys(self.golden_dir)
        self.fixtures: dict[str, dict] = {}  # path -> document
        self.items: dict[str, _Item] = {}  # path -> the exchange whose fixture it is
        self.cases: dict[str, list[contracts.Case]] = {}  # tool-set contract -> its new cases
        self.scenarios: dict[str, tuple[str, dict]] = {}  # scenario contract -> (case id, fixture doc)
        self.model: str | None = None

    def add_reading(self, groups: list[_Group], report: FileReport) -> None:
        for group in groups:
            members = {m for s in group.found for m in s.members}
            for s in group.found:
                self._add_session(group.items, group.calls, s, report)
            for n, item in enumerate(group.items):
                if n not in members:
                    self._add_single(item, report)

    def _claim(self, key: str, report: FileReport, path: str) -> bool:
        """Whether *key* is new (and now taken by *path*); else counted as present or duplicate."""
        if key in self.known:
            if self.known[key] in self.fixtures:
                report.duplicates += 1
            else:
                report.present += 1
            return False
        self.known[key] = path
        return True

    def _redacted(self, doc: dict, where: str) -> dict:
        """*doc* with its `redact.fields` blanked, before anything is named after what it holds:
        text the fixture does not keep never names a file, a folder or a case either."""
        if not self.redact_fields:
            return doc
        try:
            return recordings.redact(doc, self.redact_fields)
        except recordings.NotWritten as exc:
            raise ConfigError(Problem(where, None, None, f"not written: {exc}")) from None

    def _fixture(self, item: _Item, extra: dict | None = None) -> dict:
        ex = item.exchange
        meta: dict[str, Any] = {"imported_from": {"file": item.reading.file, "entry": ex.entry,
                                                  "format": item.reading.format},
                                "fidelity": ex.fidelity, "key": item.key, "api": item.api, "endpoint": ex.endpoint,
                                "host": ex.host, "query": ex.query, "stream": item.stream,
                                "content_type": ex.content_type, "replayci_version": __version__, **(extra or {})}
        if ex.headers:
            meta["headers"] = ex.headers
        if ex.tools_inferred:
            meta["tools_inferred"] = True
        self.model = self.model or item.neutral.get("model")
        meta = writer.scrub_all(meta, tuple(ex.secrets))  # a path or host may carry one too
        return self._redacted(writer.fixture_document(item.neutral, item.original, item.response, ex.status, meta),
                              f"{item.reading.file}: entry {ex.entry}")

    def _add_single(self, item: _Item, report: FileReport) -> None:
        doc = self._fixture(item) if self.redact_fields else None
        names = contracts.tool_names(doc["request"] if doc is not None else item.neutral)
        contract = contracts.contract_name(names)
        case_id = f"{writer.CASE_PREFIX.get(item.api, 'call')}-{item.key[:12]}"
        path = os.path.join(self.golden_dir, contract, f"{case_id}.json")
        claimed = self._claim(item.key, report, path)
        report.placed[item.exchange.entry] = (self.known[item.key], None)
        if not claimed:
            return
        doc = self.fixtures[path] = doc if doc is not None else self._fixture(item)
        self.items[path] = item
        report.imported += 1
        case = _case(case_id, f"{contract}/{case_id}.json", doc["request"], doc["response"], item.exchange.status,
                     item.api, _order(item.reading.file, item.exchange.entry), item.exchange.headers)
        if doc["request"] is item.neutral and doc["response"] is item.response:
            _read_already(case, item)
        self.cases.setdefault(contract, []).append(case)

    def _add_session(self, group: list[_Item], calls: list[sessions.Call], session: sessions.Session,
                     report: FileReport) -> None:
        key = sessions.session_key(calls, session)
        first = group[session.members[0]]
        meta = {"imported_from": {"file": first.reading.file, "format": first.reading.format,
                                  "entries": [group[m].exchange.entry for m in session.members]},
                "fidelity": first.exchange.fidelity, "key": key, "api": first.api, "replayci_version": __version__}
        doc = self._redacted(sessions.scenario_document(calls, session, first.original, meta),
                             f"{first.reading.file}: entry {first.exchange.entry}")
        name = sessions.scenario_name(doc, key, lambda name: name in self.scenarios or os.path.exists(
            os.path.join(self.contracts_dir, f"{name}.yaml")))
        case_id = f"session-{key[:12]}"
        path = os.path.join(self.golden_dir, name, f"{case_id}.json")
        claimed = self._claim(key, report, path)
        report.scenarios.append(([group[m].exchange.entry for m in session.members], self.known[key]))
        for step, member in enumerate(session.members, 1):
            item = group[member]
            step_path = os.path.join(self.golden_dir, name, "steps", f"step-{step}-{item.key[:12]}.json")
            if claimed and item.key not in self.known:
                self.known[item.key] = step_path
                self.fixtures[step_path] = self._fixture(item, {"session": key})
                self.items[step_path] = item
            report.placed[item.exchange.entry] = (self.known[item.key], None) if item.key in self.known \
                else (self.known[key], step)
            report.in_sessions += claimed
        if not claimed:
            return
        self.fixtures[path] = doc
        self.scenarios[name] = (case_id, doc)

    def _text(self, path: str, doc: dict) -> str | None:
        """The fixture's text (`recordings.dumps`'s) from its exchange's texts encoded when it was
        read, or None when there are none to use (redacted, or not kept)."""
        item = self.items.get(path)
        if item is None or item.texts is None or doc is not self.fixtures[path] or set(doc) != _FIXTURE_KEYS \
                or doc["original_request"] is not item.original or doc["request"] is not item.neutral \
                or doc["response"] is not item.response:
            return None
        members = {"original_request": item.texts["original"], "request": item.texts["request"],
                   "response": item.texts["response"]}
        try:
            members.update((key, member_text(doc[key])) for key in ("boundary", "meta", "status"))
        except (ValueError, TypeError, RecursionError):
            return None
        return indented_members(members) + "\n"

    def write(self, result: ImportResult, log: Callable[[str], None]) -> None:
        """Write the planned fixtures and the contracts that list them, all renamed into place
        only once every one is on disk."""
        if not self.fixtures:
            return
        files = {}
        for path, doc in self.fixtures.items():  # (redacted as they were planned)
            text = self._text(path, doc)
            try:
                files[path] = recordings.checked(doc, path, self.max_bytes) if text is None \
                    else recordings.checked_text(text, path, self.max_bytes)
            except recordings.NotWritten as exc:  # nothing is written: the pack would refuse to read this file
                raise ConfigError(Problem(path, None, None, str(exc))) from None
        result.fixtures = len(files)
        by_folder: dict[str, list[str]] = {}
        for path in self.fixtures:
            by_folder.setdefault(os.path.dirname(path), []).append(path)
        for name in sorted(self.cases):
            path = os.path.join(self.contracts_dir, f"{name}.yaml")
            cases = _cases_on_disk(self.golden_dir, name, self.fixtures, self.items, by_folder)
            names = contracts.tool_names(cases[0].neutral) if cases else []
            text = writer.contract_text(path, functools.partial(render_contract, names, cases, self.draft),
                                        self.cases[name], log)
            if text is not None:
                files[path] = text
        for name, (case_id, doc) in sorted(self.scenarios.items()):
            path = os.path.join(self.contracts_dir, f"{name}.yaml")
            if not os.path.exists(path):
                files[path] = writer.render_scenario_contract(doc, case_id, f"{name}/{case_id}.json", self.draft)
        # pack.yaml first: an import stopped between the two leaves a pack the next one completes.
        writer.ensure_pack(self.pack_dir, self.model, "Imported by replayci import", "replayci import")
        write_all_atomic(files)
        result.contracts = sorted(p for p in files if p.startswith(self.contracts_dir + os.sep))


def _order(file: str, entry: Any) -> str:
    """The sort key of a case: its source file, then its entry."""
    return f"{file}\x00{str(entry).rjust(12, '0')}"


def _case(case_id: str, input_ref: str, neutral: dict, response: Any, status: int, api: str,
          order: str, headers: dict | None = None) -> contracts.Case:
    return contracts.Case(case_id, input_ref, f"imported {api} exchange", order, api, neutral, response, status,
                          headers or None)


def _read_already(case: contracts.Case, item: _Item) -> None:
    """The case of *item*'s fixture given what was worked out when the item was read (the same
    as Case's own properties would give, once more)."""
    case.__dict__["normalized"] = item.as_run
    if item.expectations is not None:
        case.__dict__["expectations"] = item.expectations


def _cases_on_disk(golden_dir: str, contract: str, planned: dict[str, dict], items: dict[str, _Item],
                   by_folder: dict[str, list[str]]) -> list[contracts.Case]:
    """Every case of a tool set's contract: the fixtures directly in its golden folder, those on
    disk and those about to be written (*planned*, by path, with the exchange of each in
    *items*, and the paths by folder in *by_folder*)."""
    folder = os.path.join(golden_dir, contract)
    names = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    names |= {os.path.basename(p) for p in by_folder.get(folder, ())}
    out = []
    for name in sorted(names):
        path = os.path.join(folder, name)
        doc = planned.get(path) or _read_json(path) if name.endswith(".json") else None
        if not isinstance(doc, dict) or not isinstance(doc.get("request"), dict) or "trajectory" in doc:
            continue
        meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
        source = meta.get("imported_from") if isinstance(meta.get("imported_from"), dict) else {}
        order = _order(str(source.get("file", "")), source.get("entry", "")) if source else \
            str(meta.get("captured_at") or "")
        status = doc.get("status") if type(doc.get("status")) is int else 200
        case = _case(name[:-5], f"{contract}/{name}", doc["request"], doc.get("response"), status,
                     str(meta.get("api") or "openai"), order, kept_headers(doc))
        item = items.get(path)
        if item is not None and doc is planned.get(path) and doc["request"] is item.neutral \
                and doc.get("response") is item.response:
            _read_already(case, item)
        out.append(case)
    return out


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def render_contract(names: list[str], cases: list[contracts.Case], draft: bool) -> str:
    """The contract of a tool set's cases (the one place import asks the contract writer)."""
    return contracts.render(names, cases, draft=draft, writer="replayci import")
