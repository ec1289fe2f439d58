"""What an import writes, decided before the first file is: each converted exchange's fixture
and case, each session's scenario, the contracts that list them; then all written as one step."""
from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.files import write_all_atomic
from ..core.paths import display_path
from ..core.version import __version__
from ..engine import recordings
from ..pack import loader
from ..pack.fixtures import kept_headers
from . import budget, contracts, gate, sessions, writer
from .converting import Converted, Group, fixture_text
from .correspond import Index, Shape
from .importers import Passed


@dataclass(frozen=True)
class _Planned:
    """The fixture of one converted exchange, with what its meta adds (a session's key)."""

    item: Converted
    extra: dict | None = None


def existing_keys(golden_dir: str) -> dict[str, str]:
    """meta.key -> fixture path of every fixture under *golden_dir* that has one."""
    out: dict[str, str] = {}
    for folder, dirs, names in os.walk(golden_dir):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            doc = _read_json(path)
            meta = doc.get("meta") if isinstance(doc, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("key"), str) and (
                    "imported_from" in meta or "trajectory" in doc):
                out.setdefault(meta["key"], path)
    return out


def source_name(file: str, pack_dir: str) -> str:
    """A source file as `imported_from.file` names it: relative to the current directory (or,
    on another drive, to the pack), with forward slashes: the pack is committed and imported
    again from other checkouts."""
    if os.path.isabs(file):
        try:
            file = os.path.relpath(file)
        except ValueError:
            file = os.path.relpath(file, pack_dir)
    return os.path.normpath(file).replace(os.sep, "/")


