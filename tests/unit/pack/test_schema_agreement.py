"""The published JSON Schemas and the loader agree.

A contract the compiled contract schema accepts is one the vocabulary's located checks find
nothing in (so the loader may skip them), and one it refuses is refused by the loader; the
published contract and pack schemas (checked by jsonschema) never refuse what the loader
accepts; and a contract loads to the same value, or the same problems, whichever way its
structure is checked. Held on the example packs, the contracts the tests write, the projects
the refusal tests break and a few hundred mutated documents.
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import random
import re
import shutil
import sys
from pathlib import Path

import collector
import jsonschema
import pytest
import yaml
from trees import at, paths

import replayci
import replayci.pack.load_cases as load_cases_module
import replayci.pack.load_contract as load_contract_module
from replayci.core.errors import ConfigError
from replayci.pack import load_schema, schema_gen
from replayci.pack.loader import load_pack
from replayci.pack.sources import load_yaml

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(ROOT.glob("packs/*")) + [Path(replayci.__file__).parent / "tools" / "templates" / "starter"]
CONTRACT = jsonschema.Draft202012Validator(schema_gen.build("contract"))
PACK = jsonschema.Draft202012Validator(schema_gen.build("pack"))


def _pack_info(pack_dir: Path) -> dict:
    d = str(pack_dir.resolve())
    return {"dir": d, "contracts_dir": f"{d}/contracts", "golden_dir": f"{d}/golden",
            "negative_golden_dir": f"{d}/golden/negative", "recordings_dir": f"{d}/recordings",
            "bad_dirs": frozenset(), "real": {}}


def _load(file: Path, pack_dir: Path, monkeypatch, compiled: bool):
    """load_contract with the compiled schema (always) or the located checks (always); the
    problems the vocabulary's mapping check found, apart."""
    found: list = []
    real = load_contract_module.mapping_problems

    def recording(*args, **kw):
        out = real(*args, **kw)
        found.extend(out)
        return out

    with monkeypatch.context() as m:
        m.setattr(load_contract_module, "mapping_problems", recording)
        m.setattr(load_cases_module, "mapping_problems", recording)
        m.setattr(load_contract_module, "contract_fits",
                  (lambda v: load_schema.fits("contract", v)) if compiled else (lambda v: False))
        built = load_contract_module.load_contract(str(file), f"contracts/{file.name}", _pack_info(pack_dir))
    return built, found


def _shown(built) -> tuple:
    return re.sub(r" at 0x[0-9a-f]+", "", repr(built.value)), [str(p) for p in built.problems]


def check_contract(file: Path, pack_dir: Path, monkeypatch) -> None:
    """Every agreement this module holds, for one contract file."""
    doc = load_yaml(str(file), file.name)
    fits = load_schema.fits("contract", doc.value)
    by_hand, vocabulary = _load(file, pack_dir, monkeypatch, compiled=False)
    what = f"{file}:\n{file.read_text('utf-8')}"
    if fits:
        assert vocabulary == [], f"the schema accepts what the vocabulary refuses: {vocabulary}\n{what}"
        # (refused, the compiled schema leaves the contract to the same checks: nothing to compare)
        by_schema, _ = _load(file, pack_dir, monkeypatch, compiled=True)
        assert _shown(by_schema) == _shown(by_hand), what
    else:
        assert by_hand.problems, f"the compiled schema refuses a contract the loader accepts\n{what}"
    if not by_hand.problems:
        assert CONTRACT.is_valid(doc.value), f"the published schema refuses a contract the loader accepts\n{what}"


def check_pack_yaml(pack_dir: Path) -> None:
    """The published pack schema never refuses a pack.yaml the loader accepts."""
    doc = load_yaml(str(pack_dir / "pack.yaml"), "pack.yaml")
    if PACK.is_valid(doc.value if doc.value is not None else {}):
        return
    with pytest.raises(ConfigError):
        load_pack(str(pack_dir))


# ------------------------------------------------------------------ the example packs


@pytest.mark.parametrize("pack_dir", EXAMPLES, ids=lambda p: p.name)
def test_the_example_packs(pack_dir, monkeypatch):
    for file in sorted((pack_dir / "contracts").glob("*.yaml")):
        assert load_schema.fits("contract", load_yaml(str(file), file.name).value), file
        check_contract(file, pack_dir, monkeypatch)
    check_pack_yaml(pack_dir)


