#!/usr/bin/env python3
"""Check a project written by bench/gen_pack.py, independently of replayci's engine.

    python bench/check_gen.py DIR [DIR ...]
    python bench/check_gen.py --compare DIR_A DIR_B

For every contract and case it checks that: every file parses (YAML with the C loader,
JSON with json); every fixture's boundary hashes match its request (SPEC 7, via
replayci.core.hashing); all fixtures of a contract share one tools array that declares the
contract's tool (for a --vary project: no two fixtures of a contract share the same tools
bytes, all declare the same tool names with the same required arguments, and half the
fixtures are pretty-printed, half compact); every tool schema is a valid Draft 2020-12
schema; and, with a small reference evaluator of SPEC 5-6 (JSONPath by jsonpath-rfc9535,
schemas by jsonschema, against each fixture's own tools), that positive cases pass
(arguments valid against their tool's schema, every invariant holds) and each negative case
classifies as exactly its `expected_error`. It also prints the size distribution of the
fixtures. Exit status 1 on any problem.

--compare runs `replayci --provider recorded --json` (this Python's replayci) in two
projects generated with the same N and K (typically one with --vary, one without) and
checks that every case gets the same status and classification in both: the generator's
options change bytes, never verdicts.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import jsonpath_rfc9535
import yaml
from jsonschema import Draft202012Validator

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from replayci.core.hashing import boundary_hashes, canonical_json
from replayci.formats import normalize

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# ------------------------------------------------------------------ reference evaluator

_MISSING = object()


def json_eq(a, b) -> bool:
    """JSON equality: 1 == 1.0, but true != 1 and "1" != 1 (SPEC 5)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_type(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def op_holds(op: str, expected, v) -> bool:
    if op == "equals":
        return json_eq(v, expected)
    if op == "not_equals":
        return not json_eq(v, expected)
    if op == "type":
        t = json_type(v)
        return t == expected or (expected == "number" and t == "integer")
    if op == "one_of":
        return any(json_eq(v, e) for e in expected)
    if op in ("gte", "lte", "gt", "lt"):
        if not _num(v):
            return False
        return {"gte": v >= expected, "lte": v <= expected, "gt": v > expected, "lt": v < expected}[op]
    if op.startswith("length_"):
        if not isinstance(v, (str, list, dict)):
            return False
        n = len(v)
        return {"length_eq": n == expected, "length_gte": n >= expected, "length_lte": n <= expected}[op]
    if op == "contains":
        return (expected in v) if isinstance(v, str) and isinstance(expected, str) else (
            isinstance(v, list) and any(json_eq(x, expected) for x in v))
    if op == "exists":
        return expected is True
    raise ValueError(f"operator {op!r} not supported by check_gen")


def invariant_holds(inv: dict, doc) -> bool:
    values = jsonpath_rfc9535.find(inv["path"], doc).values()
    ops = {k: v for k, v in inv.items() if k != "path"}
    if not values:
        return ops == {"exists": False}
    if "exists" in ops and ops["exists"] is False:
        return False
    return all(op_holds(op, exp, v) for op, exp in ops.items() for v in values)


def classify(contract: dict, request: dict, response: dict, validators: dict) -> str | None:
    """SPEC 6 for single-tool contracts: the first failing check's classification, or None."""
    doc = normalize(response)
    tool = contract["tool"]
    asserts = contract.get("assertions") or {}
    failures: list[str] = []
    if not doc["success"]:
        failures.append("unexpected_error")
    calls = doc["tool_calls"]
    if doc["success"]:
        if not calls:
            failures.append("tool_not_invoked")
        else:
            mine = [c for c in calls if c["name"] == tool]
            if not mine:
                failures.append("wrong_tool")
            if any(not isinstance(c["arguments"], dict) for c in mine):
                failures.append("malformed_arguments")
            for c in calls:
                v = validators.get(c["name"])
                if v is not None and isinstance(c["arguments"], dict) and not v.is_valid(c["arguments"]):
                    failures.append("schema_violation")
                    break
            for exp in contract.get("expected_tool_calls") or []:
                if not any(c["name"] == exp["name"] and isinstance(c["arguments"], dict)
                           and all(invariant_holds(i, c["arguments"]) for i in exp.get("argument_invariants") or [])
                           for c in calls):
                    failures.append("argument_mismatch")
                    break
        if any(not invariant_holds(i, doc) for i in asserts.get("output_invariants") or []):
            failures.append("invariant_violation")
    if any(not invariant_holds(i, request) for i in asserts.get("input_invariants") or []):
        failures.append("input_violation")
    return failures[0] if failures else None


# ------------------------------------------------------------------ the checks

def check_project(root: Path) -> list[str]:
    problems: list[str] = []
    t0 = time.perf_counter()
    cfg = yaml.load((root / ".replayci.yml").read_text(encoding="utf-8"), Loader=Loader)
    if cfg.get("provider") != "recorded" or cfg.get("pack") != "packs/bench":
        problems.append(f".replayci.yml: unexpected content {cfg!r}")
    pack_dir = root / cfg["pack"]
    pack = yaml.load((pack_dir / "pack.yaml").read_text(encoding="utf-8"), Loader=Loader)
    for k, v in {"pack_id": "bench", "schema_version": "v0.1", "default_model": "gpt-4o-mini"}.items():
        if pack.get(k) != v:
            problems.append(f"pack.yaml: {k} is {pack.get(k)!r}, want {v!r}")
    if json.loads((pack_dir / "nr-allowlist.json").read_text(encoding="utf-8")) != []:
        problems.append("nr-allowlist.json is not []")

    try:
        vary = bool(json.loads((root / ".bench-gen.json").read_text(encoding="utf-8")).get("vary"))
    except (OSError, ValueError):
        vary = False
    layouts: Counter = Counter()
    golden = pack_dir / "golden"
    sizes: list[int] = []
    forms: Counter = Counter()
    verdicts: Counter = Counter()
    n_contracts = n_filter = n_expected = n_bounds = 0
    referenced: set[Path] = set()
    for cpath in sorted((pack_dir / "contracts").glob("*.yaml")):
        n_contracts += 1
        where = cpath.relative_to(root)
        contract = yaml.load(cpath.read_text(encoding="utf-8"), Loader=Loader)
        tool = contract["tool"]
        outs = contract["assertions"]["output_invariants"]
        ins = contract["assertions"]["input_invariants"]
        ops = {op for i in outs for op in i if op != "path"}
        if not {"equals", "type", "one_of"} <= ops:
            problems.append(f"{where}: operators {sorted(ops)} miss one of equals/type/one_of")
        if {"gte", "lte"} <= ops:
            n_bounds += 1
        if any("[?" in i["path"] for i in outs):
            n_filter += 1
        else:
            problems.append(f"{where}: no filter-path invariant")
        if not ins:
            problems.append(f"{where}: no input invariant")
        if contract.get("expected_tool_calls"):
            n_expected += 1
        for inv in outs + ins:
            jsonpath_rfc9535.compile(inv["path"])  # raises on an invalid path
        tools_json = None
        validators: dict = {}
        seen_tools: set[str] = set()
        signature = None
        for case in contract.get("golden_cases") or []:
            ref = case["input_ref"]
            fpath = golden / ref
            referenced.add(fpath)
            here = f"{where} {case['id']} ({ref})"
            raw = fpath.read_bytes()
            sizes.append(len(raw))
            fx = json.loads(raw)
            lines = raw.count(b"\n")
            layouts["compact" if lines == 1 else "one line per key" if lines == len(fx) + 2 else "pretty"] += 1
            req, resp = fx["request"], fx["response"]
            want = {"model": req["model"], **boundary_hashes(req)}
            if fx["boundary"] != want:
                problems.append(f"{here}: boundary {fx['boundary']} != {want}")
            tj = canonical_json(req["tools"])
            if tools_json is None or vary:
                names = [t["function"]["name"] for t in req["tools"]]
                if tool not in names or not 3 <= len(names) <= 4:
                    problems.append(f"{here}: tools {names} (want {tool} + 2-3 others)")
                validators = {}
                for t in req["tools"]:
                    schema = t["function"]["parameters"]
                    Draft202012Validator.check_schema(schema)
                    validators[t["function"]["name"]] = Draft202012Validator(schema)
            if tools_json is None:
                tools_json = tj
            elif not vary and tj != tools_json:
                problems.append(f"{here}: tools differ from the contract's first fixture")
            if vary:
                if tj in seen_tools:
                    problems.append(f"{here}: tools repeat those of another fixture of the contract")
                seen_tools.add(tj)
                sig = sorted((t["function"]["name"], tuple(t["function"]["parameters"]["required"]))
                             for t in req["tools"])
                if signature is None:
                    signature = sig
                elif sig != signature:
                    problems.append(f"{here}: tool names or required arguments differ between fixtures")
            roles = [m["role"] for m in req["messages"]]
            if roles[0] != "system" or roles[-1] != "user":
                problems.append(f"{here}: message roles {roles}")
            form = ("openai" if "choices" in resp else "anthropic" if resp.get("type") == "message"
                    else "canonical")
            forms[form] += 1
            got = classify(contract, req, resp, validators)
            if case.get("expect_ok", True):
                if got is not None:
                    problems.append(f"{here}: positive case classifies as {got}")
                if not ref.startswith(f"{cpath.stem}/"):
                    problems.append(f"{here}: positive fixture outside golden/{cpath.stem}/")
                # the arguments, checked directly as well
                for c in normalize(resp)["tool_calls"]:
                    errs = list(validators[c["name"]].iter_errors(c["arguments"]))
                    if errs:
                        problems.append(f"{here}: {errs[0].message}")
                verdicts["positive"] += 1
            else:
                exp = case["expected_error"]
                if got != exp:
                    problems.append(f"{here}: negative case expects {exp}, classifies as {got}")
                if not ref.startswith("negative/"):
                    problems.append(f"{here}: negative fixture outside golden/negative/")
                verdicts[exp] += 1
    on_disk = set(golden.rglob("*.json"))
    if on_disk != referenced:
        problems.append(f"{len(on_disk - referenced)} unreferenced and "
                        f"{len(referenced - on_disk)} missing fixture files")
    n = len(sizes)
    if vary and (abs(layouts["pretty"] - layouts["compact"]) > 1 or layouts["one line per key"]):
        problems.append(f"--vary project: fixture layouts {dict(layouts)}, want half pretty, half compact")
    sizes.sort()
    pct = lambda p: sizes[min(n - 1, int(n * p))]  # noqa: E731
    negs = dict(sorted((k, v) for k, v in verdicts.items() if k != "positive"))
    print(f"{root}: {n_contracts} contracts ({n_filter} with a filter path, {n_bounds} with gte/lte, "
          f"{n_expected} with expected_tool_calls), {n} cases, {sum(negs.values())} negative {negs}")
    print(f"  fixtures: mean {sum(sizes) / n:.0f} B, min {sizes[0]}, p10 {pct(.1)}, median {pct(.5)}, "
          f"p90 {pct(.9)}, max {sizes[-1]}; total {sum(sizes) / 1e6:.1f} MB; forms "
          f"{ {k: f'{v / n:.0%}' for k, v in sorted(forms.items())} }; layouts {dict(sorted(layouts.items()))}"
          f"{'; tools vary per fixture' if vary else ''}")
    print(f"  checked in {time.perf_counter() - t0:.2f} s: "
          f"{'OK' if not problems else f'{len(problems)} PROBLEMS'}")
    return problems


def verdicts(root: Path) -> dict:
    """(contract, case) -> (status, classification) from replayci's own JSON report."""
    p = subprocess.run([sys.executable, "-m", "replayci", "--provider", "recorded", "--json"],
                       cwd=root, capture_output=True, text=True, timeout=1800)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{root}: replayci exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return {(c["contract"], c["case"]): (c["status"], c.get("classification"))
            for c in json.loads(p.stdout)["cases"]}


def compare_verdicts(a: Path, b: Path) -> list[str]:
    problems: list[str] = []
    stamps = []
    for root in (a, b):
        try:
            stamps.append(json.loads((root / ".bench-gen.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return [f"{root}: no generator stamp (.bench-gen.json)"]
    if (stamps[0]["n"], stamps[0]["contracts"]) != (stamps[1]["n"], stamps[1]["contracts"]):
        return [f"not the same N and K: {stamps[0]} vs {stamps[1]}"]
    va, vb = verdicts(a), verdicts(b)
    if va.keys() != vb.keys():
        problems.append(f"case sets differ: {len(va.keys() - vb.keys())} only in {a}, "
                        f"{len(vb.keys() - va.keys())} only in {b}")
    for key in sorted(va.keys() & vb.keys()):
        if va[key] != vb[key]:
            problems.append(f"{key[0]}/{key[1]}: {va[key]} in {a}, {vb[key]} in {b}")
    statuses = Counter(v[0] for v in va.values())
    print(f"verdicts of {a} (vary={stamps[0].get('vary')}) and {b} (vary={stamps[1].get('vary')}): "
          f"{len(va)} cases, statuses {dict(sorted(statuses.items()))}: "
          f"{'the same' if not problems else f'{len(problems)} DIFFERENCES'}")
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "--compare":
        if len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        problems = compare_verdicts(Path(argv[1]), Path(argv[2]))
        for p in problems[:50]:
            print("  PROBLEM:", p)
        return 1 if problems else 0
    bad = 0
    for d in argv:
        problems = check_project(Path(d))
        for p in problems[:50]:
            print("  PROBLEM:", p)
        if len(problems) > 50:
            print(f"  ... and {len(problems) - 50} more")
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
