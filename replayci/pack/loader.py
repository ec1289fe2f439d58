"""Pack files -> the model, with every problem collected and located."""
from __future__ import annotations

import dataclasses
import datetime
import os
import stat
from collections.abc import Iterable
from typing import Any

from ..checks.arguments import argument_invariants, argument_problems
from ..checks.jsonpath import CompiledPath, JSONPathError, compile_path
from ..checks.judges import Judge
from ..checks.operators import COMPOSITES, OPERATORS, Composite, Invariant, operator_hint
from ..checks.schemas import CompiledSchema, SchemaError, compile_schema
from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.jsonvalue import TYPE_NAMES, json_type, show
from ..core.paths import display_path, inside
from . import vocabulary as spec
from .fixtures import load_fixture
from .model import AllowEntry, Case, Contract, ExpectedCall, Pack, RetrySettings, ToolReplay, Trajectory
from .servers import COMMAND_PREFIX, mcp_servers
from .sources import Located, load_yaml, locate_json, parse_json, read_text

# A case id names its recording file; most file systems allow 255 bytes a name, and the
# contract's name and the extension come on top.
MAX_CASE_ID_BYTES = 200


def utf8_name(name: str) -> bool:
    """Whether a file name read from disk is valid UTF-8 (not surrogate-escaped bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


ALLOWLIST_KEYS = ("contract_path", "case_id", "reason_code", "owner", "expiry_date", "rationale")


class _Collector:
    """Problems of one pack, gathered so they are reported together."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, problem: Problem) -> None:
        self.problems.append(problem)

    def at(self, doc: Located, path: tuple, message: str) -> None:
        self.add(doc.problem(path, message))

    def mapping(self, doc: Located, path: tuple, value: Any, table: dict,
                required: tuple = ()) -> bool:
        """Check keys and flat value types of a mapping against its table."""
        if not isinstance(value, dict):
            self.at(doc, path, f"expected a mapping, got {_kind(value)}")
            return False
        for key, item in value.items():
            if key not in table:
                self.at(doc, path + (key,), spec.unknown_key_message(key, table))
                continue
            fragment = table[key]
            why = spec.check_value(fragment, item)
            if why is not None:
                self.at(doc, path + (key,), spec.mismatch(why, _show(item)))
            elif isinstance(item, dict) and "properties" in fragment:
                self.mapping(doc, path + (key,), item, fragment["properties"])
            elif isinstance(item, dict) and "properties" in (fragment.get("additionalProperties") or {}):
                entry = fragment["additionalProperties"]  # a mapping of names to tables (mcp_servers)
                for name, sub in item.items():
                    why = spec.check_value(entry, sub)
                    if why is not None:
                        self.at(doc, path + (key, name), spec.mismatch(why, _show(sub)))
                    else:
                        self.mapping(doc, path + (key, name), sub, entry["properties"])
        for key in required:
            if key not in value:
                self.at(doc, path, f"missing required key '{key}'")
        return True


def _kind(value: Any) -> str:
    """A value's type as a message names it: "a mapping", "a list", "a string", "nothing"."""
    return {"object": "a mapping", "array": "a list"}.get(json_type(value), f"a {json_type(value)}") \
        if value is not None else "nothing"


def _show(value: Any) -> str:
    return show(value, 60)


# ------------------------------------------------------------ paths inside a pack


def _folder_inside(root: str, folder: str, cache: dict) -> bool:
    """inside() for a directory, answered once per directory and load."""
    key = ("inside", root, folder)
    found = cache.get(key)
    if found is None:
        found = cache[key] = inside(root, folder, cache)
    return found


def _file_kind(path: str) -> str | None:
    """"file" for a regular file, "link" for a symlink to one, None for anything else (one
    lstat for the common case)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode) and os.path.isfile(path):
        return "link"
    return None


def _fixture_folder(pack: dict, base: str, head: str) -> tuple[str, bool]:
    """(the folder *head* names below *base*, normalized; whether it leaves the pack), once per
    folder and load: os.path.normpath(os.path.join(base, head + "/" + name)) is this folder
    joined with any plain file name."""
    key = ("fixture folder", base, head)
    found = pack["real"].get(key)
    if found is None:
        folder = os.path.normpath(os.path.join(base, head))
        leaves = ".." in head.split("/") or not _folder_inside(pack["dir"], folder, pack["real"])
        found = pack["real"][key] = (folder, leaves)
    return found


def _display_in(folder: str, name: str, cache: dict) -> str:
    key = ("display", folder)
    shown = cache.get(key)
    if shown is None:
        shown = cache[key] = display_path(folder)
    return os.path.join(shown, name) if shown != "." else name


def _listing(folder: str, cache: dict) -> dict[str, str | None]:
    """The names in *folder*: "file" for a regular file, "?" for a symlink, None for anything
    else (from the directory entries: no stat per fixture)."""
    key = ("listing", folder)
    names = cache.get(key)
    if names is None:
        names = {}
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    names[entry.name] = "file" if entry.is_file(follow_symlinks=False) else \
                        "?" if entry.is_symlink() else None
        except OSError:
            names = {}
        cache[key] = names
    return names


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


# ------------------------------------------------------------ invariants


def compile_invariants(col: _Collector, doc: Located, path: tuple, value: Any) -> tuple:
    """A list of invariant mappings -> compiled Invariants (problems collected)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return ()  # reported by the mapping check of the enclosing table (type: array)
    out = []
    for i, entry in enumerate(value):
        inv = compile_invariant(col, doc, path + (i,), entry)
        if inv is not None:
            out.append(inv)
    return tuple(out)


