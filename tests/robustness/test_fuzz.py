"""Property-based: mutated packs never crash or hang replayci.

A valid project (the starter pack, a richer second contract, an allowlist entry, a recording
and a .replayci.yml with most keys set) is mutated one file at a time: keys deleted,
duplicated, renamed or retyped, values replaced by random or hostile scalars, lines
duplicated or dropped, the file truncated, random bytes inserted, the text re-encoded
(UTF-16, UTF-32, Latin-1, ...). For every input the real CLI (`run` or `validate`, in-process
through click's CliRunner) must:

- exit 0, 1 or 2 — never 3 (internal error), never an uncaught exception or a traceback;
- finish within a bounded time (a per-example check, hypothesis' deadline, and an alarm
  that turns a hang into a failure instead of a stuck CI job);
- on exit 2, print only located problems, each naming a file of the project;
- never turn a bad input into a case `error` ("could not evaluate: SomeException": a bad
  file must be refused with exit 2, not crash the evaluation of a case);
- never write a file into the pack.

Runs are deterministic (derandomize=True): CI sees the same examples every time. For a
longer, randomized search locally: REPLAYCI_FUZZ_SCALE=20 REPLAYCI_FUZZ_RANDOM=1.
"""
from __future__ import annotations

import copy
import datetime
import faulthandler
import functools
import json
import os
import re
import shutil
import signal
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from trees import at, paths

import replayci
from replayci.cli import cli

pytestmark = pytest.mark.slow  # fuzzing: hundreds of generated inputs per surface

TEMPLATES = Path(replayci.__file__).parent / "tools" / "templates"
PACK = "packs/starter"
CONFIG = ".replayci.yml"
PACK_YAML = f"{PACK}/pack.yaml"
CONTRACT = f"{PACK}/contracts/get_weather.yaml"
RICH = f"{PACK}/contracts/rich.yaml"
SUCCESS = f"{PACK}/golden/get_weather.success.json"
WRONG_TOOL = f"{PACK}/golden/negative/get_weather.wrong_tool.json"
ALLOWLIST = f"{PACK}/nr-allowlist.json"
RECORDING = f"{PACK}/recordings/get_weather/tool_call_success.json"

SCALE = float(os.environ.get("REPLAYCI_FUZZ_SCALE", "1"))
RANDOM = bool(os.environ.get("REPLAYCI_FUZZ_RANDOM"))
PER_INPUT_S = 5.0    # generous: a run of this project takes a few milliseconds
HANG_S = 30          # an input still running after this is a hang: fail it, don't wait

# Examples per mutated file (2,000+ in all: see test_enough_examples).
EXAMPLES = {
    CONTRACT: 350,
    RICH: 350,
    PACK_YAML: 250,
    CONFIG: 250,
    SUCCESS: 300,
    WRONG_TOOL: 150,
    ALLOWLIST: 200,
    RECORDING: 200,
}

# ------------------------------------------------------------------ the valid project

RICH_CONTRACT = """\
# A contract that uses most of the contract format, so mutations have much to break.
tool: get_weather
description: Rich contract for the fuzzer
tool_order: any
tool_call_match_mode: lenient
pass_threshold: 1.0
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - path: "$.location"
        regex: "^San"
        length_gte: 3
      - path: "$.unit"
        one_of: [celsius, fahrenheit]
arguments_schema:
  type: object
  properties:
    location: {type: string}
    unit: {type: string}
  required: [location]
assertions:
  output_invariants:
    - path: "$.tool_calls"
      length_eq: 1
    - path: "$.tool_calls[?@.name == 'get_weather'].arguments"
      matches_schema: {type: object, required: [location]}
    - path: "$.content"
      not_contains: "error"
    - path: "$.success"
      equals: true
      description: the call succeeded
  input_invariants:
    - path: "$.temperature"
      gte: 0
      lte: 1
    - path: "$.messages[0].role"
      equals: system
timeouts: {total_ms: 1000}
retries: {max_attempts: 3, retry_on: ["429", "5xx"]}
rate_limits: {on_429: {respect_retry_after: true, max_sleep_seconds: 1}}
status: active
golden_cases:
  - id: sf
    input_ref: get_weather.success.json
    category: regression
    tags: [fuzz, rich]
    description: San Francisco
    provider_modes: [recorded, openai]
  - id: wrong
    input_ref: negative/get_weather.wrong_tool.json
    expect_ok: false
    expected_error: wrong_tool
    category: adversarial
"""

