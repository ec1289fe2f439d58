"""--write-negatives: killed mutants written back as negative golden cases (a fixture each, and
an entry appended to the contract's golden_cases), all or nothing per contract."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from typing import Any, NamedTuple

from ...capture.contracts import listed_case_ids
from ...capture.yamledit import InsertError, append_golden_cases
from ...core.errors import ConfigError, Problem
from ...core.files import folder_lock, write_atomic
from ...core.hashing import boundary_hashes, h
from ...core.paths import display_path
from ...engine.cases import boundary_change
from ...formats.canonical import fixture_response
from ...pack.model import Contract
from ...pack.sources import parse_yaml
from .model import ContractMutation, MutantOutcome, MutationReport, Written

_PLAIN_SCALAR = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


class Negative(NamedTuple):
    """A negative case to write: the mutant, its case id, fixture path and document, its entry;
    *repair*: the path holds what an interrupted run left of it (replaced)."""

    outcome: MutantOutcome
    case_id: str
    path: str
    document: dict
    entry: list[tuple[str, str]]
    repair: bool = False


def _text(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _left_by_a_cut_run(path: str, document: dict) -> bool:
    """Whether the file at *path* is what an interrupted --write-negatives left of *document*:
    empty, cut short (not JSON), or the whole fixture written before its contract was."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return False
    if text == _text(document):
        return True
    try:
        json.loads(text)
    except ValueError:
        return _text(document).startswith(text)  # a prefix of what it would have been
    except RecursionError:
        return False
    return False


def _create(path: str, text: str) -> None:
    """A new file, whole or not at all, never over an existing one (FileExistsError)."""
    import tempfile  # why: only --write-negatives writes fixtures

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)  # refuses an existing path: the check and the write are one step
    finally:
        os.unlink(tmp)


class _Deferred:
    """Ctrl-C and SIGTERM while negatives are written: noted, and raised as KeyboardInterrupt
    between two contracts, so each contract's fixtures and its file are written together or
    not at all (an interrupt inside one would undo fixtures its written contract lists)."""

    def __init__(self) -> None:
        self.pending = False
        self._previous: dict = {}

    def __enter__(self) -> _Deferred:
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._note)
        except ValueError:  # not the main thread: signals are not ours to handle
            pass
        return self

    def _note(self, signum, frame) -> None:  # noqa: ARG002 - the signal module's signature
        self.pending = True

    def check(self) -> None:
        if self.pending:
            raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

def _slug(text: str) -> str:
    """A mutant id as part of a case id and file name: rename:a->b -> rename.a-to-b."""
    text = text.replace("->", "-to-").replace(":", ".")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "mutant"


# The longest negative file name written: file systems take 255 bytes, and a write goes through
# a temporary file named after it.
MAX_FILE_NAME = 200


def _names(contract: str, case: str, mutant: str) -> tuple[str, str]:
    """(case id, file name) of a mutant's negative case; cut, with a digest of the whole, when a
    long tool, argument or case name would make the file name longer than MAX_FILE_NAME bytes."""
    case_id = f"{case}.mutant.{_slug(mutant)}"
    file_name = f"{contract}.{case_id}.json"
    if len(file_name.encode("utf-8")) <= MAX_FILE_NAME:
        return case_id, file_name
    case_id = f"{case[:48]}.mutant.{_slug(mutant)[:48]}-{h(case_id)[:8]}"
    return case_id, f"{contract[:64]}.{case_id}.json"


def choose_negatives(entry: ContractMutation) -> list[MutantOutcome]:
    """One killed mutant per classification the contract has no negative case for yet."""
    covered = {c.expected_error for c in entry.contract.cases if not c.expect_ok and c.expected_error}
    chosen: dict[str, MutantOutcome] = {}
    for o in entry.outcomes:
        if o.status == "killed" and o.classification not in covered and o.classification not in chosen:
            chosen[o.classification] = o
    return list(chosen.values())


def _yaml_scalar(text: str) -> str:
    if _PLAIN_SCALAR.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _case_entry(case_id: str, ref: str, classification: str, description: str,
                assertions: Any = None) -> list[tuple[str, str]]:
    """A negative case's entry; *assertions*, its parent case's own, as a one-line flow mapping
    (JSON is YAML 1.2 flow), so the checks that caught the mutant still run on it."""
    entry = [("id", _yaml_scalar(case_id)), ("input_ref", _yaml_scalar(ref)), ("expect_ok", "false"),
             ("expected_error", classification), ("provider_modes", "[recorded]"),
             ("tags", "[mutant]"), ("description", json.dumps(description, ensure_ascii=False))]
    if assertions is not None:
        entry.append(("assertions", json.dumps(assertions, ensure_ascii=False)))
    return entry


def _case_assertions(contract: Contract) -> dict[str, Any]:
    """Each golden case's own ``assertions`` as written in the contract file, by case id."""
    with open(contract.file, encoding="utf-8-sig") as fh:
        cases = parse_yaml(fh.read(), display_path(contract.file)).value.get("golden_cases") or []
    return {c["id"]: c["assertions"] for c in cases
            if isinstance(c, dict) and isinstance(c.get("id"), str) and "assertions" in c}


def _scalar_value(v: str) -> Any:
    """What an entry value written by _case_entry parses back to."""
    if v == "false":
        return False
    if v == "[recorded]":
        return ["recorded"]
    if v == "[mutant]":
        return ["mutant"]
    if v.startswith(('"', "{")):
        return json.loads(v)
    return v