def compile_invariant(col: _Collector, doc: Located, path: tuple, entry: Any) -> Invariant | Composite | None:
    """One invariant mapping -> an Invariant, or None once its problems are collected."""
    if isinstance(entry, dict) and any(k in entry for k in COMPOSITES):
        return _composite(col, doc, path, entry)
    if not isinstance(entry, dict):
        col.at(doc, path, f"expected an invariant {{path: ..., <operator>: ...}}, got {_kind(entry)}")
        return None
    p = entry.get("path")
    ok, compiled = _invariant_path(col, doc, path, p)
    ops = []
    for key, val in entry.items():
        if key in spec.INVARIANT_BASE_KEYS:
            continue
        op = _invariant_operator(col, doc, path + (key,), key, val)
        if op is None:
            ok = False
        else:
            ops.append(op)
    if ok and not ops:
        col.at(doc, path, "an invariant needs at least one operator; expected one of "
               + ", ".join(sorted(OPERATORS)))
        ok = False
    if_present = entry.get("if_present", False)
    if not isinstance(if_present, bool):
        col.at(doc, path + ("if_present",), f"expected true or false, got {_show(if_present)}")
        ok = False
    scoring = _scoring(col, doc, path, entry)
    if not ok or scoring is None:
        return None
    return Invariant(p, compiled, tuple(ops), doc.source(path), if_present, **scoring)


def _composite(col: _Collector, doc: Located, path: tuple, entry: dict) -> Composite | None:
    """{any_of: [...]}, {all_of: [...]} or {not: invariant} -> a Composite (None once its
    problems are collected)."""
    kinds = [k for k in COMPOSITES if k in entry]
    others = [k for k in entry if k not in COMPOSITES and k not in spec.SCORING_KEYS]
    if len(kinds) > 1 or others:
        col.at(doc, path, f"a composite invariant takes one of {', '.join(COMPOSITES)} (with "
               f"{', '.join(spec.SCORING_KEYS)}), got {', '.join(map(str, kinds[1:] + others))}")
        return None
    kind = kinds[0]
    raw = entry[kind]
    if kind == "not":
        members = (compile_invariant(col, doc, path + (kind,), raw),)
    elif isinstance(raw, list) and raw:
        members = tuple(compile_invariant(col, doc, path + (kind, i), m) for i, m in enumerate(raw))
    else:
        col.at(doc, path + (kind,), f"{kind} takes a non-empty list of invariants, got {_show(raw)}")
        return None
    scoring = _scoring(col, doc, path, entry)
    if scoring is None or any(m is None for m in members):
        return None
    return Composite(kind, members, doc.source(path), **scoring)


def _scoring(col: _Collector, doc: Located, path: tuple, entry: dict) -> dict | None:
    """An invariant's weight and required (None once a bad value is reported)."""
    out = {}
    for key in ("weight", "required"):
        if key in entry:
            why = spec.check_value(spec.SCORING_KEYS[key], entry[key])
            if why is not None:
                col.at(doc, path + (key,), spec.mismatch(why, _show(entry[key])))
                return None
            out[key] = float(entry[key]) if key == "weight" else entry[key]
    return out


def _invariant_path(col: _Collector, doc: Located, path: tuple, p: Any) -> tuple[bool, CompiledPath | None]:
    """(whether it is usable, the compiled path) for an invariant's `path` value."""
    if p is None:
        col.at(doc, path, "missing required key 'path' (an RFC 9535 JSONPath such as $.tool_calls[0].name)")
        return False, None
    if not isinstance(p, str):
        col.at(doc, path + ("path",), f"expected a JSONPath string, got {_show(p)}")
        return False, None
    try:
        return True, compile_path(p)
    except JSONPathError as exc:
        col.at(doc, path + ("path",), f"invalid JSONPath {p!r}: {exc}")
        return False, None