PACK_TEXT = """\
pack_id: starter
name: starter-tool-calling-tests
version: "0.1.0"
schema_version: v0.1
provider: recorded
default_model: gpt-4o-mini
description: the fuzzer's base pack
paths:
  contracts_dir: contracts
  golden_dir: golden
  negative_golden_dir: golden/negative
  recordings_dir: recordings
contracts: [get_weather.yaml, rich.yaml]
gates: {pass_rate: 1.0, max_non_reproducible: 0}
"""

CONFIG_TEXT = """\
# API keys never go here.
pack: packs/starter
provider: recorded
model: gpt-4o-mini
jobs: 2
fixtures: {ttl_days: 36500, strict: false, max_bytes: 1000000}
gates: {pass_rate: 1.0, max_non_reproducible: 0}
redact:
  fields: ["$.meta.latency_ms"]
"""

ALLOW_ENTRIES = [{
    "contract_path": "contracts/get_weather.yaml", "case_id": "tool_call_success",
    "reason_code": "context_variance", "owner": "qa", "expiry_date": "2099-01-01",
    "rationale": "the fuzzer's allowlist entry",
}]


def build_project(root: Path) -> None:
    """The valid project every example starts from (`replayci` exits 0 on it)."""
    shutil.copytree(TEMPLATES / "starter", root / PACK)
    (root / CONFIG).write_text(CONFIG_TEXT, "utf-8")
    (root / PACK_YAML).write_text(PACK_TEXT, "utf-8")
    (root / RICH).write_text(RICH_CONTRACT, "utf-8")
    (root / ALLOWLIST).write_text(json.dumps(ALLOW_ENTRIES, indent=2) + "\n", "utf-8")
    fixture = json.loads((root / SUCCESS).read_text("utf-8"))
    recording = {
        "meta": {"schema_version": 1, "pack_id": "starter", "contract": "get_weather",
                 "case_id": "tool_call_success", "provider": "openai", "model": "gpt-4o-mini",
                 "recorded_at": datetime.datetime.now(datetime.timezone.utc)
                 .isoformat(timespec="seconds"),
                 "replayci_version": replayci.__version__, "latency_ms": 321},
        "boundary": fixture["boundary"],
        "response": {"success": True, "content": None, "stop_reason": "tool_calls",
                     "usage": {"input_tokens": 80, "output_tokens": 12},
                     "tool_calls": [{"id": "call_1", "name": "get_weather",
                                     "arguments": {"location": "San Francisco"},
                                     "arguments_raw": '{"location": "San Francisco"}'}]},
    }
    (root / RECORDING).parent.mkdir(parents=True)
    (root / RECORDING).write_text(json.dumps(recording, indent=2, sort_keys=True) + "\n", "utf-8")


# ------------------------------------------------------------------ running the CLI

_ENV = {var: None for var in (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "REPLAYCI_PROVIDER_KEY", "REPLAYCI_PROVIDER",
    "REPLAYCI_MODEL", "REPLAYCI_BASE_URL", "REPLAYCI_JOBS", "REPLAYCI_REPLAY", "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY", "CI")}
_ENV["NO_COLOR"] = "1"


class Hang(Exception):
    pass


@contextmanager
def hang_guard(seconds: int):
    """A Python-level hang raises Hang; a hang inside C code dumps every thread's stack and
    ends the process (better than a CI job stuck until its time limit)."""
    def on_alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    faulthandler.dump_traceback_later(seconds * 2, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)