# ------------------------------------------------------------------ the contracts tests write


def _text(node, names: dict):
    """A string expression's value: a literal, a module constant, or a sum of them (else None)."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, names), _text(node.right, names)
        return left + right if left is not None and right is not None else None
    return None


@functools.cache  # read when a test asks, not at collection: every test process collects this module
def _written_contracts() -> list[str]:
    """The contract texts the tests give PackBuilder.contract as string literals or module
    constants."""
    texts = []
    with collector.paused():  # (a syntax tree is tens of thousands of objects, none of them garbage)
        for path in sorted((ROOT / "tests").rglob("test_*.py")):
            text = path.read_text("utf-8")
            if "contract" in text:  # (a file without the word holds no `.contract(...)` call)
                texts += _contracts_in(ast.parse(text))
    return sorted(set(texts))


def _contracts_in(tree: ast.Module) -> list[str]:
    """The texts one test module gives `.contract(name, text)` as literals or module constants."""
    texts = []
    names: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _text(node.value, names)
            if value is not None:
                names[node.targets[0].id] = value
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "contract"
                and len(node.args) == 2 and (text := _text(node.args[1], names)) is not None):
            texts.append(text)
    return texts


def test_the_tests_write_many_contracts():
    assert len(_written_contracts()) > 50


@pytest.mark.parametrize("chunk", range(8))
def test_the_contracts_tests_write(chunk, tmp_path, monkeypatch):
    pack_dir = tmp_path / "p"
    (pack_dir / "contracts").mkdir(parents=True)
    for i, text in enumerate(_written_contracts()[chunk::8]):
        file = pack_dir / "contracts" / f"c{i}.yaml"
        file.write_text(text, "utf-8")
        try:
            load_yaml(str(file), file.name)
        except ConfigError:
            continue  # not YAML the loader reads: no schema is asked
        check_contract(file, pack_dir, monkeypatch)


# ------------------------------------------------------------------ the projects the refusal tests break


def _bad_inputs():
    spec = importlib.util.spec_from_file_location("bad_inputs_cases", ROOT / "tests/robustness/test_bad_inputs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


BAD = _bad_inputs()


@pytest.mark.parametrize("name", sorted(BAD.CASES))
def test_the_projects_the_refusal_tests_break(name, tmp_path, monkeypatch):
    root = BAD.make_project(tmp_path)
    BAD.CASES[name](root)
    pack_dir = root / BAD.PACK
    for file in sorted((pack_dir / "contracts").glob("*.yaml")) if (pack_dir / "contracts").is_dir() else ():
        try:
            load_yaml(str(file), file.name)
        except ConfigError:
            continue
        check_contract(file, pack_dir, monkeypatch)
    try:
        check_pack_yaml(pack_dir)
    except ConfigError:
        pass  # pack.yaml itself unreadable


# ------------------------------------------------------------------ mutated documents

ODD_VALUES = [None, True, False, 0, 1, -1, 3, 3.0, 2.5, 1e9, 86_400_001, "", "x", ".", "..", ".\n", "..\n",
              "a/b", "a\\b", "deadbeef", "deadbeef\n", "DEADBEEF", "strict", "any", "multi_tool_call",
              "tool_not_invoked", "schema_error", "happy_path", "openai", "mcp:", "  ", [], ["x"], [1], [{}],
              {}, {"a": 1}, {"path": "$.x"}, {"path": "$.x", "equals": 1}, {"rubric": "r"}, {"min": 3},
              {"keep": ["$.a"], "drop": ["$.b"]}, {"mode": "strict"}, {"step": 1}, {"check": "wrong_tool"}]


def mutate(doc, rng: random.Random):
    """One or two edits of *doc*: a value replaced by an odd one, a key dropped, misspelt,
    added or moved up a level, an item doubled."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice((1, 1, 2))):
        inner = [p for p in paths(doc) if p]
        path = rng.choice(inner)
        parent, key = at(doc, path[:-1]), path[-1]
        kind = rng.choice(("value", "value", "value", "drop", "misspell", "add", "lift", "double"))
        if kind == "value":
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif kind == "drop":
            del parent[key]
        elif kind == "misspell" and isinstance(key, str) and len(key) > 2:
            i = rng.randrange(len(key) - 1)
            parent[key[:i] + key[i + 1] + key[i] + key[i + 2:]] = parent.pop(key)
        elif kind == "add" and isinstance(parent, dict):
            parent[rng.choice(("extra", "golden_cases", "judges", "tools", "mode", "invariants", "step"))] = \
                copy.deepcopy(rng.choice(ODD_VALUES))
        elif kind == "lift" and isinstance(parent[key], dict) and parent[key] and isinstance(parent, dict):
            inner = rng.choice(list(parent[key]))
            parent[inner] = parent[key].pop(inner)
        elif kind == "double" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return doc