def _invariant_operator(col: _Collector, doc: Located, where: tuple, key: str, val: Any) -> tuple | None:
    """(operator, value, prepared value) for one operator key of an invariant, or None once
    its problem is collected."""
    op = OPERATORS.get(key)
    if op is None:
        col.at(doc, where, f"unknown operator '{key}'; expected one of {', '.join(sorted(OPERATORS))}"
               + operator_hint(str(key)))
        return None
    why = op.validate(val)
    if why is not None:
        hint = did_you_mean(str(val), TYPE_NAMES) if op.name == "type" else ""
        col.at(doc, where, f"operator '{key}' takes {why}, got {_show(val)}{hint}")
        return None
    if op.prepare is None:
        return op, val, val
    try:
        if op.name == "matches_schema":
            compile_schema(val, check=True)  # the operator's own prepare does not check
        return op, val, op.prepare(val)
    except SchemaError as exc:
        col.at(doc, where, f"invalid JSON Schema: {exc}")
    except Exception as exc:  # regex.error and friends
        col.at(doc, where, f"invalid regular expression {val!r}: {exc}")
    return None


# ------------------------------------------------------------ contracts


def _case(col: _Collector, doc: Located, path: tuple, raw: Any, pack: dict, seen: dict) -> Case | None:
    """One golden case, or None once its problems are collected; *seen* maps case ids to lines."""
    if not col.mapping(doc, path, raw, spec.CASE_KEYS, spec.CASE_REQUIRED):
        return None
    cid, ref = raw.get("id"), raw.get("input_ref")
    if not isinstance(cid, str) or not isinstance(ref, str):
        return None
    if cid in seen:
        col.at(doc, path + ("id",), f"duplicate case id '{cid}' (first at line {seen[cid]})")
        return None
    if len(cid.encode("utf-8", "surrogatepass")) > MAX_CASE_ID_BYTES:
        col.at(doc, path + ("id",), f"case id is {len(cid.encode('utf-8', 'surrogatepass'))} bytes long; "
               f"at most {MAX_CASE_ID_BYTES} (recordings are files named after it)")
        return None
    seen[cid] = doc.at(path + ("id",))[0]
    expect_ok = raw.get("expect_ok", True)
    expected_error = raw.get("expected_error")
    for key in ("expected_error", "expected_failure", "expected_fingerprint"):
        if raw.get(key) is not None and expect_ok is True:
            col.at(doc, path + (key,), f"{key} is for expect_ok: false cases")
    found = _fixture_file(col, doc, path + ("input_ref",), ref, pack)
    if found is None:
        return None
    fixture, folder, name = found
    modes = raw.get("provider_modes")
    return Case(
        **_case_assertions(col, doc, path + ("assertions",), raw.get("assertions")),
        id=cid,
        input_ref=ref,
        fixture_path=fixture,
        fixture_display=_display_in(folder, name, pack["real"]),
        expect_ok=bool(expect_ok),
        expected_error=expected_error,
        expected_failure=_failure_matchers(col, doc, path + ("expected_failure",), raw.get("expected_failure")),
        expected_fingerprint=raw.get("expected_fingerprint"),
        provider_modes=tuple(modes) if isinstance(modes, list) else None,
        category=raw.get("category"),
        tags=tuple(raw["tags"]) if isinstance(raw.get("tags"), list) else (),
        description=raw.get("description"),
        source=doc.source(path),
    )


def _failure_matchers(col: _Collector, doc: Located, path: tuple, value: Any) -> tuple[dict, ...]:
    """A negative case's expected_failure: one matcher or a list, each naming some check."""
    if value is None:
        return ()
    listed = value if isinstance(value, list) else [value]
    where = (lambda i: path + (i,)) if isinstance(value, list) else (lambda i: path)
    out = []
    for i, m in enumerate(listed):
        if col.mapping(doc, where(i), m, spec.FAILURE_MATCHER_KEYS):
            if not m:
                col.at(doc, where(i), "expected one of " + ", ".join(spec.FAILURE_MATCHER_KEYS))
            out.append(m)
    return tuple(out)


def _case_assertions(col: _Collector, doc: Located, path: tuple, raw: Any) -> dict:
    """A golden case's own invariants and expected calls (its contract's are added at run)."""
    if not isinstance(raw, dict):
        return {}  # none, or reported by the case's mapping check
    return {
        "output_invariants": compile_invariants(col, doc, path + ("output_invariants",), raw.get("output_invariants")),
        "input_invariants": compile_invariants(col, doc, path + ("input_invariants",), raw.get("input_invariants")),
        "expected_tool_calls": _expected_calls(col, doc, raw.get("expected_tool_calls"), doc.value.get("tool"),
                                               path + ("expected_tool_calls",)),
    }