def invoke(root: Path, command: str) -> tuple[int, str, float]:
    """Run `replayci <command>` in *root*; (exit code, stdout + stderr, seconds)."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with hang_guard(HANG_S):
            t0 = time.perf_counter()
            result = CliRunner(env=_ENV).invoke(cli, [command], catch_exceptions=False)
            elapsed = time.perf_counter() - t0
    finally:
        os.chdir(cwd)
    return result.exit_code, result.output, elapsed


_PROBLEM_HEAD = re.compile(r"^replayci: (\d+) problems?, nothing was run:$", re.M)


def check_outcome(code: int, out: str, elapsed: float, files: list[str]) -> None:
    """What every input must satisfy (see the module docstring)."""
    assert code in (0, 1, 2), f"exit {code}\n{out}"
    assert "Traceback" not in out, out
    assert "internal error" not in out, out
    assert "could not evaluate" not in out, f"a bad file crashed a case's evaluation\n{out}"
    assert elapsed < PER_INPUT_S, f"{elapsed:.2f} s for one input\n{out}"
    if code == 2:
        head = _PROBLEM_HEAD.search(out)
        assert head, f"exit 2 without the list of problems\n{out}"
        lines = [ln for ln in out[head.end():].splitlines() if ln.startswith("  ")]
        assert len(lines) == int(head.group(1)), out
        for line in lines:
            assert line.strip().startswith(tuple(files)), \
                f"a problem that names no file of the project: {line!r}\n{out}"


def project_files(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


class Project:
    """The valid project and its files' original bytes (a short repr for hypothesis' reports)."""

    def __init__(self, root: Path, files: dict[str, bytes]):
        self.root, self.files = root, files

    def __repr__(self) -> str:
        return f"Project({str(self.root)!r})"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    build_project(root)
    files = project_files(root)
    for command in ("run", "validate"):
        code, out, _ = invoke(root, command)
        assert code == 0, out
        assert "warning" not in out, out
    assert project_files(root) == files
    return Project(root, files)


# ------------------------------------------------------------------ mutations

SAFE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
INTERESTING = [
    "", " ", ".", "..", "../..", "../../../etc/passwd", "/etc/passwd", "negative/", "negative/..",
    "negative/../get_weather.success.json", "get_weather", "get_time", "multi_tool_call",
    "get_weather.success.json", "$", "$.", "$..*", "$.tool_calls[?@.name == 'x']", "$[", "(a+)+$",
    "[", "\\", "recorded", "openai", "anthropic", "strict", "auto", "record", "off", "observed",
    "happy_path", "wrong_tool", "context_variance", "v0.1", "gpt-4o-mini", "~", "null", "yes",
    "no", "0x1F", "1e400", "NaN", "-.inf", "\x00", "\u202e", "é", "\U0001d11e", "\ud800",
    "2099-01-01", "2001-13-45", "sk-" + "A1b2C3d4" * 4, "contracts/get_weather.yaml", "packs",
    "x" * 300,
]
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(-10**6, 10**6), st.sampled_from([0, 1, -1, 2**31, 2**63, 10**30, -10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    SAFE_TEXT, st.sampled_from(INTERESTING),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(SAFE_TEXT, st.sampled_from(INTERESTING)),
                                            inner, max_size=3)),
    max_leaves=6,
)
KEYS = st.one_of(SAFE_TEXT, st.sampled_from(INTERESTING), st.integers(-5, 5), st.none(),
                 st.booleans(), st.floats(allow_nan=True))

BIG = "9" * 5000  # over Python's 4,300-digit int conversion limit
YAML_SNIPPETS = [
    "&a x", "*a", "<<: *a", "x: &a [1, 2]", "y: *a", "z: *nowhere",
    "z: !!python/object/apply:os.system [echo pwned]", "z: !!python/name:os.system",
    "? [a, b]\n: c", "? {a: 1}\n: c", "---", "...", "%YAML 1.1", "%TAG ! tag:x,2000:",
    "z: !!binary aGk=", "z: !!set {a, b}", "z: !!omap [a: 1]", "z: !!pairs [a: 1]",
    "z: 2001-13-45", "z: 2001-12-14t21:59:43.10-05:00", f"z: {BIG}", f"z: !!int {BIG}",
    "z: .nan", "z: .inf", "z: -.inf", 'z: "\\ud800"', "z: '\\ud800'", 'z: "\\x00"',
    "z: |\n  text", "z: >-\n  folded", "\t- tab", "z: @reserved", "z: `tick", "[", "{", "]: x",
    "- - - -", "z: !custom x", "z: !!str", "z: !!float x", "z: !!int x", "z: !!bool maybe",
    "z: !!null x", "z: 0o17", "z: 12:30:00", "z: 1_000", "tool: get_time", "golden_cases: []",
    "golden_cases:", "pack_id: other", "pack: .", "packs: []", "provider: openai",
    "replay: record", "fixtures: {max_bytes: 10}", "contracts: []", "paths: {golden_dir: /}",
    "  - id: sf\n    input_ref: get_weather.success.json", "assertions: {output_invariants: 3}",
    "z: [" * 70 + "]" * 70, "z: " + "{a: " * 70 + "1" + "}" * 70,
]
JSON_SNIPPETS = [
    '"x": NaN,', '"x": Infinity,', '"x": -Infinity,', '"x": 1e999,', f'"x": {BIG},',
    f'"x": -{BIG}.5,', '"x": "\\ud800",', '"\\udfff": 1,', '"x": "\\u0000",', '"x": tru,',
    '"request": {},', '"response": null,', '"boundary": [],', '"meta": 1,', '"trajectory": 1,',
    '"tool_results": {},', "// comment", "/* c */", "'single': 1,", "{", "}", "]", "[", ",",
    '"x": ' + "[" * 600 + "]" * 600 + ",", '"x": ' + '{"a":' * 600 + "1" + "}" * 600 + ",",
    '"success": false,', '"tool_calls": "x",', '"arguments": {"a": 1},',
    '"choices": [],', '"content": [{"type": "tool_use"}],', '"error": {"status": "x"},',
    '"expiry_date": "2000-01-01",', '"case_id": null,',
]
ENCODINGS = ["utf-16", "utf-16-be", "utf-32", "latin-1", "cp1252", "utf-8-sig", "shift_jis",
             "utf-7"]


@st.composite
def tree_mutation(draw, tree):
    """One structural change to a parsed document: delete, replace, add, rename, duplicate."""
    tree = copy.deepcopy(tree)
    every = list(paths(tree))
    path = draw(st.sampled_from(every))
    op = draw(st.sampled_from(["delete", "replace", "replace", "add_key", "rekey", "near_miss",
                               "dup_item", "wrap", "unwrap"]))
    if not path:
        if op in ("replace", "wrap"):
            return draw(VALUES) if op == "replace" else [tree]
        op = "add_key"
    node = at(tree, path[:-1]) if path else None
    key = path[-1] if path else None
    target = node[key] if path else tree
    if op == "delete" and path:
        del node[key]
    elif op == "replace" and path:
        node[key] = draw(VALUES)
    elif op == "add_key":
        holder = target if isinstance(target, dict) else (node if isinstance(node, dict) else None)
        if holder is None:
            return tree
        holder[draw(KEYS)] = draw(VALUES)
    elif op in ("rekey", "near_miss") and isinstance(node, dict):
        if op == "rekey":
            new = draw(KEYS)
        else:
            word = str(key)
            i = draw(st.integers(0, max(len(word) - 1, 0)))
            new = word[:i] + word[i + 1:] if draw(st.booleans()) else word[:i] + "_" + word[i:]
        node[new] = node.pop(key)
    elif op == "dup_item" and isinstance(node, list):
        node.insert(key, copy.deepcopy(node[key]))
    elif op == "wrap" and path:
        node[key] = [target] if draw(st.booleans()) else {"value": target}
    elif op == "unwrap" and path and isinstance(target, (list, dict)) and target:
        node[key] = next(iter(target.values())) if isinstance(target, dict) else target[0]
    return tree


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _parsed(original: bytes, kind: str):
    text = original.decode("utf-8")
    return yaml.load(text, Loader=_LOADER) if kind == "yaml" else json.loads(text)


@st.composite
def structural(draw, original: bytes, kind: str):
    tree = draw(tree_mutation(_parsed(original, kind)))  # (tree_mutation works on a copy)
    if draw(st.integers(0, 3)) == 0:  # sometimes two changes
        tree = draw(tree_mutation(tree))
    try:
        if kind == "yaml":
            out = yaml.dump(tree, Dumper=_DUMPER, sort_keys=False, allow_unicode=draw(st.booleans()),
                            default_flow_style=draw(st.sampled_from([False, None, True])))
        else:
            out = json.dumps(tree, indent=draw(st.sampled_from([None, 2])),
                             ensure_ascii=draw(st.booleans()))
        return out.encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, ValueError, TypeError):
        return original  # a tree the dumpers cannot write (e.g. a lone surrogate in YAML)


@st.composite
def textual(draw, original: bytes, kind: str):
    data = original
    lines = data.split(b"\n")
    n = len(data)
    op = draw(st.sampled_from(["truncate", "cut", "insert_bytes", "flip", "dup_line",
                               "dup_line_far", "drop_line", "swap_lines", "snippet", "snippet",
                               "indent"]))
    if op == "truncate":
        return data[:draw(st.integers(0, max(n - 1, 0)))]
    if op == "cut":
        i = draw(st.integers(0, n))
        return data[:i] + data[draw(st.integers(i, n)):]
    if op == "insert_bytes":
        i = draw(st.integers(0, n))
        return data[:i] + draw(st.binary(min_size=1, max_size=16)) + data[i:]
    if op == "flip":
        i = draw(st.integers(0, max(n - 1, 0)))
        return data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
    k = draw(st.integers(0, len(lines) - 1))
    if op == "dup_line":  # a duplicate key (or list item) right below
        lines.insert(k + 1, lines[k])
    elif op == "dup_line_far":
        lines.insert(draw(st.integers(0, len(lines))), lines[k])
    elif op == "drop_line":
        del lines[k]
    elif op == "swap_lines":
        m = draw(st.integers(0, len(lines) - 1))
        lines[k], lines[m] = lines[m], lines[k]
    elif op == "snippet":
        snippet = draw(st.sampled_from(YAML_SNIPPETS if kind == "yaml" else JSON_SNIPPETS))
        indent = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
        lines.insert(k, indent + snippet.encode("utf-8", "surrogatepass"))
    elif op == "indent":
        lines[k] = b" " * draw(st.integers(1, 3)) + lines[k]
    return b"\n".join(lines)


@st.composite
def recoded(draw, original: bytes, kind: str):
    text = original.decode("utf-8")
    if draw(st.booleans()):  # non-ASCII, so the encoding shows
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(["é", "€", "日本", "\U0001d11e", "ß"])) + text[i:]
    return text.encode(draw(st.sampled_from(ENCODINGS)), "replace")


def whole(kind: str):
    other = st.sampled_from([
        b"", b"\n", b"   \n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf{}", b"\xff\xfe", b"null",
        b"[]", b"{}", b"0", b'"text"', b"- a\n- b\n", b"a: 1\n", b"\x00" * 64,
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00", b"~", b"!!python/object:os.system\n",
    ])
    return st.one_of(other, st.binary(max_size=200))


def as_other_format(original: bytes, kind: str):
    """YAML written as JSON (valid YAML), JSON written as YAML (not JSON)."""
    tree = _parsed(original, kind)
    if kind == "yaml":
        return st.just(json.dumps(tree).encode())
    return st.just(yaml.dump(tree, Dumper=_DUMPER).encode())


def mutations(original: bytes, kind: str):
    return st.one_of(
        structural(original, kind), structural(original, kind),
        textual(original, kind), textual(original, kind),
        recoded(original, kind), whole(kind), as_other_format(original, kind),
    )


# ------------------------------------------------------------------ the properties

FILES = list(EXAMPLES)


def test_enough_examples():
    assert sum(EXAMPLES.values()) >= 2000


def _fuzz_settings(n: int):
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=not RANDOM,
        database=None,
        deadline=datetime.timedelta(seconds=PER_INPUT_S),
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


def _fuzz(project: Project, rel: str, data) -> int:
    root, files = project.root, project.files
    kind = "yaml" if rel.endswith((".yml", ".yaml")) else "json"
    original = files[rel]
    mutated = data.draw(mutations(original, kind), label="file")
    command = data.draw(st.sampled_from(["run", "run", "validate"]), label="command")
    path = root / rel
    path.write_bytes(mutated)
    try:
        code, out, elapsed = invoke(root, command)
        check_outcome(code, out, elapsed, [CONFIG, PACK + "/"])
        event(f"exit {code}")
        after = project_files(root)
        extra = set(after) - set(files)
        # a mutated .replayci.yml may ask for report files (in the project root)
        assert all("/" not in f for f in extra) and (not extra or rel == CONFIG), extra
        for f in extra:
            os.unlink(root / f)
        changed = [f for f in files if f != rel and after.get(f) != files[f]]
        assert not changed, f"the run changed {changed}"
        return code
    finally:
        path.write_bytes(original)


def _make(rel: str):
    def test(project):
        codes: Counter = Counter()

        @_fuzz_settings(EXAMPLES[rel])
        @given(data=st.data())
        def mutated_file(data):
            codes[_fuzz(project, rel, data)] += 1

        mutated_file()
        print(f"{rel}: exit codes {dict(sorted(codes.items()))}")  # shown with pytest -s
        # The mutations reach both sides: files refused (2) and files that still run (0, 1).
        total = sum(codes.values())
        assert codes[2] >= total * 0.2 and codes[0] + codes[1] >= total * 0.05, codes

    test.__name__ = "test_fuzz_" + re.sub(r"\W", "_", Path(rel).stem)
    return test


test_fuzz_config = _make(CONFIG)
test_fuzz_pack_yaml = _make(PACK_YAML)
test_fuzz_contract = _make(CONTRACT)
test_fuzz_rich_contract = _make(RICH)
test_fuzz_fixture = _make(SUCCESS)
test_fuzz_negative_fixture = _make(WRONG_TOOL)
test_fuzz_allowlist = _make(ALLOWLIST)
test_fuzz_recording = _make(RECORDING)


# ------------------------------------------------------------------ what the fuzzer found
#
# Inputs that crashed replayci (exit 3, or a case `error` from an exception) or were refused
# without naming a file, before issue 8's fixes; each must now be refused with exit 2 and a
# located message. (text replaced in the valid project's file, expected words.)

BIG_INT = "9" * 5000
FINDINGS = {
    "contract_pass_threshold_null": (RICH, "pass_threshold: 1.0", "pass_threshold: null",
                                     [f"{RICH}:6:"]),
    "contract_retries_a_list": (RICH, "retries: {max_attempts: 3, retry_on: [\"429\", \"5xx\"]}",
                                "retries: [3]",
                                ["retries"]),
    "contract_tags_a_number": (RICH, "tags: [fuzz, rich]", "tags: 1.5", ["tags", "1.5"]),
    "contract_provider_modes_a_number": (RICH, "provider_modes: [recorded, openai]",
                                         "provider_modes: 3", ["provider_modes"]),
    "yaml_bool_maybe": (CONTRACT, "expect_ok: false", "expect_ok: !!bool maybe",
                        ["invalid !!bool value 'maybe'"]),
    "yaml_nan_gate": (CONFIG, "pass_rate: 1.0", "pass_rate: .nan",
                      [f"{CONFIG}:7:", "not a number JSON can hold"]),
    "yaml_huge_int": (PACK_YAML, 'version: "0.1.0"', f"version: {BIG_INT}",
                      [f"{PACK_YAML}:3:", "an integer of 5,000 digits"]),
    "json_huge_int": (SUCCESS, '"temperature": 0', f'"temperature": {BIG_INT}',
                      ["a number of 5,000 digits"]),
    "json_huge_int_allowlist": (ALLOWLIST, '"owner": "qa"', f'"owner": {BIG_INT}',
                                [f"{ALLOWLIST}:6:", "a number of 5,000 digits"]),
    "json_infinity": (SUCCESS, '"temperature": 0', '"temperature": 1e999',
                      ["1e999 is out of range"]),
    "json_lone_surrogate": (SUCCESS, "What is the weather", "What \\ud800 is the weather",
                            ["\\ud800 is half of a surrogate pair"]),
    "recording_tool_name_an_object": (RECORDING, '"name": "get_weather"', '"name": {}',
                                      ["the tool name must be a string, got object"]),
    "tool_schema_required_nested": (WRONG_TOOL, '"timezone"\n            ]',
                                    '["timezone"]\n            ]',
                                    ["invalid JSON Schema for tool get_time"]),
    "tool_schema_type_false": (WRONG_TOOL, '"type": "object",\n            "properties": {\n'
                               '              "location"', '"type": false,\n            '
                               '"properties": {\n              "location"',
                               ["invalid JSON Schema for tool get_weather"]),
    "config_replay_with_recorded_provider": (CONFIG, "provider: recorded",
                                             "provider: recorded\nreplay: record",
                                             [f"{CONFIG}:4:", "'record' needs a live provider"]),
    "config_packs_empty": (CONFIG, "pack: packs/starter", "packs: []",
                           [f"{CONFIG}:2:", "expected at least one pack directory"]),
}


@pytest.mark.parametrize("name", list(FINDINGS))
def test_fuzz_findings(project, name):
    rel, old, new, words = FINDINGS[name]
    path = project.root / rel
    original = project.files[rel]
    text = original.decode("utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1), "utf-8")
    try:
        for command in ("run", "validate"):
            code, out, elapsed = invoke(project.root, command)
            check_outcome(code, out, elapsed, [CONFIG, PACK + "/"])
            assert code == 2, out
            for word in words + [rel]:
                assert word in out, f"{word!r} not in\n{out}"
    finally:
        path.write_bytes(original)