class Plan:
    """The files an import writes, decided before the first is written."""

    def __init__(self, pack_dir: str, draft: bool, redact_fields: tuple[str, ...], max_bytes: int,
                 update: bool = False) -> None:
        self.pack_dir, self.draft, self.redact_fields, self.max_bytes = pack_dir, draft, redact_fields, max_bytes
        self.golden_dir, self.contracts_dir = writer.pack_dirs(pack_dir)
        # Over existing contracts, each exchange is judged against its case before it is written
        # (with *update*, only found: it is written over its case's fixture whatever it does).
        self.update = update
        self.index = None if draft else _index(pack_dir)
        self.broken: list = []  # the answers that broke their cases (CaseResult), not written
        self.known = existing_keys(self.golden_dir)
        self._own = {os.path.realpath(path): path for path in self.known.values()}  # import's own fixtures
        self.replacing: set[str] = set()  # fixtures on disk written over by their cases' new exchanges
        self.retired: list[str] = []  # the steps of a replaced session that its new one has not: removed
        self.fixtures: dict[str, _Planned | dict] = {}  # path -> an exchange's fixture, or a scenario's document
        self.cases: dict[str, list[contracts.Case]] = {}  # tool-set contract -> its new cases
        self.scenarios: dict[str, tuple[str, dict, str]] = {}  # scenario contract -> (case id, fixture, contract)
        self.model: str | None = None

    def add_reading(self, groups: list[Group], report: Any) -> None:
        """Plan the fixtures of one reading's *groups*, counting on its *report*."""
        for group in groups:
            members = {m for s in group.found for m in s.members}
            for s in group.found:
                self._add_session(group, s, report)
            for n, item in enumerate(group.items):
                if n not in members:
                    self._add_single(item, report)

    def _claim(self, key: str, report: Any, path: str, calls: int = 1, over: bool = False) -> bool:
        """Whether *key* is new (and now taken by *path*); else its *calls* (a session's every
        one) counted as present or duplicate. *over*: *path* is the fixture of the case the
        exchange corresponds to, written over when the key is new there (or with update)."""
        if key in self.known and not (over and self.update and self.known[key] == path):
            if self.known[key] in self.fixtures:
                report.duplicates += calls
            else:
                report.present += calls
            return False
        self.known[key] = path
        if over:
            self.replacing.add(path)
        return True

    def source(self, file: str) -> str:
        return source_name(file, self.pack_dir)

    def _fixture(self, planned: _Planned) -> dict:
        item, ex = planned.item, planned.item.exchange
        meta: dict[str, Any] = {"imported_from": {"file": self.source(item.file), "entry": ex.entry,
                                                  "format": item.format},
                                "fidelity": ex.fidelity, "key": item.key, "api": item.api, "endpoint": ex.endpoint,
                                "host": ex.host, "query": ex.query, "stream": item.stream,
                                "content_type": ex.content_type, "replayci_version": __version__,
                                **(planned.extra or {})}
        if ex.headers:
            meta["headers"] = ex.headers
        if item.format == "otel" and ex.group:  # the span the call was traced in
            meta["imported_from"]["trace_id"] = ex.group
        if ex.checks is not None:  # the source's own checks: a later import writes the case with them again
            meta["imported_from"]["checks"] = ex.checks
        if ex.label:
            meta["imported_from"]["label"] = ex.label
        if ex.tools_inferred:
            meta["tools_inferred"] = True
        meta = writer.scrub_all(meta, tuple(ex.secrets))  # a path or host may carry one too
        return writer.fixture_document(item.neutral, item.original, item.response, ex.status, meta)

    def _corresponding(self, item: Converted, calls: list[sessions.Call] | None = None) -> tuple[str | None, bool]:
        """(the fixture of the case *item* — or the session of *calls* it starts — corresponds
        to when import may write over it, whether it breaks that case). One that breaks is listed."""
        if self.index is None:
            return None, False
        shape = Shape(item.api, item.neutral)
        found = self.index.session(shape, similar=False) if calls else self.index.single(shape, similar=False)
        if found.case is None:
            return None, False
        if not self.update:
            result = gate.judge_loop(found.case.item, calls, origin="import", recorded=found.case.shape.request) \
                if calls else gate.judge_answer(found.case.item, item.neutral, item.normalized, origin="import",
                                                recorded=found.case.shape.request)
            if gate.breaks(result):
                self.broken.append(result)
                return None, True
        path = self._own.get(os.path.realpath(found.case.item.case.fixture_path))
        # (a case another exchange of this import took over already: this one is a case of its own)
        return (path if path is not None and path not in self.fixtures else None), False

    def _redacted(self, doc: dict, where: str) -> dict:
        """*doc* with its `redact.fields` blanked, before anything is named after what it holds:
        text the fixture does not keep never names a file, a folder or a case either."""
        try:
            return recordings.redact(doc, self.redact_fields)
        except recordings.NotWritten as exc:
            raise ConfigError(Problem(where, None, None, f"not written: {exc}")) from None

    def _add_single(self, item: Converted, report: Any) -> None:
        over, broke = self._corresponding(item)
        if broke:
            return
        doc = self._redacted(self._fixture(_Planned(item)), f"{item.file}: entry {item.exchange.entry}") \
            if self.redact_fields else None
        names = contracts.tool_names(doc["request"] if doc is not None else item.neutral)
        contract = contracts.contract_name(names)
        case_id = contracts.case_name(writer.CASE_PREFIX.get(item.api, "call"),
                                      doc["request"] if doc is not None else item.neutral, item.key, None, 12)
        if over is not None:  # the case keeps its id, its fixture replaced by the new exchange
            contract, case_id = os.path.basename(os.path.dirname(over)), os.path.basename(over)[:-5]
        path = over or os.path.join(self.golden_dir, contract, f"{case_id}.json")
        claimed = self._claim(item.key, report, path, over=over is not None)
        report.placed[item.exchange.entry] = (self.known[item.key], None)
        if not claimed:
            return
        self.fixtures[path] = _Planned(item) if doc is None else doc
        self.model = self.model or item.neutral.get("model")
        report.imported += 1
        ref, ex, source = f"{contract}/{case_id}.json", item.exchange, self.source(item.file)
        self.cases.setdefault(contract, []).append(_case_of(item, case_id, ref, source) if doc is None else _case(
            case_id, ref, doc["request"], doc["response"], ex.status, item.api, _order(source, ex.entry),
            ex.headers, label=ex.label or describe(ex.endpoint, item.stream)))

    def _add_session(self, group: Group, session: sessions.Session, report: Any) -> None:
        key = sessions.session_key(group.calls, session)
        first = group.items[session.members[0]]
        over, broke = self._corresponding(first, [group.calls[m] for m in session.members])
        if broke:
            return  # none of its steps written
        meta = {"imported_from": {"file": self.source(first.file), "format": first.format,
                                  "entries": [group.items[m].exchange.entry for m in session.members]},
                "fidelity": first.exchange.fidelity, "key": key, "api": first.api, "replayci_version": __version__}
        if any(group.items[m].exchange.tools_inferred for m in session.members):
            meta["tools_inferred"] = True  # a step's tools declared by name only: its arguments go unchecked
        doc = sessions.scenario_document(group.calls, session, first.original, meta)
        if self.redact_fields:  # named after what it keeps
            doc = self._redacted(doc, f"{first.file}: entry {first.exchange.entry}")
        if over is not None:  # the session it corresponds to: its scenario keeps its name and case id
            name, case_id, path = os.path.basename(os.path.dirname(over)), os.path.basename(over)[:-5], over
        else:
            name = sessions.scenario_name(doc, key, lambda name: name in self.scenarios or os.path.exists(
                os.path.join(self.contracts_dir, f"{name}.yaml")))
            case_id = f"session-{key[:12]}"
            path = os.path.join(self.golden_dir, name, f"{case_id}.json")
        try:
            text = writer.render_scenario_contract(doc, case_id, f"{name}/{case_id}.json", self.draft)
        except budget.TooLarge as exc:  # its steps are not written as cases of their own either
            report.unsupported.append(Passed(first.exchange.entry, "unsupported", f"not imported: the session of "
                                             f"{len(session.members)} model calls starting here: {exc}"))
            return
        claimed = self._claim(key, report, path, len(session.members), over=over is not None)
        report.scenarios.append(([group.items[m].exchange.entry for m in session.members], self.known[key]))
        for step, member in enumerate(session.members, 1):
            item = group.items[member]
            step_path = os.path.join(self.golden_dir, name, "steps", f"step-{step}-{item.key[:12]}.json")
            if claimed and item.key not in self.known:
                self.known[item.key] = step_path
                self.fixtures[step_path] = _Planned(item, {"session": key})
                self.model = self.model or item.neutral.get("model")
            report.placed[item.exchange.entry] = (self.known[item.key], None) if item.key in self.known \
                else (self.known[key], step)
            report.in_sessions += claimed
        if not claimed:
            return
        self.fixtures[path] = doc
        self.scenarios[name] = (case_id, doc, text)
        if over is not None:
            kept = {self.known[group.items[m].key] for m in session.members}
            self.retired += [p for p in _steps_of(over) if p not in kept]

    def _text(self, path: str, planned: _Planned | dict) -> str:
        """The fixture's text as `recordings.dumps` writes it, redacted and checked: an
        exchange's from the texts encoded when it was read, unless a redact field may change it."""
        doc = planned if isinstance(planned, dict) else self._fixture(planned)
        try:
            if isinstance(planned, _Planned) and not self.redact_fields:
                text = fixture_text(planned.item, {k: doc[k] for k in ("boundary", "meta", "status")})
                if text is not None:
                    return recordings.checked_text(text, path, self.max_bytes)
            return recordings.checked(recordings.redact(doc, self.redact_fields), path, self.max_bytes)
        except recordings.NotWritten as exc:  # nothing is written: the pack would refuse to read this file
            raise ConfigError(Problem(path, None, None, str(exc))) from None

    def write(self, result: Any, log: Callable[[str], None]) -> None:
        """Write the planned fixtures and the contracts that list them, all renamed into place
        only once every one is on disk."""
        if not self.fixtures:
            return
        # A planned fixture's file is new: one there already holds no key the pack knows (a fixture
        # mid-edit that does not parse, a file of the user's own) and is never replaced.
        taken = [Problem(display_path(path), None, None, "exists, and is not a fixture import wrote (it does not "
                         "parse, or holds no meta.key): import would replace it; finish the edit or move it")
                 for path in self.fixtures if os.path.lexists(path) and path not in self.replacing]
        if taken:
            raise ConfigError(taken)
        files: dict[str, str | None] = {path: self._text(path, planned) for path, planned in self.fixtures.items()}
        result.fixtures = len(files)
        by_folder: dict[str, list[str]] = {}
        for path in self.fixtures:
            by_folder.setdefault(os.path.dirname(path), []).append(path)
        for name in sorted(self.cases):
            path = os.path.join(self.contracts_dir, f"{name}.yaml")
            cases = cases_on_disk(self.golden_dir, name, self.fixtures, by_folder, self.pack_dir)
            names = contracts.tool_names(cases[0].neutral) if cases else []
            files.update(writer.contract_files(path, functools.partial(render_parts, names, draft=self.draft),
                                               cases, self.cases[name], self.draft, log))
        for name, (case_id, _, text) in sorted(self.scenarios.items()):
            path = os.path.join(self.contracts_dir, f"{name}.yaml")
            if not os.path.exists(path) or (os.path.join(self.golden_dir, name, f"{case_id}.json") in self.replacing
                                            and contracts.owned(_read_text(path))):
                files[path] = text
        # pack.yaml first: an import stopped between the two leaves a pack the next one completes.
        writer.ensure_pack(self.pack_dir, self.model, "Imported by replayci import", "replayci import")
        gone = [path for path, text in files.items() if text is None]
        files = {path: text for path, text in files.items() if text is not None}
        write_all_atomic(files)
        for path in gone:  # generated part files no case is left for
            contracts.remove_part(path)
        for path in self.retired:  # served by no case any more: the session that held them was replaced
            try:
                os.remove(path)
            except OSError as exc:
                log(f"replayci import: {display_path(path)}: a step of the session replaced, not removed: {exc}")
        result.contracts = sorted(p for p in files if p.startswith(self.contracts_dir + os.sep))