def _fixture_file(col: _Collector, doc: Located, where: tuple, ref: str, pack: dict) -> tuple[str, str, str] | None:
    """(path, folder, file name) of the fixture a case's input_ref names, or None when it is
    missing or leaves the pack (reported, unless its directory was reported already)."""
    if os.path.isabs(ref) or ref.startswith(("/", "\\")):
        col.at(doc, where, f"input_ref {ref!r} must be relative to the golden directory")
        return None
    # `negative/...` refs go to the negative directory.
    if ref.startswith("negative/") or ref.startswith("negative\\"):
        base, rel = pack["negative_golden_dir"], ref.split("/", 1)[1] if "/" in ref else ref.split("\\", 1)[1]
    else:
        base, rel = pack["golden_dir"], ref
    if base in pack.get("bad_dirs", ()):
        return None
    real = pack["real"]
    head, _, name = rel.rpartition("/")
    if "\\" in ref or name in ("", ".", ".."):  # rare: the whole path normalized
        fixture = os.path.normpath(os.path.join(base, rel))
        folder, name = os.path.split(fixture)
        leaves = ".." in ref.replace("\\", "/").split("/") or not _folder_inside(pack["dir"], folder or ".", real)
    else:  # a file name in a folder: the folder's answers are shared by the fixtures in it
        folder, leaves = _fixture_folder(pack, base, head)
        fixture = os.path.join(folder, name)
    if leaves:
        col.at(doc, where, f"input_ref {ref!r} leaves the pack directory")
        return None
    kind = _listing(folder, real).get(name)
    if kind == "?":  # a symlink: to a regular file?
        kind = _file_kind(fixture)
    if kind is None:
        hint = ""
        if os.path.isdir(folder):
            hint = did_you_mean(name, os.listdir(folder))
        col.at(doc, where, f"fixture {display_path(fixture)} does not exist{hint}")
        return None
    if kind == "link" and not inside(pack["dir"], fixture, real):
        col.at(doc, where, f"input_ref {ref!r} is a link that leaves the pack")
        return None
    return fixture, folder, name


def load_contract(col: _Collector, file: str, rel_path: str, pack: dict) -> Contract | None:
    """One contract file -> a Contract (its problems collected), or None when it has no mapping."""
    display = display_path(file)
    before = len(col.problems)
    doc = _contract_doc(col, file, display)
    if doc is None:
        return None
    raw = doc.value
    contract_id = os.path.splitext(os.path.basename(file))[0]
    if not utf8_name(contract_id):
        col.at(doc, (), "the file name is not valid UTF-8: rename the file (reports and "
               "recordings name the contract by it)")
        return None
    tool = raw.get("tool")
    expect_tools = tuple(raw.get("expect_tools") or ())
    if "expect_tools" in raw and tool != "multi_tool_call":
        col.at(doc, ("expect_tools",), "expect_tools goes with tool: multi_tool_call")
    if tool == "multi_tool_call" and not expect_tools and not raw.get("expected_tool_calls"):
        col.at(doc, ("tool",), "multi_tool_call needs expect_tools (the tools that must all be "
               "called) or expected_tool_calls")
    calls = _expected_calls(col, doc, raw.get("expected_tool_calls"), tool)
    schema = _arguments_schema(col, doc, raw)
    assertions = raw.get("assertions") or {}
    outputs = inputs = judges = ()
    if isinstance(assertions, dict):
        outputs = compile_invariants(col, doc, ("assertions", "output_invariants"),
                                     assertions.get("output_invariants"))
        inputs = compile_invariants(col, doc, ("assertions", "input_invariants"),
                                    assertions.get("input_invariants"))
        judges = _judges(col, doc, assertions.get("judges"))
    cases = _cases(col, doc, raw.get("golden_cases"), pack)
    try:
        contract = Contract(
            id=contract_id, file=file, display=display, rel_path=rel_path, tool=tool,
            expect_tools=expect_tools, expected_tool_calls=calls,
            arguments_schema=schema, arguments_schema_source=doc.source(("arguments_schema",)),
            output_invariants=outputs, input_invariants=inputs, judges=judges, cases=cases,
            source=doc.source(()),
            **_contract_settings(col, doc, raw),
        )
        if schema is not None and isinstance(tool, str):
            for problem in argument_problems_of(contract, contract.cases, {tool: schema.schema}):
                col.add(problem)
        return contract
    except (TypeError, ValueError, AttributeError):
        if len(col.problems) == before:
            raise
        # The pack is refused and its problems reported; a value of the wrong type is not
        # used. A bare contract keeps its cases so their fixtures' problems are listed too.
        return Contract(id=contract_id, file=file, display=display, rel_path=rel_path, tool=None,
                        cases=cases, source=doc.source(()))


def argument_problems_of(contract: Contract, cases, schemas: dict) -> list[Problem]:
    """The invariants of *contract* and *cases* on an argument that *schemas* (raw JSON Schemas
    by tool name) show to be a mistake, as located problems."""
    found = argument_invariants(contract, cases)
    if not found:
        return []
    out = []
    for source, message in argument_problems(found, schemas):
        where, _, line = source.rpartition(":")
        out.append(Problem(where, int(line), None, message) if line.isdigit() else Problem(source, None, None, message))
    return out


