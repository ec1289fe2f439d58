"""Pack files -> the model, with every problem collected and located."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.paths import display_path, inside
from . import vocabulary as spec
from .fixtures import load_fixture
from .load_allowlist import read_allowlist
from .load_contract import load_contract
from .load_problems import Built, mapping_problems, utf8_name
from .model import AllowEntry, Contract, Pack
from .servers import mcp_servers
from .sources import Located, load_yaml


def _resolve_dir(pack_dir: str, project_root: str, value: str) -> str:
    """A `paths` entry: against the pack directory, else against the project root."""
    if os.path.isabs(value):
        return value
    first = os.path.normpath(os.path.join(pack_dir, value))
    if os.path.isdir(first):
        return first
    second = os.path.normpath(os.path.join(project_root, value))
    if os.path.isdir(second):
        return second
    return first


def _sibling_packs_hint(path: str) -> str:
    """"did you mean" among the pack directories next to a missing one."""
    wanted = os.path.abspath(path)
    if os.path.basename(wanted) == "pack.yaml":
        wanted = os.path.dirname(wanted)
    parent = os.path.dirname(wanted)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return ""
    found = [display_path(os.path.join(parent, n)) for n in names
             if os.path.isfile(os.path.join(parent, n, "pack.yaml"))]
    return did_you_mean(display_path(wanted), found)


def find_pack_file(path: str) -> str:
    """A pack directory or its pack.yaml -> the pack.yaml path."""
    if os.path.isdir(path):
        return os.path.join(path, "pack.yaml")
    return path


def _refuse_non_pack(path: str, pack_file: str, display: str) -> None:
    """ConfigError unless *pack_file* (from the user's *path*) is an existing pack.yaml."""
    if not os.path.isfile(pack_file):
        raise ConfigError(Problem(display, None, None, "no pack.yaml here; a pack is a directory "
                                  "with pack.yaml, contracts/ and golden/ (replayci init makes one)"
                                  + _sibling_packs_hint(path)))
    if os.path.basename(pack_file) not in ("pack.yaml", "pack.yml"):
        owner = os.path.dirname(pack_file)
        while owner != os.path.dirname(owner) and not os.path.isfile(os.path.join(owner, "pack.yaml")):
            owner = os.path.dirname(owner)
        hint = (f"; did you mean '{display_path(owner)}'?"
                if os.path.isfile(os.path.join(owner, "pack.yaml")) else "")
        raise ConfigError(Problem(display, None, None,
                                  "not a pack: expected a pack directory or its pack.yaml" + hint))


def load_pack(path: str, *, project_root: str | None = None) -> Pack:
    """Load and validate one pack; raises ConfigError listing every problem found."""
    return _load_pack(path, project_root, True).pack


@dataclasses.dataclass(frozen=True)
class OpenPack:
    """A pack checked whole (pack.yaml, its contract list, servers, allowlist) whose contracts
    load on demand: the processes of a split run each load the ones they take."""

    pack: Pack  # without contracts
    files: tuple[str, ...]  # the listed contract files; a contract's order is its position here
    _doc: Located
    _names: list  # as listed in pack.yaml (every contract file when it lists none)
    _info: dict
    _available: list[str]

    def contracts(self, positions: Iterable[int]) -> tuple[Contract, ...]:
        """The contracts at *positions* of files; ConfigError with their problems and those of
        their fixtures (as load_pack lists them). The list itself was checked when the pack
        was opened."""
        problems: list[Problem] = []
        found = []
        for i in positions:
            name = self._names[i]
            if not isinstance(name, str):
                continue
            built = _listed_contract(self._doc, i, name, self._available, self._info)
            problems += built.problems
            if built.value is not None:
                found.append(built.value)
        if problems:
            raise ConfigError(problems + fixture_problems(found, set()))
        return tuple(found)


def _load_pack(path: str, project_root: str | None, contracts: bool) -> OpenPack:
    """The pack at *path*, with its contracts when *contracts* is true (else with none, each
    loaded on demand)."""
    pack_file = os.path.abspath(find_pack_file(path))
    pack_dir = os.path.dirname(pack_file)
    project_root = os.path.abspath(project_root or os.getcwd())
    display = display_path(pack_file)
    _refuse_non_pack(path, pack_file, display)
    if not utf8_name(display):  # reports and annotations name files by this path
        raise ConfigError(Problem(display, None, None, "the pack's path is not valid UTF-8: rename the folder"))
    doc = load_yaml(pack_file, display)
    raw = doc.value
    if raw is None:
        raw = {}
    problems = [*doc.problems, *mapping_problems(doc, (), raw, spec.PACK_KEYS, spec.PACK_REQUIRED)]
    if not isinstance(raw, dict):
        raise ConfigError(problems)
    paths = raw.get("paths") or {}
    found_dirs = _pack_dirs(doc, paths, pack_dir, project_root)
    dirs, bad_dirs = found_dirs.value
    links = _check_recordings_dir(pack_dir, dirs["recordings_dir"], bad_dirs)
    pack_info = {"dir": pack_dir, "bad_dirs": bad_dirs | links.value, "real": {}, **dirs}
    available = contract_files(pack_info["contracts_dir"])
    names = _contract_names(raw.get("contracts"), available)
    loaded = _load_contracts(doc, names, paths, pack_info, contracts, available)
    servers, server_problems = mcp_servers(doc, raw.get("mcp_servers"), pack_dir)
    allowlist, allowlist_problems = _pack_allowlist(pack_dir)
    problems += [*found_dirs.problems, *links.problems, *loaded.problems, *server_problems, *allowlist_problems]
    if problems:
        # The fixtures are read later (by the run or validate); when the pack is refused
        # anyway, their problems are listed now too, so one run shows every problem.
        problems.extend(fixture_problems(loaded.value, set()))
        raise ConfigError(problems)
    pack = Pack(
        pack_id=raw["pack_id"],
        dir=pack_dir,
        display_dir=display_path(pack_dir),
        name=raw.get("name"),
        version=str(raw["version"]) if raw.get("version") is not None else None,
        provider=raw.get("provider"),
        default_model=raw.get("default_model"),
        contracts_dir=dirs["contracts_dir"],
        golden_dir=dirs["golden_dir"],
        negative_golden_dir=dirs["negative_golden_dir"],
        recordings_dir=dirs["recordings_dir"],
        contracts=tuple(loaded.value),
        gates=dict(raw.get("gates") or {}),
        allowlist=allowlist,
        source=doc.source(()),
        mcp_servers=servers,
    )
    files = tuple(os.path.join(dirs["contracts_dir"], n) if isinstance(n, str) else "" for n in names)
    return OpenPack(pack, files, doc, names, pack_info, available)


def _pack_dirs(doc: Located, paths: Any, pack_dir: str,
               project_root: str) -> Built[tuple[dict[str, str], frozenset]]:
    """The pack's directories (from `paths` or the defaults) and those that leave the pack
    (their problems given here: the cases are not checked against them)."""
    dirs: dict[str, str] = {}
    bad_dirs: set = set()
    problems = []
    for key, default in (("contracts_dir", "contracts"), ("golden_dir", "golden"),
                         ("negative_golden_dir", None), ("recordings_dir", "recordings")):
        value = paths.get(key) if isinstance(paths, dict) else None
        if not isinstance(value, str):
            value = None
        if value is None:
            dirs[key] = (os.path.join(dirs["golden_dir"], "negative") if key == "negative_golden_dir"
                         else os.path.join(pack_dir, default))
            if key == "negative_golden_dir" and dirs["golden_dir"] in bad_dirs:
                bad_dirs.add(dirs[key])
        else:
            resolved = _resolve_dir(pack_dir, project_root, value)
            if not inside(pack_dir, resolved):
                problems.append(doc.problem(("paths", key), f"{key} {value!r} leaves the pack directory"))
                bad_dirs.add(resolved)
            dirs[key] = resolved
    return Built((dirs, frozenset(bad_dirs)), tuple(problems))


_LINK_OUT = "a symlink that leads out of the pack; recordings stay inside it"


def _check_recordings_dir(pack_dir: str, recordings_dir: str, bad_dirs: frozenset) -> Built[frozenset]:
    """Recordings are written as well as read: the directory (or a contract's folder in it)
    must not be a link out of the pack, or --record would write there. Its value: the
    recordings directory when it is such a link (a bad directory), else nothing."""
    if recordings_dir in bad_dirs:
        return Built(frozenset())
    if os.path.lexists(recordings_dir) and not inside(pack_dir, recordings_dir):
        return Built(frozenset((recordings_dir,)), (Problem(display_path(recordings_dir), None, None,
                                                            _LINK_OUT),))
    problems = []
    if os.path.isdir(recordings_dir):
        for name in sorted(os.listdir(recordings_dir)):
            sub = os.path.join(recordings_dir, name)
            if os.path.islink(sub) and not inside(pack_dir, sub):
                problems.append(Problem(display_path(sub), None, None, _LINK_OUT))
    return Built(frozenset(), tuple(problems))


def contract_files(contracts_dir: str) -> list[str]:
    """The contract files of a contracts directory (names, sorted); none when it is missing."""
    if not os.path.isdir(contracts_dir):
        return []
    return sorted(f for f in os.listdir(contracts_dir) if f.endswith((".yaml", ".yml"))
                  and os.path.isfile(os.path.join(contracts_dir, f)))


def _load_contracts(doc: Located, names: list, paths: Any, pack_info: dict,
                    load: bool, available: list[str]) -> Built[list[Contract]]:
    """The pack's contracts in the order of *names* (see _contract_names), with the list's
    problems; when *load* is false only the list is checked. *available*: the contract files
    found in the contracts directory."""
    contracts_dir = pack_info["contracts_dir"]
    problems = []
    if not os.path.isdir(contracts_dir):
        problems.append(doc.problem(("paths", "contracts_dir") if "contracts_dir" in paths else (),
                                    f"contracts directory {display_path(contracts_dir)} does not exist"))
    contracts = []
    seen_ids: dict = {}
    listed: dict[str, int] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if os.path.normpath(name) in listed:  # found by name, so every process of a split run sees it
            problems.append(doc.problem(("contracts", i), f"contract {name!r} is listed twice "
                                        f"(first at position {listed[os.path.normpath(name)] + 1})"))
            continue
        listed[os.path.normpath(name)] = i
        contract_id = os.path.splitext(os.path.basename(name))[0]  # from the name: seen by every process
        if contract_id in seen_ids:
            problems.append(doc.problem(("contracts", i), f"contract '{contract_id}' listed twice"))
            continue
        seen_ids[contract_id] = True
        if not load:
            continue  # loaded on demand (OpenPack.contracts)
        built = _listed_contract(doc, i, name, available, pack_info)
        problems += built.problems
        if built.value is not None:
            contracts.append(built.value)
    return Built(contracts, tuple(problems))


def _contract_names(listed: Any, available: list[str]) -> list:
    """The contract files a pack names: its `contracts` list, every file of *available* when
    it has none, nothing when the list is not a list (a problem reported by the pack's check)."""
    if listed is None:
        return available
    return listed if isinstance(listed, list) else []


def _listed_contract(doc: Located, i: int, name: str, available: list, pack_info: dict) -> Built[Contract]:
    """The contract at position *i* of the pack's list (its order), or None, with its problems."""
    contracts_dir, pack_dir = pack_info["contracts_dir"], pack_info["dir"]
    file = os.path.normpath(os.path.join(contracts_dir, name))
    if not inside(pack_dir, file):
        return Built.refused(doc, ("contracts", i), f"contract {name!r} leaves the pack directory")
    if not os.path.isfile(file):
        return Built.refused(doc, ("contracts", i), f"contract file {name!r} not found in "
                             f"{display_path(contracts_dir)}" + did_you_mean(name, available))
    built = load_contract(file, os.path.relpath(file, pack_dir).replace(os.sep, "/"), pack_info)
    if built.value is None:
        return built
    return Built(dataclasses.replace(built.value, order=i), built.problems)


def _pack_allowlist(pack_dir: str) -> tuple[tuple[AllowEntry, ...], list[Problem]]:
    """The pack's nr-allowlist.json entries (none when it has no such file) and its problems."""
    allow_file = os.path.join(pack_dir, "nr-allowlist.json")
    if os.path.lexists(allow_file) and not inside(pack_dir, allow_file):
        return (), [Problem(display_path(allow_file), None, None,
                            "a symlink that leaves the pack directory; a pack reads only its own files")]
    return read_allowlist(allow_file) if os.path.lexists(allow_file) else ((), [])


def fixture_problems(contracts, seen: set) -> list[Problem]:
    """The problems of the golden fixtures of *contracts* (each file once; *seen* updated)."""
    problems: list[Problem] = []
    for contract in contracts:
        for case in contract.cases:
            if case.fixture_path in seen:
                continue
            seen.add(case.fixture_path)
            try:
                load_fixture(case.fixture_path, case.fixture_display)
            except ConfigError as exc:
                problems.extend(exc.problems)
    return problems


def load_packs(paths: list[str], *, project_root: str | None = None) -> list[Pack]:
    """Load several packs, reporting the problems of all of them together."""
    return [o.pack for o in _load_packs(paths, project_root, True)]


def open_packs(paths: list[str], *, project_root: str | None = None) -> list[OpenPack]:
    """The packs checked as load_packs checks them, but for their contracts, which load on
    demand (OpenPack.contracts). A ConfigError here lists only the packs' own problems:
    load_packs lists those of their contracts and fixtures too."""
    return _load_packs(paths, project_root, False)


def _load_packs(paths: list[str], project_root: str | None, contracts: bool) -> list[OpenPack]:
    packs: list[OpenPack] = []
    problems: list[Problem] = []
    ids: dict[str, str] = {}
    given: set = set()
    for p in paths:
        real = os.path.realpath(find_pack_file(p))
        if real in given:  # the same pack named twice (--pack a --pack a/): load it once
            continue
        given.add(real)
        try:
            opened = _load_pack(p, project_root, contracts)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        pack = opened.pack
        if pack.pack_id in ids:
            file = os.path.join(pack.dir, "pack.yaml")
            line, col = load_yaml(file, display_path(file)).at(("pack_id",))
            problems.append(Problem(display_path(file), line, col,
                                    f"pack_id '{pack.pack_id}' is also used by {ids[pack.pack_id]}; "
                                    "each pack needs its own", key="pack_id"))
            continue
        ids[pack.pack_id] = pack.display_dir
        packs.append(opened)
    if problems:
        seen: set = set()
        for opened in packs:  # the packs that loaded: their fixture problems belong in the list
            problems.extend(fixture_problems(opened.pack.contracts, seen))
        raise ConfigError(problems)
    return packs