def _index(pack_dir: str) -> Index | None:
    """The cases of the pack being imported into, for correspondence (None: no pack, or one that
    does not load: nothing to judge against)."""
    if not os.path.exists(os.path.join(pack_dir, "pack.yaml")):
        return None
    try:
        index = Index.of([loader.load_pack(pack_dir)])
    except ConfigError:
        return None
    return index if index.every else None


def _order(file: str, entry: Any) -> str:
    """The sort key of a case: its source file, then its entry."""
    return f"{file}\x00{str(entry).rjust(12, '0')}"


def _case(case_id: str, input_ref: str, neutral: dict, response: Any, status: int, api: str,
          order: str, headers: dict | None = None, known: contracts.Known | None = None,
          label: str = "") -> contracts.Case:
    return contracts.Case(case_id, input_ref, label or f"imported {api} exchange", order, api, neutral, response,
                          status, headers or None, known)


def describe(endpoint: Any, stream: Any) -> str:
    """An imported case's description, as the proxy describes its captures."""
    return f"POST {endpoint}" + (" (streamed)" if stream is True else "") if isinstance(endpoint, str) and \
        endpoint else ""


def _case_of(item: Converted, case_id: str, input_ref: str, source: str) -> contracts.Case:
    """The case of a converted exchange's fixture, taking what was worked out when it was read
    (*source*: its file as the fixture names it)."""
    ex = item.exchange
    return _case(case_id, input_ref, item.neutral, item.response, ex.status, item.api, _order(source, ex.entry),
                 ex.headers, item.known, ex.label or describe(ex.endpoint, item.stream))