def _judges(col: _Collector, doc: Located, value: Any) -> tuple[Judge, ...]:
    """assertions.judges -> Judges (problems collected): {rubric, min}, {factuality} or {classify}."""
    out = []
    for i, entry in enumerate(value if isinstance(value, list) else ()):
        path = ("assertions", "judges", i)
        kinds = [k for k in ("rubric", "factuality", "classify") if isinstance(entry, dict) and k in entry]
        if len(kinds) != 1:
            col.at(doc, path, "expected a judge: one of {rubric: TEXT, min: 1..4}, {factuality: REFERENCE}, "
                   "{classify: {categories: [...], expected: NAME}}")
            continue
        before = len(col.problems)
        col.mapping(doc, path, entry, spec.JUDGE_KEYS)
        if len(col.problems) > before:
            continue
        kind, source = kinds[0], doc.source(path)
        if kind != "classify":
            out.append(Judge(kind, entry[kind], source, min=entry.get("min", 3)))
            continue
        cats, expected = entry["classify"].get("categories") or [], entry["classify"].get("expected")
        if expected not in cats:
            col.at(doc, path + ("classify",), "classify needs categories and an expected category "
                   f"among them; got {_show(expected)} of [{', '.join(cats)}]")
            continue
        out.append(Judge(kind, ", ".join(cats), source, categories=tuple(cats), expected=expected))
    return tuple(out)


def _contract_doc(col: _Collector, file: str, display: str) -> Located | None:
    """The parsed contract file when it holds a mapping (else None, its problems collected)."""
    try:
        doc = load_yaml(file, display)
    except ConfigError as exc:
        col.problems.extend(exc.problems)
        return None
    col.problems.extend(doc.problems)
    if doc.value is None:
        col.add(Problem(display, 1, 1,
                        "the contract is empty; expected a mapping with tool, assertions and golden_cases"))
        return None
    if not col.mapping(doc, (), doc.value, spec.CONTRACT_KEYS):
        return None
    return doc


def _expected_calls(col: _Collector, doc: Located, entries: Any, tool: Any,
                    where: tuple = ("expected_tool_calls",)) -> tuple[ExpectedCall, ...]:
    """The expected_tool_calls at *where*, each with its compiled argument invariants."""
    if not isinstance(entries, list):
        return ()
    calls = []
    for i, entry in enumerate(entries):
        p = where + (i,)
        if not col.mapping(doc, p, entry, spec.EXPECTED_CALL_KEYS, ("name",)):
            continue
        if not isinstance(entry.get("name"), str):
            continue
        invs = compile_invariants(col, doc, p + ("argument_invariants",), entry.get("argument_invariants"))
        calls.append(ExpectedCall(entry["name"], invs, doc.source(p)))
    if tool not in (None, "multi_tool_call"):
        for c in calls:
            if c.name != tool:
                col.at(doc, where,
                       f"expected call '{c.name}' differs from tool '{tool}'; "
                       "use tool: multi_tool_call for several tools")
                break
    return tuple(calls)


def _arguments_schema(col: _Collector, doc: Located, raw: dict) -> CompiledSchema | None:
    """The contract's own arguments_schema, checked (None: the request's tool schema is used)."""
    if "arguments_schema" not in raw:
        return None
    try:
        return compile_schema(raw["arguments_schema"], check=True)
    except SchemaError as exc:
        col.at(doc, ("arguments_schema",), f"invalid JSON Schema: {exc}")
        return None


def _cases(col: _Collector, doc: Located, raw_cases: Any, pack: dict) -> tuple[Case, ...]:
    """A contract's golden cases (the required key's absence is reported here)."""
    if raw_cases is None:
        col.at(doc, (), "missing required key 'golden_cases'")
        return ()
    if not isinstance(raw_cases, list):
        return ()
    cases = []
    seen: dict = {}
    for i, entry in enumerate(raw_cases):
        c = _case(col, doc, ("golden_cases", i), entry, pack, seen)
        if c is not None:
            cases.append(c)
    return tuple(cases)


