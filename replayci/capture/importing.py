"""`replayci import`: the model traffic teams already recorded — cassettes, HAR files, trace
exports, eval logs — written into a pack in the proxy's fixture form, agent loops as scenarios.

Everything is read, converted and checked before anything is written: bad input leaves the pack
as it was. Identical exchanges are written once; an exchange (or session) whose `meta.key` the pack
already holds, under whatever file name, is not written again."""
from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.files import folder_lock
from ..core.memo import collector_paused
from ..engine import parallel
from ..pack.sources import DEFAULT_MAX_JSON_BYTES
from . import changes
from .converting import convert_all, grouped
from .importers import IMPORTERS, Passed, head_of, importer
from .importplan import Plan, existing_keys

FORMATS = ("auto", *IMPORTERS)
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
    unreadable: list[Passed] = field(default_factory=list)  # entries that cannot be read: not imported
    not_translated: list[Passed] = field(default_factory=list)  # the source's checks no contract check says
    problems: list[Problem] = field(default_factory=list)  # why the file as a whole cannot be read
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
    broken: list = field(default_factory=list)  # answers that broke their cases (CaseResult): not written
    packs: list = field(default_factory=list)  # the pack judged against, when some broke
    changed: list[str] = field(default_factory=list)  # with update: per contract, what changed


def import_sources(sources: list[str], pack_dir: str, fmt: str = "auto", *, draft: bool = False,
                   redact_fields: tuple[str, ...] = (), log: Callable[[str], None] = print,
                   max_fixture_bytes: int = DEFAULT_MAX_JSON_BYTES, processes: int | None = None,
                   strict: bool = False, update: bool = False) -> ImportResult:
    """Import every model exchange of *sources* (files or folders) into the pack at *pack_dir*;
    an exchange whose fixture would be over *max_fixture_bytes* (the project's fixtures.max_bytes:
    what its runs read) is listed as not imported. A file or an entry that cannot be read is
    listed on its file's report, the rest imported; *strict*: any such problem is a ConfigError
    and nothing is written. Many files are read and converted on two cores (*processes*: 1 or 2
    as set, None by their number), with the same result. Over a pack with contracts, an exchange
    (or a session) that breaks the case it corresponds to is not written (*update*: it is)."""
    with collector_paused():  # what an import builds holds no cycles: ~20% of its time was collecting
        return _import(sources, pack_dir, fmt, draft, redact_fields, log, max_fixture_bytes, processes, strict,
                       update)


def _import(sources: list[str], pack_dir: str, fmt: str, draft: bool, redact_fields: tuple[str, ...],
            log: Callable[[str], None], max_bytes: int, processes: int | None, strict: bool,
            update: bool = False) -> ImportResult:
    files, unrecognized = _expand(sources, fmt)
    read = _read_all(files, max_bytes, processes, draft)
    if strict:
        problems = [p for report, _ in read for p in not_read(report)]
        if problems:
            raise ConfigError(problems)
    pack_dir = os.path.abspath(pack_dir)

    def planned() -> tuple[list[FileReport], Plan]:
        reports = [dataclasses.replace(r, imported=0, in_sessions=0, present=0, duplicates=0, placed={},
                                       scenarios=[]) for r, _ in read]
        plan = Plan(pack_dir, draft, redact_fields, max_bytes, update)
        for report, (_, groups) in zip(reports, read, strict=True):
            plan.add_reading(groups, report)
        return reports, plan

    # The pack is locked while its fixtures are listed, the new ones planned and written: another
    # import into it at once waits, then knows what this one wrote. A pack not there yet is created
    # only when there is something to write (and planned again, locked).
    exists = os.path.isdir(pack_dir)
    if not exists:
        reports, plan = planned()
        if not plan.fixtures:
            return ImportResult(reports, unrecognized)
    with folder_lock(pack_dir):
        reports, plan = planned()
        result = ImportResult(reports, unrecognized, broken=plan.broken,
                              packs=[c.item.pack for c in plan.index.every[:1]] if plan.broken and plan.index else [])
        before = changes.snapshot(plan.contracts_dir) if update else None
        plan.write(result, log)
        if before is not None:
            result.changed = changes.describe(before, changes.snapshot(plan.contracts_dir))
    return result


