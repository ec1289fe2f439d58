#!/usr/bin/env python3
"""replayci against promptfoo on the same recorded tool calls, offline.

    python bench/vs_promptfoo.py --install                # once: promptfoo from npm into a scratch folder
    python bench/vs_promptfoo.py [--sizes 1000,10000] [--repeat 1]
                                 [--assertion builtin|javascript|both] [--json] [--save FILE]
                                 [--no-gnu-time] [--generate-only]

For each N it writes bench/out/vs-N/ (cached, like bench/gen_pack.py's projects):

  replayci/   a pack of K contracts (min(100, N)), one tool each, no invariants, and N
              recorded fixtures (request with 3-4 tools, raw OpenAI chat completion)
  promptfoo-builtin/, promptfoo-javascript/
              promptfooconfig.yaml, tools/cNNN.json (each contract's tools array) and
              tests.json: one test per case whose `response` var is the same recorded
              completion, sent back by promptfoo's `echo` provider (no network, no API key),
              turned into the assistant message by the provider's `transform`
  negatives.json  the negative cases' names, for the verdict check

Both check the same three things: a tool was called, its arguments parse as JSON, they
satisfy the tool's JSON Schema. replayci does it with its default checks of a contract's
`tool`; promptfoo with `is-valid-openai-tools-call` (--assertion builtin, the default: the
provider's `tools: file://tools/{{contract}}.json` gives each test its contract's tools) or
with a file-based `javascript` assertion (--assertion javascript: the called name, JSON.parse
and Ajv, validators compiled once per tool). About 10 % of the cases are negative
(tool_not_invoked, malformed_arguments, schema_violation in turn): replayci expects them to
fail that way (`expect_ok: false`, so it passes them and exits 0); promptfoo just fails them
and exits 100, by design. The script checks that the verdicts agree case by case: replayci
passes all N, promptfoo fails exactly the negative cases and has no errors.

Timing (bench/recorded.py's Runner: GNU time when present, else getrusage): one untimed
warm-up of each on a 10-case set, then --repeat rounds of replayci, promptfoo (each
--assertion asked for) at each N, one after the other. Quoted: medians, and the paired
ratio promptfoo/replayci (median over rounds of the ratio within a round). Both write a
JSON report of every case, which is also what the verdict check reads: `replayci --provider
recorded --report-json FILE` and `promptfoo eval -c CONFIG --no-cache --no-table
--no-progress-bar --no-write -o FILE` (no result database, no cache: promptfoo's cheapest
way that still reports per case). promptfoo runs with telemetry, update checks and its
debug log file off, and its config folder inside the scratch folder.

promptfoo is only ever installed with --install (refused when CI is set): `npm install` of
promptfoo@VERSION (default 0.121.20, the newest that supports Node 20; later versions need
Node >= 22.22) into bench/out/promptfoo/ (git-ignored, ~1.4 GB). Without it the script
stops and says so; --generate-only writes the two projects without running anything.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_pack  # noqa: E402
import recorded  # noqa: E402
from gen_pack import boundary_hashes  # noqa: E402

DEFAULT_VERSION = "0.121.20"
NEGATIVE_KINDS = ("tool_not_invoked", "malformed_arguments", "schema_violation")
STAMP = ".vs-gen.json"
WARMUP_N = 10
PROMPTFOO_EXIT_FAILURES = 100  # promptfoo's exit code when some test failed


# ------------------------------------------------------------------ the cases

def make_cases(n: int, k: int | None = None) -> tuple[list[gen_pack.ContractPlan], list[dict]]:
    """K contract plans and N cases: {contract, id, negative, request, response}."""
    k = gen_pack.default_contracts(n) if k is None else k
    rng = random.Random(f"vs/{n}/{k}")
    width_c = max(3, len(str(k - 1)))
    width_case = max(5, len(str(n - 1)))
    plans = [gen_pack.ContractPlan(c, rng, width_c) for c in range(k)]
    base, rem = divmod(n, k)
    neg_idx = sorted(rng.sample(range(n), round(n * gen_pack.NEGATIVE_FRACTION)))
    negatives = {g: NEGATIVE_KINDS[i % len(NEGATIVE_KINDS)] for i, g in enumerate(neg_idx)}
    cases = []
    g = 0
    for c, plan in enumerate(plans):
        for _ in range(base + (1 if c < rem else 0)):
            neg = negatives.get(g)
            text = None
            if neg == "schema_violation":
                args = plan.schema_breaking_args(rng)
                call = (plan.tool, args)
            else:
                args = plan.positive_args(rng)
                call = (plan.tool, args)
                if neg == "tool_not_invoked":
                    call, text = None, rng.choice(gen_pack.REFUSALS)
                elif neg == "malformed_arguments":
                    good = json.dumps(args, ensure_ascii=False)
                    raw = good[: max(2, len(good) * 2 // 3)] if rng.random() < 0.5 else good.replace('"', "'")
                    call = (plan.tool, raw)
            request = {"model": gen_pack.MODEL,
                       "messages": [{"role": "system", "content": plan.system_prompt},
                                    {"role": "user", "content": plan.user_message(args, rng)}],
                       "tools": plan.tools, "tool_choice": "auto", "temperature": 0}
            prompt_tokens = len(json.dumps(request)) // 4
            response = gen_pack.make_response("openai", call, text, rng, prompt_tokens)
            cases.append({"contract": plan.cid, "id": f"case_{g:0{width_case}d}", "negative": neg,
                          "request": request, "response": response, "plan": plan})
            g += 1
    return plans, cases


def write_replayci(root: Path, plans: list, cases: list[dict]) -> None:
    pack = root / "packs" / "vs"
    (pack / "contracts").mkdir(parents=True)
    (root / ".replayci.yml").write_text(
        "# Generated by bench/vs_promptfoo.py\nprovider: recorded\npack: packs/vs\n", encoding="utf-8")
    (pack / "pack.yaml").write_text(
        f"pack_id: vs\nname: replayci vs promptfoo\nversion: \"1.0.0\"\nschema_version: v0.1\n"
        f"default_model: {gen_pack.MODEL}\n", encoding="utf-8")
    by_contract: dict[str, list[str]] = {p.cid: [] for p in plans}
    for case in cases:
        rel = (f"negative/{case['contract']}/{case['id']}.json" if case["negative"]
               else f"{case['contract']}/{case['id']}.json")
        path = pack / "golden" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fixture = {"boundary": {"model": gen_pack.MODEL, **boundary_hashes(case["request"])},
                   "request": case["request"], "response": case["response"]}
        path.write_text(json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
        entry = {"id": case["id"], "input_ref": rel}
        if case["negative"]:
            entry.update(expect_ok=False, expected_error=case["negative"])
        by_contract[case["contract"]].append(f"  - {gen_pack._flow(entry)}")
    for plan in plans:
        lines = by_contract[plan.cid]
        (pack / "contracts" / f"{plan.cid}.yaml").write_text(
            "# Generated by bench/vs_promptfoo.py\n"
            f"tool: {plan.tool}\n"
            + ("golden_cases:\n" + "\n".join(lines) if lines else "golden_cases: []") + "\n",
            encoding="utf-8")


ASSERT_JS = """\
// Generated by bench/vs_promptfoo.py: the checks replayci makes of a contract's `tool`.
const fs = require("fs");
const path = require("path");
const NODE_MODULES = %(node_modules)s;
const Ajv = require(path.join(NODE_MODULES, "ajv"));
const addFormats = require(path.join(NODE_MODULES, "ajv-formats"));
const ajv = new Ajv({ strictSchema: false });
(addFormats.default || addFormats)(ajv);
const validators = new Map();  // "contract/tool" -> compiled schema