def _contract_settings(col: _Collector, doc: Located, raw: dict) -> dict:
    """The rest of a contract's fields: scenario settings, retries, timeouts and plain values.
    A value of the wrong type (reported already) raises TypeError, ValueError or AttributeError."""
    trajectory = _trajectory(col, doc, raw)
    scenario_only = [k for k in ("max_steps", "tool_replay", "tool_commands", "trajectory") if k in raw]
    if scenario_only and raw.get("scenario") is not True:
        col.at(doc, (scenario_only[0],), f"{scenario_only[0]} is for scenario contracts: add scenario: true")
    commands = raw.get("tool_commands") or {}
    if isinstance(commands, dict):
        for name, line in commands.items():
            if not isinstance(line, str) or not line.strip():
                col.at(doc, ("tool_commands", name), "expected a command line (a non-empty string)")
            elif line.startswith(COMMAND_PREFIX) and not line[len(COMMAND_PREFIX):].strip():
                col.at(doc, ("tool_commands", name), "expected mcp:SERVER (a name in mcp_servers)")
    retries = raw.get("retries") or {}
    on_429 = (raw.get("rate_limits") or {}).get("on_429") or {}
    timeouts = raw.get("timeouts") or {}
    retry = RetrySettings(
        max_attempts=retries.get("max_attempts", 2),
        retry_on=tuple(retries.get("retry_on", RetrySettings.retry_on)),
        total_ms=timeouts.get("total_ms", spec.TIMEOUT_MS),
        respect_retry_after=on_429.get("respect_retry_after", True),
        max_sleep_seconds=on_429.get("max_sleep_seconds", 60.0),
    )
    return dict(
        tool_order=raw.get("tool_order", "any"),
        match_mode=raw.get("tool_call_match_mode", "lenient"),
        pass_threshold=float(raw.get("pass_threshold", 1.0)),
        min_score=None if raw.get("min_score") is None else float(raw["min_score"]),
        grounded_numbers=raw.get("grounded_numbers") is True,
        retry=retry,
        status=raw.get("status", "active"),
        description=raw.get("description"),
        scenario=raw.get("scenario") is True,
        max_steps=raw.get("max_steps", 8),
        tool_replay=raw.get("tool_replay", "strict"),
        tool_commands=tuple((k, v) for k, v in commands.items() if isinstance(v, str))
        if isinstance(commands, dict) else (),
        tool_ms=timeouts.get("tool_ms", spec.TIMEOUT_MS),
        tool_replay_config=_tool_replay_config(col, doc, raw),
        trajectory=trajectory,
    )


def _tool_replay_config(col: _Collector, doc: Located, raw: dict) -> tuple:
    """A scenario contract's `tool_replay_config`: per tool its key paths, version and
    sanitize paths, each path compiled; keep and drop together are refused."""
    table = raw.get("tool_replay_config")
    if not isinstance(table, dict):
        return ()  # absent, or reported by the contract's own mapping check
    if raw.get("scenario") is not True:
        col.at(doc, ("tool_replay_config",), "tool_replay_config is for scenario contracts: add scenario: true")
    out = []
    for tool, entry in table.items():
        where = ("tool_replay_config", tool)
        if not col.mapping(doc, where, entry, spec.TOOL_REPLAY_KEYS):
            continue
        sanitize = entry.get("sanitize") if isinstance(entry.get("sanitize"), dict) else {}
        if "keep" in sanitize and "drop" in sanitize:
            col.at(doc, where + ("sanitize",), "give either keep or drop, not both")
        version = entry.get("version")
        out.append((str(tool), ToolReplay(
            key=_json_paths(col, doc, where + ("key",), entry.get("key")),
            version=str(version) if isinstance(version, (str, int)) else None,
            keep=_json_paths(col, doc, where + ("sanitize", "keep"), sanitize.get("keep")),
            drop=_json_paths(col, doc, where + ("sanitize", "drop"), sanitize.get("drop")) or (),
            source=doc.source(where))))
    return tuple(out)


def _json_paths(col: _Collector, doc: Located, path: tuple, value: Any) -> tuple[str, ...] | None:
    """The valid JSONPaths of a list (None when there is no list); an invalid one is a problem."""
    if not isinstance(value, list):
        return None
    good = []
    for i, text in enumerate(value):
        if not isinstance(text, str):
            continue  # reported by the mapping check (a list of strings)
        try:
            compile_path(text)
        except JSONPathError as exc:
            col.at(doc, path + (i,), f"invalid JSONPath {text!r}: {exc}")
            continue
        good.append(text)
    return tuple(good)


def _trajectory(col: _Collector, doc: Located, raw: dict) -> Trajectory:
    """The `trajectory` checks of a scenario contract."""
    t = raw.get("trajectory")
    if not isinstance(t, dict):
        return Trajectory()
    seq = t.get("tool_sequence") if isinstance(t.get("tool_sequence"), dict) else {}
    if seq and ("mode" not in seq or "tools" not in seq):
        col.at(doc, ("trajectory", "tool_sequence"), "tool_sequence needs both mode and tools")
    steps = []
    for i, entry in enumerate(t.get("step_invariants") or [] if isinstance(t.get("step_invariants"), list) else []):
        p = ("trajectory", "step_invariants", i)
        if not col.mapping(doc, p, entry, spec.STEP_INVARIANT_KEYS, ("step", "invariants")):
            continue
        if isinstance(entry.get("step"), int):
            steps.append((entry["step"], compile_invariants(col, doc, p + ("invariants",), entry.get("invariants"))))
    retried = []
    for i, entry in enumerate(t.get("retried_steps") or [] if isinstance(t.get("retried_steps"), list) else []):
        if col.mapping(doc, ("trajectory", "retried_steps", i), entry, spec.RETRIED_STEP_KEYS,
                       ("step", "expected_error")):
            retried.append((entry.get("step"), entry.get("expected_error")))
    return Trajectory(
        sequence_mode=seq.get("mode") if isinstance(seq.get("mode"), str) else None,
        sequence_tools=tuple(x for x in seq.get("tools") or () if isinstance(x, str)),
        max_tool_calls=t.get("max_tool_calls") if isinstance(t.get("max_tool_calls"), int) else None,
        final_invariants=compile_invariants(col, doc, ("trajectory", "final_invariants"),
                                            t.get("final_invariants")),
        step_invariants=tuple(steps),
        retried_steps=frozenset(retried),
        source=doc.source(("trajectory",)),
    )