# From this many files, an import reads and converts them on two cores.
SPLIT_MIN_FILES = 32


def _read_all(files: list[tuple[str, str, Any]], max_bytes: int, processes: int | None,
              draft: bool = False) -> list[tuple]:
    """Each file read, its exchanges converted and grouped into sessions, in order: (its report,
    its groups); a file that cannot be read has its problems on its report and no groups. Many
    files go to two processes, each taking the next unit of files (a forked child sends its
    units back pickled); the result is the same."""
    def one(n: int) -> tuple:
        path, display, module = files[n]
        if isinstance(module, Problem):  # named on the command line, of no format read
            return FileReport(display, "?", problems=[module]), []
        try:
            reading = module.read(path, display)
        except ConfigError as exc:
            return FileReport(display, module.NAME, problems=exc.problems), []
        except OSError as exc:
            return FileReport(display, module.NAME, problems=[Problem(display, None, None, f"cannot be read: "
                                                                                  f"{exc.strerror or exc}")]), []
        return _converted_reading(reading, max_bytes, draft)

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
    no format reads. A file named on the command line of no format read comes with the problem
    instead of a module; a source that does not exist is a ConfigError."""
    modules = _modules(fmt)
    files, unrecognized, problems = [], [], []
    for source in sources:
        if os.path.isdir(source):
            for folder, dirs, names in os.walk(source):
                dirs.sort()
                for name in sorted(names):
                    path = os.path.join(folder, name)
                    display = _shown(os.path.join(source, os.path.relpath(path, source)))
                    module = _detect(path, modules)
                    (files.append((path, display, module)) if module else unrecognized.append(display))
        elif os.path.isfile(source):
            module = modules[0] if fmt != "auto" else _detect(source, modules)
            shown = _shown(source)
            files.append((source, shown, module or Problem(
                shown, None, None, "not a recording replayci reads: expected a vcrpy cassette, a HAR file, an "
                "OpenTelemetry trace export or an inspect_ai eval log (--format names one)")))
        elif os.path.exists(source):
            problems.append(Problem(_shown(source), None, None, "not a regular file (a pipe, device or socket); "
                                    "replayci reads only regular files"))
        else:
            problems.append(Problem(_shown(source), None, None, "no such file or folder"))
    if problems:
        raise ConfigError(problems)
    return files, unrecognized


def _shown(path: str) -> str:
    """*path* as messages and fixtures name it: a name that is not UTF-8 (its bytes held as
    surrogates) with those bytes written as \\xNN, so the source is named, and a fixture holds it."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return path


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
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read forever
            return None
    except OSError:
        return None
    head = head_of(path, _HEAD)  # (a gzipped recording's, decompressed)
    return next((m for m in modules if head and m.detect(path, head)), None)



def _converted_reading(reading: Any, max_bytes: int, draft: bool) -> tuple:
    """(the report of a file read, its exchanges converted and grouped into sessions)."""
    report = FileReport(reading.file, reading.format)
    lists = {"skipped": report.skipped, "unsupported": report.unsupported, "unreadable": report.unreadable,
             "not_translated": report.not_translated}
    for passed in reading.passed:
        lists.get(passed.kind, report.not_captured).append(passed)
    items, unsupported, report.tools_inferred = convert_all(reading, max_bytes)
    report.unsupported += unsupported
    groups = grouped(items, draft)
    report.sessions = sum(len(g.found) for g in groups)
    return report, groups


def not_read(report: FileReport) -> list[Problem]:
    """What of *report*'s file could not be read: the file's problems, or each unreadable entry's."""
    return report.problems + [Problem(report.file, None, None, f"entry {p.entry}: {p.reason}")
                              for p in report.unreadable]


__all__ = ["FORMATS", "SPLIT_MIN_FILES", "FileReport", "ImportResult", "existing_keys", "import_sources", "not_read"]