# libyaml's emitter writes these documents byte for byte as PyYAML's own does, four times faster.
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(doc) -> str:
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=False, allow_unicode=True)


SEEDS = [yaml.safe_load(f.read_text("utf-8")) for pack_dir in EXAMPLES
         for f in sorted((pack_dir / "contracts").glob("*.yaml"))]
SCENARIO = {"tool": "multi_tool_call", "scenario": True, "max_steps": 4, "expect_tools": ["a", "b"],
            "tool_replay": "lenient", "tool_commands": {"a": "python a.py", "b": "mcp:srv"},
            "timeouts": {"total_ms": 1000, "tool_ms": 500}, "retries": {"max_attempts": 2, "retry_on": ["429"]},
            "rate_limits": {"on_429": {"respect_retry_after": True, "max_sleep_seconds": 1.5}},
            "trajectory": {"tool_sequence": {"mode": "subset", "tools": ["a"]}, "max_tool_calls": 3,
                           "final_invariants": [{"path": "$.text", "type": "string"}],
                           "step_invariants": [{"step": 1, "invariants": [{"path": "$.text", "exists": True}]}],
                           "retried_steps": [{"step": 2, "expected_error": "schema_violation"}]},
            "tool_replay_config": {"a": {"key": ["$.city"], "version": 2, "sanitize": {"drop": ["$.token"]}}},
            "assertions": {"judges": [{"rubric": "polite", "min": 3}, {"factuality": "ref"},
                                      {"classify": {"categories": ["x", "y"], "expected": "x"}}]},
            "pass_threshold": 0.5, "min_score": 0.8, "status": "observed", "description": "d",
            "golden_cases": [{"id": "c1", "input_ref": "c1.json", "expect_ok": False,
                              "expected_error": "wrong_tool", "expected_fingerprint": "deadbeef",
                              "expected_failure": [{"check": "wrong_tool"}], "category": "edge_case",
                              "tags": ["t"], "provider_modes": ["openai"],
                              "assertions": {"expected_tool_calls": [{"name": "a"}]}}]}