# ------------------------------------------------------------ allowlist


def _allowlist(col: _Collector, file: str) -> tuple[AllowEntry, ...]:
    """The entries of a pack's nr-allowlist.json (problems collected)."""
    display = display_path(file)
    try:
        text = read_text(file, display, max_bytes=4 * 1024 * 1024)
        value = parse_json(text, display)
    except ConfigError as exc:
        col.problems.extend(exc.problems)
        return ()
    doc = locate_json(text, display)
    if not isinstance(value, list):
        col.at(doc, (), "expected a list of allowlist entries ([] for none)")
        return ()
    out = []
    for i, entry in enumerate(value):
        allowed = _allow_entry(col, doc, (i,), entry)
        if allowed is not None:
            out.append(allowed)
    return tuple(out)


def _allow_entry(col: _Collector, doc: Located, p: tuple, entry: Any) -> AllowEntry | None:
    """One allowlist entry, or None once its problems are collected."""
    if not isinstance(entry, dict):
        col.at(doc, p, "expected an object {contract_path, case_id, reason_code, owner, expiry_date, rationale}")
        return None
    bad = False
    for key in entry:
        if key not in spec.ALLOWLIST_KEYS:
            col.at(doc, p + (key,), spec.unknown_key_message(key, spec.ALLOWLIST_KEYS))
            bad = True
    for key in spec.ALLOWLIST_REQUIRED:
        if not isinstance(entry.get(key), str):
            col.at(doc, p + (key,) if key in entry else p, f"'{key}' must be a string")
            bad = True
    if "case_id" in entry and not isinstance(entry["case_id"], (str, type(None))):
        col.at(doc, p + ("case_id",), "'case_id' must be a string")
        bad = True
    if isinstance(entry.get("reason_code"), str) and entry["reason_code"] not in spec.NR_REASONS:
        col.at(doc, p + ("reason_code",),
               f"unknown reason_code '{entry['reason_code']}'; expected one of "
               + ", ".join(spec.NR_REASONS) + did_you_mean(entry["reason_code"], spec.NR_REASONS))
        bad = True
    expiry = None
    if isinstance(entry.get("expiry_date"), str):
        try:
            expiry = datetime.date.fromisoformat(entry["expiry_date"])
        except ValueError:
            col.at(doc, p + ("expiry_date",), "expected a date YYYY-MM-DD")
            bad = True
    if bad:
        return None
    return AllowEntry(entry["contract_path"], entry.get("case_id"), entry["reason_code"],
                      entry["owner"], expiry, entry["rationale"], doc.source(p))


# ------------------------------------------------------------ packs


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
        col = _Collector()
        found = []
        for i in positions:
            name = self._names[i]
            contract = _listed_contract(col, self._doc, i, name, self._available, self._info) \
                if isinstance(name, str) else None
            if contract is not None:
                found.append(contract)
        if col.problems:
            raise ConfigError(col.problems + fixture_problems(found, set()))
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
    col = _Collector()
    doc = load_yaml(pack_file, display)
    col.problems.extend(doc.problems)
    raw = doc.value
    if raw is None:
        raw = {}
    if not col.mapping(doc, (), raw, spec.PACK_KEYS, spec.PACK_REQUIRED):
        raise ConfigError(col.problems)
    paths = raw.get("paths") or {}
    dirs, bad_dirs = _pack_dirs(col, doc, paths, pack_dir, project_root)
    _check_recordings_dir(col, pack_dir, dirs["recordings_dir"], bad_dirs)
    pack_info = {"dir": pack_dir, "bad_dirs": bad_dirs, "real": {}, **dirs}
    available = contract_files(pack_info["contracts_dir"])
    names = _contract_names(raw.get("contracts"), available)
    loaded = _load_contracts(col, doc, names, paths, pack_info, contracts, available)
    servers, server_problems = mcp_servers(doc, raw.get("mcp_servers"), pack_dir)
    col.problems.extend(server_problems)
    allowlist = _pack_allowlist(col, pack_dir)
    if col.problems:
        # The fixtures are read later (by the run or validate); when the pack is refused
        # anyway, their problems are listed now too, so one run shows every problem.
        col.problems.extend(fixture_problems(loaded, set()))
        raise ConfigError(col.problems)
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
        contracts=tuple(loaded),
        gates=dict(raw.get("gates") or {}),
        allowlist=allowlist,
        source=doc.source(()),
        mcp_servers=servers,
    )
    files = tuple(os.path.join(dirs["contracts_dir"], n) if isinstance(n, str) else "" for n in names)
    return OpenPack(pack, files, doc, names, pack_info, available)