function validator(contract, name) {
  const key = contract + "/" + name;
  if (!validators.has(key)) {
    const tools = JSON.parse(fs.readFileSync(path.join(__dirname, "tools", contract + ".json"), "utf8"));
    for (const t of tools) validators.set(contract + "/" + t.function.name, ajv.compile(t.function.parameters));
    if (!validators.has(key)) validators.set(key, null);
  }
  return validators.get(key);
}

module.exports = (output, context) => {
  const calls = output && output.tool_calls;
  const want = context.vars.tool;
  if (!Array.isArray(calls) || calls.length === 0) return { pass: false, score: 0, reason: "tool_not_invoked" };
  if (!calls.some((c) => c.function && c.function.name === want)) {
    return { pass: false, score: 0, reason: "wrong_tool: " + calls.map((c) => c.function && c.function.name) };
  }
  for (const c of calls) {
    let args;
    try { args = JSON.parse(c.function.arguments); } catch (e) { args = undefined; }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      return { pass: false, score: 0, reason: "malformed_arguments: " + c.function.name };
    }
    const v = validator(context.vars.contract, c.function.name);
    if (!v) return { pass: false, score: 0, reason: "wrong_tool: no tool " + c.function.name };
    if (!v(args)) return { pass: false, score: 0, reason: "schema_violation: " + ajv.errorsText(v.errors) };
  }
  return { pass: true, score: 1, reason: "tool called, arguments JSON, schema-valid" };
};
"""


def write_promptfoo(root: Path, plans: list, cases: list[dict], assertion: str, node_modules: Path) -> None:
    (root / "tools").mkdir(parents=True)
    for plan in plans:
        (root / "tools" / f"{plan.cid}.json").write_text(
            json.dumps(plan.tools, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tests = [{"description": f"{c['contract']}/{c['id']}",
              "vars": {"contract": c["contract"], "tool": c["plan"].tool,
                       "response": json.dumps(c["response"], ensure_ascii=False)}}
             for c in cases]
    (root / "tests.json").write_text(json.dumps(tests, ensure_ascii=False) + "\n", encoding="utf-8")
    if assertion == "builtin":
        provider = ("  - id: echo\n"
                    "    config:\n"
                    "      tools: file://tools/{{contract}}.json\n")
        check = "    - type: is-valid-openai-tools-call\n"
    else:
        provider = "  - id: echo\n"
        check = "    - type: javascript\n      value: file://assert_tool_call.js\n"
        (root / "assert_tool_call.js").write_text(
            ASSERT_JS % {"node_modules": json.dumps(str(node_modules))}, encoding="utf-8")
    (root / "promptfooconfig.yaml").write_text(
        "# Generated by bench/vs_promptfoo.py: the recorded responses, echoed back and checked offline.\n"
        f"description: replayci comparison, {len(cases)} recorded tool calls ({assertion} assertion)\n"
        "prompts:\n"
        "  - \"{{response}}\"\n"
        "providers:\n"
        + provider +
        "    transform: JSON.parse(output).choices[0].message\n"
        "defaultTest:\n"
        "  assert:\n"
        + check +
        "tests: file://tests.json\n", encoding="utf-8")


ASSERTIONS = ("builtin", "javascript")


def stamp_for(n: int, node_modules: Path) -> dict:
    digest = hashlib.sha256(Path(__file__).read_bytes() + (HERE / "gen_pack.py").read_bytes()).hexdigest()
    return {"n": n, "node_modules": str(node_modules), "generator_sha256": digest}


def ensure_sets(n: int, out_dir: Path, node_modules: Path) -> Path:
    """bench/out/vs-N with replayci/ and promptfoo-*/, regenerated when stale."""
    root = out_dir / f"vs-{n}"
    stamp = stamp_for(n, node_modules)
    try:
        if json.loads((root / STAMP).read_text()) == stamp:
            return root
    except (OSError, ValueError):
        pass
    if root.exists():
        if not (root / STAMP).exists() and any(root.iterdir()):
            raise SystemExit(f"{root} exists and was not written by vs_promptfoo.py")
        shutil.rmtree(root)
    print(f"generating {root} ...", file=sys.stderr)
    plans, cases = make_cases(n)
    write_replayci(root / "replayci", plans, cases)
    for assertion in ASSERTIONS:
        write_promptfoo(root / f"promptfoo-{assertion}", plans, cases, assertion, node_modules)
    negatives = sorted(f"{c['contract']}/{c['id']}" for c in cases if c["negative"])
    (root / "negatives.json").write_text(json.dumps(negatives) + "\n", encoding="utf-8")
    (root / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return root


# ------------------------------------------------------------------ promptfoo itself

def promptfoo_bin(scratch: Path) -> Path:
    return scratch / "node_modules" / ".bin" / "promptfoo"


def installed_version(scratch: Path) -> str | None:
    try:
        return json.loads((scratch / "node_modules" / "promptfoo" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def install(scratch: Path, version: str) -> None:
    if os.environ.get("CI"):
        raise SystemExit("--install is refused when CI is set: the comparison is never part of CI")
    npm = shutil.which("npm")
    if not npm:
        raise SystemExit("npm is not on PATH (apt-get install nodejs npm)")
    scratch.mkdir(parents=True, exist_ok=True)
    pkg = scratch / "package.json"
    if not pkg.exists():
        pkg.write_text('{"name": "replayci-bench-promptfoo", "private": true}\n', encoding="utf-8")
    print(f"npm install promptfoo@{version} into {scratch} (a few minutes, ~1.4 GB) ...", file=sys.stderr)
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", f"promptfoo@{version}"],
                   cwd=scratch, check=True)


def promptfoo_env(scratch: Path) -> dict:
    env = recorded.bench_env()
    # PROMPTFOO_DISABLE_DEBUG_LOG: the debug log file is on by default; with it, promptfoo
    # 0.121.20 on a run of 1,000 cases dies at exit ("write after end" from winston's file
    # transport, exit 1 instead of 100). Off, promptfoo also does less work.
    env.update(PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
               PROMPTFOO_DISABLE_SHARING="1", PROMPTFOO_DISABLE_DEBUG_LOG="1",
               PROMPTFOO_CONFIG_DIR=str(scratch / "config"))
    return env


# ------------------------------------------------------------------ running and checking

def replayci_verdicts(report_text: str | None) -> dict:
    """replayci must pass every case: positives pass, negatives fail as expected."""
    try:
        cases = json.loads(report_text or "")["cases"]
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"no JSON report ({exc.__class__.__name__})", "agrees": False}
    statuses: dict = {}
    for c in cases:
        statuses[c.get("status")] = statuses.get(c.get("status"), 0) + 1
    return {"cases": len(cases), "statuses": statuses,
            "agrees": bool(cases) and statuses == {"pass": len(cases)}}


def promptfoo_verdicts(out_text: str | None, negatives: set[str]) -> dict:
    """promptfoo must fail exactly the negative cases, with no errors."""
    try:
        results = json.loads(out_text or "")["results"]
        stats = results["stats"]
        failed = {r["testCase"]["description"] for r in results["results"] if not r.get("success")}
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"no results file ({exc.__class__.__name__})", "agrees": False}
    out = {"cases": len(results["results"]), "successes": stats.get("successes"),
           "failures": stats.get("failures"), "errors": stats.get("errors"),
           "eval_ms": stats.get("durationMs")}
    out["agrees"] = failed == negatives and not stats.get("errors")
    if not out["agrees"]:
        out["unexpected"] = sorted(failed ^ negatives)[:5]
    return out


def measure(runner: recorded.Runner, pf_runner: recorded.Runner, exe: Path, pf: Path, root: Path,
            assertions: list[str], repeat: int) -> dict:
    """*repeat* rounds of replayci, then promptfoo with each assertion, on root's sets; all
    write their JSON report (--report-json / -o), which the verdict check reads."""
    runs: dict[str, list[dict]] = {}
    last: dict = {}
    with tempfile.TemporaryDirectory(prefix="replayci-vs-") as tmp:
        cmds = {"replayci": (runner, [str(exe), "--provider", "recorded", "--report-json",
                                      str(Path(tmp) / "replayci.json")],
                             root / "replayci", Path(tmp) / "replayci.json")}
        for a in assertions:
            out = Path(tmp) / f"promptfoo-{a}.json"
            cmds[f"promptfoo_{a}"] = (
                pf_runner, [str(pf), "eval", "-c", str(root / f"promptfoo-{a}" / "promptfooconfig.yaml"),
                            "--no-cache", "--no-table", "--no-progress-bar", "--no-write", "-o", str(out)],
                root / f"promptfoo-{a}", out)
        for _ in range(repeat):
            for name, (r, cmd, cwd, out) in cmds.items():
                runs.setdefault(name, []).append(r.run(cmd, cwd))
                try:
                    last[name] = out.read_text(encoding="utf-8")
                    out.unlink()
                except OSError:
                    last[name] = None
    row: dict = {"replayci": recorded.summarize(runs["replayci"]), "promptfoo": {}}
    negatives = set(json.loads((root / "negatives.json").read_text()))
    row["replayci_verdicts"] = replayci_verdicts(last["replayci"])
    for a in assertions:
        name = f"promptfoo_{a}"
        pr = recorded.summarize(runs[name])
        # promptfoo exits 100 when tests fail, which the negative cases do by design.
        pr["rc_ok"] = set(pr["rc"]) <= {0, PROMPTFOO_EXIT_FAILURES}
        pr["stderr_tail"] = next((r["stderr_tail"] for r in runs[name]
                                  if r["rc"] not in (0, PROMPTFOO_EXIT_FAILURES)), None)
        pr["ratio"] = recorded.paired(runs[name], runs["replayci"])
        pr["rss_ratio"] = pr["rss_mb"] / row["replayci"]["rss_mb"]
        pr["verdicts"] = promptfoo_verdicts(last[name], negatives)
        row["promptfoo"][a] = pr
    row["negatives"] = len(negatives)
    row["ok"] = (row["replayci_verdicts"]["agrees"] and set(row["replayci"]["rc"]) <= {0, 1}
                 and all(p["rc_ok"] and p["verdicts"]["agrees"] for p in row["promptfoo"].values()))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="replayci vs promptfoo on the same recorded tool calls.")
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated case counts")
    ap.add_argument("--repeat", type=int, default=1, help="alternating rounds per size (medians; default 1)")
    ap.add_argument("--assertion", choices=(*ASSERTIONS, "both"), default="builtin",
                    help="promptfoo's check: is-valid-openai-tools-call (builtin), a file-based "
                         "javascript one, or both in the same rounds")
    ap.add_argument("--install", action="store_true", help="npm install promptfoo into the scratch folder first")
    ap.add_argument("--promptfoo-version", default=DEFAULT_VERSION, help=f"for --install (default {DEFAULT_VERSION})")
    ap.add_argument("--scratch", type=Path, default=HERE / "out" / "promptfoo",
                    help="where promptfoo is installed (default bench/out/promptfoo)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out", help="where the case sets are generated")
    ap.add_argument("--generate-only", action="store_true", help="write the case sets, run nothing")
    ap.add_argument("--replayci", help="replayci executable (default: next to sys.executable)")
    ap.add_argument("--no-gnu-time", action="store_true", help="use the getrusage fallback")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--save", type=Path, help="also write the JSON results to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    assertions = list(ASSERTIONS) if args.assertion == "both" else [args.assertion]
    scratch = args.scratch.resolve()
    node_modules = scratch / "node_modules"

    if args.generate_only:
        for n in sizes:
            print(ensure_sets(n, args.out_dir, node_modules))
        return 0

    if args.install and installed_version(scratch) != args.promptfoo_version:
        install(scratch, args.promptfoo_version)
    pf = promptfoo_bin(scratch)
    pf_version = installed_version(scratch)
    if not pf.exists() or not pf_version:
        print(f"promptfoo is not installed in {scratch}: run with --install (npm, ~1.4 GB, never in CI)",
              file=sys.stderr)
        return 2
    env = recorded.bench_env()
    use_gnu = not args.no_gnu_time and recorded.have_gnu_time()
    runner = recorded.Runner(use_gnu_time=use_gnu, env=env)
    pf_runner = recorded.Runner(use_gnu_time=use_gnu, env=promptfoo_env(scratch))
    exe = recorded.find_replayci(args.replayci)
    runnable, version = recorded.probe(exe, env)
    if not runnable:
        print(f"replayci is not runnable: {version}", file=sys.stderr)
        return 2
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()

    res: dict = {
        "machine": {"python": platform.python_version(), "node": node, "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_avg": recorded._loadavg(), "timer": runner.name,
                    "repeat": args.repeat},
        "replayci": version, "promptfoo": pf_version, "assertions": assertions, "rows": [],
    }
    print(f"warm-up at N={WARMUP_N} ...", file=sys.stderr)
    warm = ensure_sets(WARMUP_N, args.out_dir, node_modules)
    res["warmup"] = measure(runner, pf_runner, exe, pf, warm, assertions, 1)
    for n in sizes:
        root = ensure_sets(n, args.out_dir, node_modules)
        print(f"N={n}: timing ...", file=sys.stderr)
        row = {"n": n, "sets": str(root)}
        row.update(measure(runner, pf_runner, exe, pf, root, assertions, args.repeat))
        res["rows"].append(row)
    res["machine"]["load_avg_after"] = recorded._loadavg()

    if args.save:
        args.save.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=2) if args.json else markdown(res))
    return 0 if all(r["ok"] for r in res["rows"]) else 1


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [
        f"replayci {res['replayci'].split()[-1]} vs promptfoo {res['promptfoo']} (echo provider) — "
        f"median of {m['repeat']} alternating round(s) after a warm-up, {m['cpus']} CPUs, "
        f"Python {m['python']}, Node {m['node']}, timer: {m['timer']}, "
        f"load average {m['load_avg']} → {m.get('load_avg_after')}",
        "",
        "| N | promptfoo assertion | replayci s | promptfoo s | promptfoo/replayci (paired) "
        "| replayci peak RSS MB | promptfoo peak RSS MB | RSS ratio | verdicts agree |",
        "|---:|:---|---:|---:|---:|---:|---:|---:|:---|",
    ]
    for r in res["rows"]:
        rc = r["replayci"]
        for a, p in r["promptfoo"].items():
            agree = "yes" if r["replayci_verdicts"]["agrees"] and p["verdicts"]["agrees"] else "NO"
            lines.append(
                f"| {r['n']} | {'is-valid-openai-tools-call' if a == 'builtin' else 'javascript (file)'} | "
                f"{rc['wall_s']:.2f} | {p['wall_s']:.2f} | {p['ratio']['median']:.1f}× | "
                f"{rc['rss_mb']:.0f} | {p['rss_mb']:.0f} | {p['rss_ratio']:.1f}× | {agree} |")
    lines.append("")
    for r in res["rows"]:
        lines.append(f"- N={r['n']}: replayci {r['replayci_verdicts']}, exit "
                     f"{'/'.join(map(str, r['replayci']['rc']))}")
        for a, p in r["promptfoo"].items():
            lines.append(f"  - promptfoo ({a}): {p['verdicts']}, exit {'/'.join(map(str, p['rc']))} "
                         f"({PROMPTFOO_EXIT_FAILURES}: some tests failed, here the {r['negatives']} "
                         f"negative cases, by design)")
            if p.get("stderr_tail"):
                lines.append(f"    - stderr (tail): {p['stderr_tail'].strip()[-500:]!r}")
        if r["replayci"].get("stderr_tail"):
            lines.append(f"  - replayci stderr (tail): {r['replayci']['stderr_tail'].strip()[-500:]!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