def cases_on_disk(golden_dir: str, contract: str, planned: dict[str, _Planned | dict],
                  by_folder: dict[str, list[str]], pack_dir: str = "") -> list[contracts.Case]:
    """Every case of a tool set's contract: the fixtures directly in its golden folder, those on
    disk and those about to be written (*planned*, by path, and the paths by folder in *by_folder*)."""
    pack_dir = pack_dir or os.path.dirname(golden_dir)
    folder = os.path.join(golden_dir, contract)
    names = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    names |= {os.path.basename(p) for p in by_folder.get(folder, ())}
    out = []
    for name in sorted(names):
        path = os.path.join(folder, name)
        got = planned.get(path)
        if isinstance(got, _Planned):
            out.append(_case_of(got.item, name[:-5], f"{contract}/{name}", source_name(got.item.file, pack_dir)))
            continue
        doc = got or _read_json(path) if name.endswith(".json") else None
        if not isinstance(doc, dict) or not isinstance(doc.get("request"), dict) or "trajectory" in doc:
            continue
        meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
        source = meta.get("imported_from") if isinstance(meta.get("imported_from"), dict) else {}
        order = _order(str(source.get("file", "")), source.get("entry", "")) if source else \
            str(meta.get("captured_at") or "")
        status = doc.get("status") if type(doc.get("status")) is int else 200
        label = source.get("label") if isinstance(source.get("label"), str) else ""
        case = _case(name[:-5], f"{contract}/{name}", doc["request"], doc.get("response"), status,
                     str(meta.get("api") or "openai"), order, kept_headers(doc),
                     label=label or describe(meta.get("endpoint"), meta.get("stream")))
        if isinstance(source.get("checks"), dict):  # the checks its source stated (promptfoo's assertions)
            case = dataclasses.replace(case, known=contracts.Known(case.normalized, source["checks"]))
        out.append(case)
    return out


def _steps_of(scenario: str) -> list[str]:
    """The step fixtures written beside a session's scenario fixture (its meta.key in theirs)."""
    doc = _read_json(scenario)
    meta = doc.get("meta") if isinstance(doc, dict) else None
    key = meta.get("key") if isinstance(meta, dict) else None
    folder = os.path.join(os.path.dirname(scenario), "steps")
    if not isinstance(key, str) or not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        step = _read_json(os.path.join(folder, name))
        step_meta = step.get("meta") if isinstance(step, dict) else None
        if isinstance(step_meta, dict) and step_meta.get("session") == key:
            out.append(os.path.join(folder, name))
    return out


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def render_contract(names: list[str], cases: list[contracts.Case], draft: bool) -> str:
    """The contract of a tool set's cases (its first file, when they need more)."""
    return render_parts(names, cases, draft=draft)[0]


def render_parts(names: list[str], cases: list[contracts.Case], *, draft: bool) -> list[str]:
    """The contract files of a tool set's cases (the one place import asks the contract writer)."""
    return contracts.render_parts(names, cases, draft=draft, writer="replayci import")