def _pack_dirs(col: _Collector, doc: Located, paths: Any, pack_dir: str,
               project_root: str) -> tuple[dict[str, str], set]:
    """The pack's directories (from `paths` or the defaults) and those that leave the pack
    (reported already: the cases are not checked against them)."""
    dirs: dict[str, str] = {}
    bad_dirs: set = set()
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
                col.at(doc, ("paths", key), f"{key} {value!r} leaves the pack directory")
                bad_dirs.add(resolved)
            dirs[key] = resolved
    return dirs, bad_dirs


def _check_recordings_dir(col: _Collector, pack_dir: str, recordings_dir: str, bad_dirs: set) -> None:
    """Recordings are written as well as read: the directory (or a contract's folder in it)
    must not be a link out of the pack, or --record would write there."""
    if recordings_dir in bad_dirs:
        return
    if os.path.lexists(recordings_dir) and not inside(pack_dir, recordings_dir):
        col.add(Problem(display_path(recordings_dir), None, None,
                        "a symlink that leads out of the pack; recordings stay inside it"))
        bad_dirs.add(recordings_dir)
    elif os.path.isdir(recordings_dir):
        for name in sorted(os.listdir(recordings_dir)):
            sub = os.path.join(recordings_dir, name)
            if os.path.islink(sub) and not inside(pack_dir, sub):
                col.add(Problem(display_path(sub), None, None,
                                "a symlink that leads out of the pack; recordings stay inside it"))


def contract_files(contracts_dir: str) -> list[str]:
    """The contract files of a contracts directory (names, sorted); none when it is missing."""
    if not os.path.isdir(contracts_dir):
        return []
    return sorted(f for f in os.listdir(contracts_dir) if f.endswith((".yaml", ".yml"))
                  and os.path.isfile(os.path.join(contracts_dir, f)))


def _load_contracts(col: _Collector, doc: Located, names: list, paths: Any, pack_info: dict,
                    load: bool, available: list[str]) -> list[Contract]:
    """The pack's contracts in the order of *names* (see _contract_names), with the list's
    problems; when *load* is false only the list is checked. *available*: the contract files
    found in the contracts directory."""
    contracts_dir = pack_info["contracts_dir"]
    if not os.path.isdir(contracts_dir):
        col.at(doc, ("paths", "contracts_dir") if "contracts_dir" in paths else (),
               f"contracts directory {display_path(contracts_dir)} does not exist")
    contracts = []
    seen_ids: dict = {}
    listed: dict[str, int] = {}
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if os.path.normpath(name) in listed:  # found by name, so every process of a split run sees it
            col.at(doc, ("contracts", i), f"contract {name!r} is listed twice "
                   f"(first at position {listed[os.path.normpath(name)] + 1})")
            continue
        listed[os.path.normpath(name)] = i
        contract_id = os.path.splitext(os.path.basename(name))[0]  # from the name: seen by every process
        if contract_id in seen_ids:
            col.at(doc, ("contracts", i), f"contract '{contract_id}' listed twice")
            continue
        seen_ids[contract_id] = True
        if not load:
            continue  # loaded on demand (OpenPack.contracts)
        contract = _listed_contract(col, doc, i, name, available, pack_info)
        if contract is not None:
            contracts.append(contract)
    return contracts


def _contract_names(listed: Any, available: list[str]) -> list:
    """The contract files a pack names: its `contracts` list, every file of *available* when
    it has none, nothing when the list is not a list (a problem reported by the pack's check)."""
    if listed is None:
        return available
    return listed if isinstance(listed, list) else []


def _listed_contract(col: _Collector, doc: Located, i: int, name: str, available: list,
                     pack_info: dict) -> Contract | None:
    """The contract at position *i* of the pack's list (its order), or None once its problems
    are collected."""
    contracts_dir, pack_dir = pack_info["contracts_dir"], pack_info["dir"]
    file = os.path.normpath(os.path.join(contracts_dir, name))
    if not inside(pack_dir, file):
        col.at(doc, ("contracts", i), f"contract {name!r} leaves the pack directory")
        return None
    if not os.path.isfile(file):
        col.at(doc, ("contracts", i), f"contract file {name!r} not found in "
               f"{display_path(contracts_dir)}" + did_you_mean(name, available))
        return None
    contract = load_contract(col, file, os.path.relpath(file, pack_dir).replace(os.sep, "/"), pack_info)
    return None if contract is None else dataclasses.replace(contract, order=i)


def _pack_allowlist(col: _Collector, pack_dir: str) -> tuple[AllowEntry, ...]:
    """The pack's nr-allowlist.json entries; none when it has no such file."""
    allow_file = os.path.join(pack_dir, "nr-allowlist.json")
    if os.path.lexists(allow_file) and not inside(pack_dir, allow_file):
        col.add(Problem(display_path(allow_file), None, None,
                        "a symlink that leaves the pack directory; a pack reads only its own files"))
        return ()
    return _allowlist(col, allow_file) if os.path.lexists(allow_file) else ()


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