@pytest.mark.parametrize("seed", range(12))
def test_mutated_contracts(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    pack_dir = tmp_path / "p"
    (pack_dir / "contracts").mkdir(parents=True)
    for i in range(30):
        doc = mutate(rng.choice([*SEEDS, SCENARIO]), rng)
        file = pack_dir / "contracts" / f"m{i}.yaml"
        file.write_text(_dump(doc), "utf-8")
        check_contract(file, pack_dir, monkeypatch)


def _known_keys() -> dict:
    """Every key of the vocabulary's tables, with a value it takes somewhere."""
    from replayci.pack import vocabulary as spec

    sample = {"string": "x", "boolean": True, "integer": 1, "number": 0.5, "array": [], "object": {}}
    out = {}
    for table in (spec.CONTRACT_KEYS, spec.CASE_KEYS, spec.CASE_ASSERTIONS_KEYS, spec.ASSERTIONS_KEYS,
                  spec.EXPECTED_CALL_KEYS, spec.JUDGE_KEYS, spec.FAILURE_MATCHER_KEYS, spec.TRAJECTORY_KEYS,
                  spec.STEP_INVARIANT_KEYS, spec.RETRIED_STEP_KEYS, spec.TOOL_REPLAY_KEYS, spec.SANITIZE_KEYS):
        for key, fragment in table.items():
            kind = fragment.get("type", "string")
            out.setdefault(key, fragment["enum"][0] if "enum" in fragment else sample[kind if isinstance(kind, str)
                                                                                        else kind[0]])
    return out


# One odd value of each kind, for the systematic edits.
SHORT_LIST = [None, True, 0, 3.0, 2.5, 86_400_001, "", "x", ".", ".\n", "a/b", "deadbeef\n", "strict", [], ["x"],
              [1], {}, {"a": 1}]


@functools.cache
def _edits() -> list[tuple]:
    """The edits of SCENARIO: one value replaced by each odd value, and each dict given each known key."""
    replaced = [(path, None, value) for path in paths(SCENARIO) if path for value in SHORT_LIST]
    added = [(path, key, value) for path in paths(SCENARIO) if isinstance(at(SCENARIO, path), dict)
             for key, value in _known_keys().items()]
    return replaced + added


def _systematic(part: slice) -> list:
    """SCENARIO edited by each of a PART of the edits (made when asked: most tests take a few)."""
    out = []
    for path, key, value in _edits()[part]:
        doc = copy.deepcopy(SCENARIO)
        if key is None:
            at(doc, path[:-1])[path[-1]] = copy.deepcopy(value)
        else:
            at(doc, path).setdefault(key, value)
        out.append(doc)
    return out


def _check_all(docs: list, tmp_path, monkeypatch) -> None:
    pack_dir = tmp_path / "p"
    (pack_dir / "contracts").mkdir(parents=True)
    for i, doc in enumerate(docs):
        file = pack_dir / "contracts" / f"s{i}.yaml"
        file.write_text(_dump(doc), "utf-8")
        check_contract(file, pack_dir, monkeypatch)


@pytest.mark.parametrize("chunk", range(12))
def test_every_value_and_key_somewhere(chunk, tmp_path, monkeypatch):
    """SCENARIO (every section of a contract) edited one place at a time: every 8th edit."""
    _check_all(_systematic(slice(chunk * 8, None, 96)), tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(8))
def test_every_value_and_key_everywhere(chunk, tmp_path, monkeypatch):
    """SCENARIO edited one place at a time, every way (~2,900 contracts)."""
    _check_all(_systematic(slice(chunk, None, 8)), tmp_path, monkeypatch)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_pack_yaml(seed, tmp_path):
    rng = random.Random(seed)
    base = yaml.safe_load((EXAMPLES[0] / "pack.yaml").read_text("utf-8"))
    base.update({"paths": {"golden_dir": "golden"}, "gates": {"pass_rate": 0.9, "max_non_reproducible": 1},
                 "judge": {"provider": "openai", "model": "m"}, "mcp_servers": {"s": {"url": "http://127.0.0.1:1/mcp"}}})
    pack_dir = tmp_path / "p"
    shutil.copytree(EXAMPLES[0], pack_dir)
    for _ in range(25):
        (pack_dir / "pack.yaml").write_text(yaml.safe_dump(mutate(base, rng), sort_keys=False), "utf-8")
        check_pack_yaml(pack_dir)


# ------------------------------------------------------------------ what the compiled form rewrites


@pytest.mark.parametrize("text", [".", "..", ".\n", "..\n", "...", ".a", "..a", ".\n.", "a", "a\n", "\n",
                                  "a/b", "a\\b", "case_1", ". ", " .."])
def test_a_case_id_is_judged_as_the_vocabulary_judges_it(text):
    contract = {"tool": "t", "golden_cases": [{"id": text, "input_ref": "c.json"}]}
    from replayci.pack import vocabulary as spec

    assert load_schema.fits("contract", contract) == (spec.check_value(spec.CASE_KEYS["id"], text) is None)


@pytest.mark.parametrize("value, ok", [(3, True), (3.0, False), (True, False), ("3", False)])
def test_a_whole_number_is_no_float(value, ok):
    assert load_schema.fits("contract", {"tool": "t", "max_steps": value, "golden_cases": []}) is ok


def test_a_pattern_matches_the_whole_text():
    case = {"id": "c", "input_ref": "c.json", "expect_ok": False, "expected_fingerprint": "deadbeef\n"}
    assert not load_schema.fits("contract", {"tool": "t", "golden_cases": [case]})
    case["expected_fingerprint"] = "deadbeef"
    assert load_schema.fits("contract", {"tool": "t", "golden_cases": [case]})


# ------------------------------------------------------------------ where the two disagreed, and no longer do


def test_a_case_assertion_holds_no_judges():
    """The published schema let a case's assertions hold judges, which the loader refuses."""
    contract = {"tool": "t", "golden_cases": [{"id": "c", "input_ref": "c.json", "assertions": {"judges": []}}]}
    assert not CONTRACT.is_valid(contract)
    assert not load_schema.fits("contract", contract)


@pytest.mark.parametrize("pack_id, ok", [("bench", True), ("Bench", False), ("be nch", False), ("bench\n", False)])
def test_a_pack_id_is_matched_whole(pack_id, ok):
    """The published pattern was unanchored: 'Bench' matched at 'ench'."""
    assert PACK.is_valid({"pack_id": pack_id}) is (ok or pack_id == "bench\n")  # (Python's $ before a newline)
    from replayci.pack import vocabulary as spec

    assert (spec.check_value(spec.PACK_KEYS["pack_id"], pack_id) is None) is ok


@pytest.mark.parametrize("entry, ok", [({"path": "$.a"}, False), ({"path": "$.a", "weight": 2}, False),
                                       ({"path": "$.a", "exists": True}, True)])
def test_an_invariant_needs_an_operator(entry, ok):
    assert CONTRACT.is_valid({"golden_cases": [], "assertions": {"output_invariants": [entry]}}) is ok


@pytest.mark.parametrize("judge, ok", [({"rubric": "r"}, True), ({"min": 3}, False),
                                       ({"rubric": "r", "factuality": "f"}, False)])
def test_a_judge_is_one_kind(judge, ok):
    contract = {"golden_cases": [], "assertions": {"judges": [judge]}}
    assert CONTRACT.is_valid(contract) is ok and load_schema.fits("contract", contract) is ok


@pytest.mark.parametrize("sanitize, ok", [({}, True), ({"keep": []}, True), ({"keep": [], "drop": []}, False)])
def test_keep_or_drop(sanitize, ok):
    contract = {"golden_cases": [], "scenario": True, "tool_replay_config": {"t": {"sanitize": sanitize}}}
    assert CONTRACT.is_valid(contract) is ok and load_schema.fits("contract", contract) is ok


# ------------------------------------------------------------------ when the loader asks the compiled schema


def _big_pack(root: Path, cases: int) -> Path:
    pack_dir = root / "big"
    shutil.copytree(EXAMPLES[-1], pack_dir)  # the starter template
    lines = ["tool: get_weather", "golden_cases:"]
    lines += [f"  - {{id: c{i}, input_ref: get_weather.success.json}}" for i in range(cases)]
    for old in (pack_dir / "contracts").glob("*.yaml"):
        old.unlink()
    (pack_dir / "contracts" / "big.yaml").write_text("\n".join(lines) + "\n", "utf-8")
    return pack_dir


@pytest.mark.parametrize("cases, compiled", [(40, False), (load_schema.WORTH_CASES + 1, True)])
def test_the_loader_asks_the_compiled_schema_once_it_pays(cases, compiled, tmp_path, monkeypatch):
    monkeypatch.setattr(load_schema, "_checks", {})
    monkeypatch.setattr(load_schema, "_seen", [0])
    marked = []
    real = load_contract_module.contract_fits
    monkeypatch.setattr(load_contract_module, "contract_fits", lambda v: marked.append(real(v)) or marked[-1])
    from replayci.pack import vocabulary as spec

    looked = []  # the vocabulary's value checks of the contract (a case has three or more)
    check_value = spec.check_value
    monkeypatch.setattr(spec, "check_value", lambda *a: looked.append(a) or check_value(*a))
    big = _big_pack(tmp_path, cases)
    looked.clear()  # (pack.yaml is checked by hand)
    pack = load_pack(str(big))
    assert len(pack.contracts[0].cases) == cases
    assert marked == [compiled] and ("contract" in load_schema._checks) is compiled
    assert (len(looked) < 10) is compiled  # accepted by the schema: no second look


def test_a_refused_large_contract_gets_the_located_messages(tmp_path, monkeypatch):
    monkeypatch.setattr(load_schema, "WORTH_CASES", 0)
    pack_dir = _big_pack(tmp_path, 3)
    contract = pack_dir / "contracts" / "big.yaml"
    contract.write_text(contract.read_text("utf-8").replace("{id: c1,", "{id: c1, categroy: edge_case,"), "utf-8")
    assert not load_schema.fits("contract", load_yaml(str(contract), "big.yaml").value)
    with pytest.raises(ConfigError) as err:
        load_pack(str(pack_dir))
    assert [str(p) for p in err.value.problems] == [
        f"{contract}:4:14: golden_cases[1].categroy: unknown key 'categroy'; expected one of assertions, category, "
        "description, expect_ok, expected_error, expected_failure, expected_fingerprint, id, input_ref, "
        "provider_modes, tags; did you mean 'category'?"]