def _checked_insert(contract: Contract, entries: list[list[tuple[str, str]]]) -> tuple[bytes, bytes]:
    """(old bytes, new bytes) of the contract file; the new one verified by re-parsing."""
    display = display_path(contract.file)
    with open(contract.file, "rb") as fh:
        old = fh.read()
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(Problem(display, None, None, "not valid UTF-8; cannot add negative cases")) from None
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    try:
        new_body = append_golden_cases(body, entries, display)
    except InsertError as exc:
        raise ConfigError(Problem(display, None, None, f"cannot add negative cases: {exc}")) from None
    # Only an insertion: the old text is the new one with one contiguous block taken out.
    p = len(os.path.commonprefix([body, new_body]))
    if not (len(new_body) > len(body) and new_body.endswith(body[p:])):
        raise ConfigError(Problem(display, None, None, "cannot add negative cases: the insertion "
                                  "would change other text; add them by hand"))
    # Every existing value is unchanged and the new cases parse back exactly as meant.
    before = parse_yaml(body, display).value
    after = parse_yaml(new_body, display).value
    wanted = [{k: _scalar_value(v) for k, v in entry} for entry in entries]
    expected = {**before, "golden_cases": list(before["golden_cases"]) + wanted}
    if after != expected:
        raise ConfigError(Problem(display, None, None, "cannot add negative cases: the file's layout "
                                  "defeats a text-level insertion; add them by hand"))
    return old, (("\ufeff" if bom else "") + new_body).encode("utf-8")


def _listed_now(path: str) -> set[str]:
    """The case ids the contract file lists now (another run may have added some since it was
    loaded)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return listed_case_ids(fh.read())
    except (OSError, UnicodeDecodeError):
        return set()


def _plan(entry: ContractMutation, written: list[Written]) -> list[Negative]:
    """The negative cases to write for one contract; those that cannot be go to *written*."""
    contract, pack = entry.contract, entry.pack
    if contract.scenario:  # its fixture is a whole recorded loop, not one answer to pin
        written += [Written(contract.display, o.case, None, o.classification,
                            "a scenario's negative cases are not written (its fixture is a whole loop)")
                    for o in choose_negatives(entry)]
        return []
    plan = []
    existing = {c.id for c in contract.cases} | _listed_now(contract.file)
    own = _case_assertions(contract)
    for o in choose_negatives(entry):
        case_id, file_name = _names(contract.id, o.case, o.mutant.name)
        path = os.path.join(pack.negative_golden_dir, file_name)
        if case_id in existing:
            written.append(Written(contract.display, case_id, None, o.classification, "already a golden case"))
            continue
        fixture = entry.bases[o.case]
        boundary = dict(fixture.boundary or {})
        if not boundary or boundary_change(boundary, fixture.request):
            boundary = {"model": boundary.get("model") or fixture.request.get("model"),
                        **boundary_hashes(fixture.request)}
        description = (f"replayci mutate: {o.case} with {o.mutant.what} "
                       f"({o.mutant.name}), caught as {o.classification}")
        document = {"description": description, "boundary": boundary, "request": fixture.request,
                    "response": fixture_response(o.mutant.response)}
        repair = os.path.lexists(path)
        if repair and not _left_by_a_cut_run(path, document):
            written.append(Written(contract.display, case_id, None, o.classification,
                                   f"{display_path(path)} exists; not overwritten"))
            continue
        plan.append(Negative(o, case_id, path, document,
                             _case_entry(case_id, f"negative/{file_name}", o.classification,
                                         f"mutant of {o.case}: {o.mutant.what}", own.get(o.case)), repair))
    return plan


def _write(entry: ContractMutation, plan: list[Negative]) -> None:
    """The fixtures, then the contract file; on any failure the fixtures written are removed.
    Each fixture appears whole or not at all (a new one never over another file; what an
    interrupted run left, replaced)."""
    contract = entry.contract
    old, new = _checked_insert(contract, [n.entry for n in plan])
    os.makedirs(entry.pack.negative_golden_dir, exist_ok=True)
    done = []
    try:
        for n in plan:
            if n.repair:
                write_atomic(n.path, _text(n.document))
                continue  # a repaired file stays: whole now, and what the next run would write
            _create(n.path, _text(n.document))
            done.append(n.path)
        with open(contract.file, "rb") as fh:
            if fh.read() != old:
                raise ConfigError(Problem(contract.display, None, None,
                                          "changed while mutate ran; run it again"))
        write_atomic(contract.file, new)
    except BaseException:
        for path in done:  # all or nothing per contract
            os.unlink(path)
        raise


def write_negatives(report: MutationReport) -> list[Written]:
    """Write chosen killed mutants as negative golden cases; never overwrites a file.

    Per contract, one killed mutant per classification it has no negative case for: a
    fixture (the case's request, a matching boundary, the mutated response) in the pack's
    negative golden directory, and an ``expect_ok: false`` entry with that
    ``expected_error`` appended to the contract's golden_cases.
    """
    written: list[Written] = []
    with contextlib.ExitStack() as locks:
        # Another `mutate --write-negatives` on these packs waits: it plans only once this one
        # has written (a file there already is never written again).
        for folder in sorted({entry.pack.dir for entry in report.contracts}):
            locks.enter_context(folder_lock(folder))
        return _write_all(report, written)


def _write_all(report: MutationReport, written: list[Written]) -> list[Written]:
    with _Deferred() as interrupts:
        for entry in report.contracts:
            interrupts.check()
            plan = _plan(entry, written)
            if not plan:
                continue
            _write(entry, plan)
            written += [Written(entry.contract.display, n.case_id, display_path(n.path), n.outcome.classification)
                        for n in plan]
        interrupts.check()
    return written
