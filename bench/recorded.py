#!/usr/bin/env python3
"""Benchmark `replayci --provider recorded` against the floor of parsing the same files.

    python bench/recorded.py [--sizes 100,1000,10000] [--repeat 5] [--small 10] [--vary]
                             [--json] [--save FILE] [--replayci EXE] [--before EXE]
                             [--no-gnu-time]

For each N (plus a small run, N=10 by default) it generates bench/out/project-N with
bench/gen_pack.py (cached: regenerated only when missing or made by another version of the
generator); with --vary also bench/out/project-N-vary (gen_pack.py --vary: every fixture
has its own tools array, half the fixtures pretty-printed, half compact; same cases and
verdicts). For each project it measures whole-process wall time and peak RSS of

  floor      `python bench/floor.py DIR`: one process that only parses the same YAML
             (CSafeLoader) and JSON (json.load) files;
  replayci   `replayci --provider recorded`, run in the project directory, stdout to
             /dev/null (exit 0 or 1 is a normal verdict; anything else is reported with
             stderr's tail);
  +report    the same with `--report-json FILE` (a temporary file, deleted after each run);
  before     with --before EXE, another build of replayci (say the previous release,
             installed in a virtual environment of its own), with and without a report, in
             the same rounds: the paired ratio now / before is quoted too.

Method: one untimed warm-up run of each (page cache; it also writes the .pyc files), then
--repeat rounds of floor, replayci, +report, one after the other (A B C A B C ...), so a
change of load on the machine hits all three alike. Quoted: the median of each, and the
paired ratio: the median over rounds of replayci/floor (and +report/floor) taken within a
round, with the lowest and highest such ratio. The last +report run's JSON report gives
the case statuses, so a fast run that evaluated nothing is visible. `replayci --version`
and `python -c pass` are timed the same way (warm-up, then alternating rounds, medians).

Timing: GNU time (`/usr/bin/time -f "%e %M"`) for peak RSS, with the wall clock taken by
perf_counter around it (%e has 10 ms resolution). Without GNU time (or with --no-gnu-time),
each command runs under a small Python helper that reports
`resource.getrusage(RUSAGE_CHILDREN)` for its one child (so peak RSS is per command, not a
maximum over the whole benchmark) and its wall clock; it reads ~1 MB higher than GNU time
for tiny processes, because a forked child's RSS before exec counts towards its maximum.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_pack  # noqa: E402

GNU_TIME = "/usr/bin/time"

_HELPER = r"""
import resource, subprocess, sys, time
out = sys.argv[1]
t0 = time.perf_counter()
rc = subprocess.call(sys.argv[2:])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
kb = ru.ru_maxrss
if sys.platform == "darwin":
    kb //= 1024  # bytes there
with open(out, "w") as f:
    f.write(f"{wall:.6f} {kb} {ru.ru_utime:.6f} {ru.ru_stime:.6f}\n")
sys.exit(rc if rc >= 0 else 128 - rc)
"""


def have_gnu_time() -> bool:
    if not os.access(GNU_TIME, os.X_OK):
        return False
    try:
        p = subprocess.run([GNU_TIME, "-f", "%e %M %U %S", "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0 and len(p.stderr.split()) == 4


class Runner:
    """Runs one command, returns wall seconds, CPU seconds (user + system, of the command and
    every process it started), peak RSS (KB), exit code and stderr's tail."""

    def __init__(self, *, use_gnu_time: bool, env: dict):
        self.gnu = use_gnu_time
        self.env = env
        self.name = "GNU time" if use_gnu_time else "getrusage(RUSAGE_CHILDREN) helper"

    def run(self, cmd: list[str], cwd: Path) -> dict:
        with tempfile.TemporaryDirectory(prefix="replayci-bench-") as tmp:
            stats, errf = os.path.join(tmp, "stats"), os.path.join(tmp, "stderr")
            if self.gnu:
                full = [GNU_TIME, "-f", "%e %M %U %S", "-o", stats, *cmd]
            else:
                full = [sys.executable, "-c", _HELPER, stats, *cmd]
            with open(errf, "wb") as err:
                t0 = time.perf_counter()
                rc = subprocess.call(full, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=err)
                outer = time.perf_counter() - t0
            with open(stats) as f:
                # GNU time writes "Command exited with non-zero status N" before the format line.
                e, m, user, system = f.read().strip().splitlines()[-1].split()
            with open(errf, "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace")
        wall = outer if self.gnu else float(e)
        return {"wall_s": wall, "cpu_s": float(user) + float(system), "time_e": float(e), "rss_kb": int(m),
                "rc": rc, "stderr_tail": tail}


def crashed(run: dict) -> bool:
    """Not a verdict: an exit status other than 0/1, or a Python traceback (which exits 1)."""
    return run["rc"] not in (0, 1) or "Traceback (most recent call last)" in (run["stderr_tail"] or "")


def summarize(runs: list[dict]) -> dict:
    """Median wall time and peak RSS of a list of Runner.run results."""
    return {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "wall_all_s": [round(r["wall_s"], 4) for r in runs],
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "cpu_range_s": [min(r["cpu_s"] for r in runs), max(r["cpu_s"] for r in runs)],
        "rss_mb": statistics.median(r["rss_kb"] for r in runs) / 1024,
        "rss_max_mb": max(r["rss_kb"] for r in runs) / 1024,
        "rc": sorted({r["rc"] for r in runs}),
        "stderr_tail": next((r["stderr_tail"] for r in runs if crashed(r)), None),
        "stderr_last": runs[-1]["stderr_tail"],
    }


def paired(runs: list[dict], base: list[dict], key: str = "wall_s") -> dict:
    """Median, min and max over rounds of runs[i] / base[i] (wall time, or *key*: cpu_s)."""
    ratios = [r[key] / b[key] for r, b in zip(runs, base, strict=True) if b[key] > 0]
    if not ratios:
        return {}
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "all": [round(x, 3) for x in ratios]}


def alternate(runner: Runner, cmds: dict[str, list[str]], cwd: Path, repeat: int, *,
              after: dict | None = None) -> dict[str, list[dict]]:
    """One untimed warm-up run of each command, then *repeat* rounds running each once, in
    order. after[name]() is called after each run of *name* (warm-up included)."""
    after = after or {}
    for name, cmd in cmds.items():
        runner.run(cmd, cwd)
        if name in after:
            after[name]()
    runs: dict[str, list[dict]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            runs[name].append(runner.run(cmd, cwd))
            if name in after:
                after[name]()
    return runs


def instructions(cmd: list[str], cwd: Path, env: dict) -> int | None:
    """Instructions executed by *cmd* and every process it starts or forks (valgrind's
    callgrind, each process counted in a file of its own, added up): the same whatever the
    machine's load, unlike its time. None without valgrind or when the command crashes."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory(prefix="replayci-bench-cg-") as tmp:
        rc = subprocess.call(["valgrind", "--tool=callgrind", "--trace-children=yes",
                              f"--callgrind-out-file={tmp}/%p.out", *cmd], cwd=cwd, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if rc not in (0, 1):
            return None
        total = 0
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith(("summary:", "totals:")):
                        total += int(line.split()[1])
                        break
        return total


def count_instructions(cmds: dict[str, list[str]], cwd: Path, env: dict) -> dict[str, int | None]:
    """instructions() of each command, once (after the timed rounds: .pyc files written)."""
    with tempfile.TemporaryDirectory(prefix="replayci-bench-cg-report-") as tmp:
        return {name: instructions([a if a != "REPORT" else os.path.join(tmp, f"{name}.json") for a in cmd],
                                   cwd, env) for name, cmd in cmds.items()}


def find_replayci(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    here = Path(sys.executable).parent
    for name in ("replayci", "replayci.exe"):
        if (here / name).exists():
            return here / name
    found = shutil.which("replayci")
    return Path(found) if found else here / "replayci"


def probe(exe: Path, env: dict) -> tuple[bool, str]:
    """(runnable, version or reason)."""
    if not exe.exists():
        return False, f"{exe} does not exist"
    try:
        p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{exe} --version: {exc}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return False, f"`{exe.name} --version` exited {p.returncode}: {last}"
    return True, p.stdout.strip()


def verify(report_text: str | None, stderr_tail: str = "") -> dict:
    """What did replayci conclude about the cases, from its JSON report?"""
    out: dict = {}
    try:
        report = json.loads(report_text or "")
        cases = report.get("cases") or []
        out["cases"] = len(cases)
        out["statuses"] = dict(Counter(c.get("status") for c in cases))
        bad = [c for c in cases if c.get("status") != "pass"]
        out["not_passing"] = [
            {k: c.get(k) for k in ("contract", "case", "status", "classification", "reason")}
            for c in bad[:5]
        ]
    except (ValueError, AttributeError) as exc:
        out["error"] = f"--report-json wrote no JSON report ({exc.__class__.__name__}); " \
                       f"stderr: {stderr_tail.strip()[-300:]}"
    return out


def ensure_project(n: int, out_dir: Path, vary: bool = False) -> Path:
    project = out_dir / f"project-{n}{'-vary' if vary else ''}"
    if not gen_pack.is_current(project, n, vary=vary):
        print(f"generating {project} ...", file=sys.stderr)
        gen_pack.generate(n, project, quiet=True, vary=vary)
    return project


def fixture_bytes(project: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(project / "packs" / "bench" / "golden"):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files if f.endswith(".json"))
    return total


def bench_env() -> dict:
    """The user's environment minus what would change a recorded run or write elsewhere.

    PYTHONDONTWRITEBYTECODE is dropped too: an installed package has its .pyc files (pip
    writes them), and without them every run would compile replayci's modules again (about
    0.1 s) -- a cost of the machine's settings, not of the tool. The warm-up run writes them.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REPLAYCI_") and k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY",
                                                          "PYTHONDONTWRITEBYTECODE")}
    env["NO_COLOR"] = "1"
    return env


def measure_project(runner: Runner, exe: Path | None, project: Path, repeat: int,
                    before: Path | None = None) -> dict:
    """Floor, replayci and replayci --report-json in alternating rounds (see the docstring);
    with *before*, another build of replayci (an earlier release) in the same rounds."""
    py = sys.executable
    cmds = {"floor": [py, str(HERE / "floor.py"), str(project)]}
    last_report: dict = {}
    with tempfile.TemporaryDirectory(prefix="replayci-bench-report-") as tmp:
        report = Path(tmp) / "report.json"

        def keep_report() -> None:
            try:
                last_report["text"] = report.read_text(encoding="utf-8")
                report.unlink()
            except OSError:
                last_report["text"] = None

        if exe is not None:
            cmds["replayci"] = [str(exe), "--provider", "recorded"]
            cmds["replayci_report"] = [str(exe), "--provider", "recorded", "--report-json", str(report)]
        if exe is not None and before is not None:
            cmds["before"] = [str(before), "--provider", "recorded"]
            cmds["before_report"] = [str(before), "--provider", "recorded", "--report-json",
                                     str(Path(tmp) / "before.json")]
        runs = alternate(runner, cmds, project, repeat, after={"replayci_report": keep_report})
    row: dict = {name: summarize(rs) for name, rs in runs.items()}
    if exe is not None:
        row["ratio"] = paired(runs["replayci"], runs["floor"])
        row["ratio_report"] = paired(runs["replayci_report"], runs["floor"])
        row["cpu_ratio"] = paired(runs["replayci"], runs["floor"], "cpu_s")
        row["cpu_ratio_report"] = paired(runs["replayci_report"], runs["floor"], "cpu_s")
        row["verify"] = verify(last_report.get("text"), row["replayci_report"]["stderr_last"] or "")
    if "before" in runs:
        row["vs_before"] = paired(runs["replayci"], runs["before"])
        row["vs_before_report"] = paired(runs["replayci_report"], runs["before_report"])
        row["cpu_vs_before_report"] = paired(runs["replayci_report"], runs["before_report"], "cpu_s")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Time replayci --provider recorded against the parse floor.")
    ap.add_argument("--sizes", default="100,1000,10000", help="comma-separated case counts")
    ap.add_argument("--repeat", type=int, default=5,
                    help="alternating rounds per project after the warm-up (default 5; medians are quoted)")
    ap.add_argument("--small", type=int, default=10, help="also run this small N (0: skip)")
    ap.add_argument("--vary", action="store_true",
                    help="also measure packs whose fixtures vary (gen_pack.py --vary) at each size")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--replayci", help="replayci executable (default: next to sys.executable)")
    ap.add_argument("--before", type=Path,
                    help="another replayci executable (an earlier release) timed in the same rounds")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out", help="where projects are generated")
    ap.add_argument("--no-gnu-time", action="store_true", help="use the getrusage fallback")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count the instructions of the floor and of each run with --report-json, once "
                         "each, under valgrind's callgrind (every process added up; minutes per 10,000 cases)")
    ap.add_argument("--save", type=Path, help="also write the JSON results to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | ({args.small} if args.small else set()))
    env = bench_env()
    runner = Runner(use_gnu_time=not args.no_gnu_time and have_gnu_time(), env=env)
    exe = find_replayci(args.replayci)
    runnable, version = probe(exe, env)
    py = sys.executable

    res: dict = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_avg": _loadavg(), "timer": runner.name,
                    "repeat": args.repeat,
                    "method": "warm-up run of each, then alternating rounds; medians; "
                              "paired ratio = median over rounds of replayci/floor"},
        "replayci": {"executable": str(exe), "runnable": runnable,
                     ("version" if runnable else "not_runnable_reason"): version},
        "rows": [],
    }
    startup = {"python_startup": [py, "-c", "pass"]}
    if runnable:
        startup["replayci_version_run"] = [str(exe), "--version"]
    else:
        print(f"replayci is not runnable ({version}); measuring the floor only", file=sys.stderr)
    for name, runs in alternate(runner, startup, HERE, args.repeat).items():
        res[name] = summarize(runs)

    for vary in (False, True) if args.vary else (False,):
        for n in sizes:
            project = ensure_project(n, args.out_dir, vary)
            print(f"N={n}{' varied' if vary else ''}: timing ...", file=sys.stderr)
            row = {"n": n, "vary": vary, "project": str(project),
                   "fixture_mb": fixture_bytes(project) / 1e6}
            row.update(measure_project(runner, exe if runnable else None, project, args.repeat, args.before))
            if args.callgrind:
                print(f"N={n}: counting instructions ...", file=sys.stderr)
                cg = {"floor": [py, str(HERE / "floor.py"), str(project)]}
                for name, build in (("replayci_report", exe if runnable else None), ("before_report", args.before)):
                    if build is not None:
                        cg[name] = [str(build), "--provider", "recorded", "--report-json", "REPORT"]
                row["instructions"] = count_instructions(cg, project, env)
            res["rows"].append(row)
    res["machine"]["load_avg_after"] = _loadavg()

    if args.save:
        args.save.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(markdown(res))
    # Exit 1 when a measurement is not one: a crash, or a run that wrote no report.
    bad = [r for r in res["rows"]
           if any(r.get(k, {}).get("stderr_tail") for k in ("floor", "replayci", "replayci_report"))
           or "error" in r.get("verify", {})]
    return 1 if bad else 0


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _f(x: float | None, nd: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def _mega(n: int | None) -> str:
    return "n/a" if not n else f"{n / 1e6:,.0f} M"


def _ratio(r: dict | None) -> str:
    if not r:
        return "n/a"
    return f"{r['median']:.2f}× ({r['min']:.2f}–{r['max']:.2f})"


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [
        f"replayci `--provider recorded` vs the parse floor — medians of {m['repeat']} alternating "
        f"rounds after a warm-up, {m['cpus']} CPUs, Python {m['python']}, timer: {m['timer']}, "
        f"load average {m.get('load_avg')} → {m.get('load_avg_after')}",
        "",
        "| N | fixtures | floor s | replayci s | replayci/floor (paired) | +report-json s | "
        "+report/floor (paired) | floor MB | replayci MB | +report MB | exit |",
        "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        rc, rr, fl = r.get("replayci"), r.get("replayci_report"), r["floor"]
        mb = r["fixture_mb"]
        kind = ("varied" if r.get("vary") else "same tools") + (f", {mb:.1f} MB" if mb >= 1 else f", {mb * 1e3:.0f} kB")
        lines.append(
            f"| {r['n']} | {kind} | {_f(fl['wall_s'], 3)} | {_f(rc and rc['wall_s'], 3)} | "
            f"{_ratio(r.get('ratio'))} | {_f(rr and rr['wall_s'], 3)} | {_ratio(r.get('ratio_report'))} | "
            f"{_f(fl['rss_mb'], 1)} | {_f(rc and rc['rss_mb'], 1)} | {_f(rr and rr['rss_mb'], 1)} | "
            f"{'/'.join(map(str, sorted(set(rc['rc']) | set(rr['rc'])))) if rc else 'n/a'} |")
    before = [r for r in res["rows"] if "vs_before" in r]
    if before:
        lines += ["", "| N | fixtures | before s | now / before (paired) | before +report s | "
                  "now / before, +report (paired) |", "|---:|:---|---:|---:|---:|---:|"]
        for r in before:
            lines.append(f"| {r['n']} | {'varied' if r.get('vary') else 'same tools'} | "
                         f"{_f(r['before']['wall_s'], 3)} | {_ratio(r['vs_before'])} | "
                         f"{_f(r['before_report']['wall_s'], 3)} | {_ratio(r['vs_before_report'])} |")
    lines += ["", "CPU time (user + system, every process of the command; holds better than wall time on a "
              "loaded machine) and instructions (callgrind, every process added up; with --callgrind):", "",
              "| N | fixtures | floor CPU s | replayci CPU s | /floor (paired) | +report CPU s | "
              "+report/floor (paired) | +report / before (paired) | floor instr. | +report instr. | "
              "+report/floor instr. | before +report instr. |",
              "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        rc, rr, fl, ins = r.get("replayci") or {}, r.get("replayci_report") or {}, r["floor"], r.get("instructions") or {}
        fi, ri, bi = ins.get("floor"), ins.get("replayci_report"), ins.get("before_report")
        lines.append(
            f"| {r['n']} | {'varied' if r.get('vary') else 'same tools'} | {_f(fl['cpu_s'], 3)} | "
            f"{_f(rc.get('cpu_s'), 3)} | {_ratio(r.get('cpu_ratio'))} | {_f(rr.get('cpu_s'), 3)} | "
            f"{_ratio(r.get('cpu_ratio_report'))} | {_ratio(r.get('cpu_vs_before_report'))} | "
            f"{_mega(fi)} | {_mega(ri)} | {_f(ri / fi if ri and fi else None)}× | {_mega(bi)} |")
    lines.append("")
    ps = res["python_startup"]
    lines.append(f"- `python -c pass`: {ps['wall_s']:.3f} s, {ps['rss_mb']:.1f} MB")
    v = res.get("replayci_version_run")
    if v:
        lines.append(f"- `replayci --version` ({res['replayci']['version']}): {v['wall_s']:.3f} s, "
                     f"{v['rss_mb']:.1f} MB, exit {'/'.join(map(str, v['rc']))}")
    else:
        lines.append(f"- replayci not runnable: {res['replayci'].get('not_runnable_reason')}")
    for r in res["rows"]:
        label = f"N={r['n']}{' varied' if r.get('vary') else ''}"
        ver = r.get("verify")
        if ver:
            what = ver.get("error") or f"{ver['cases']} cases, {ver['statuses']}"
            lines.append(f"- {label} report: {what}")
            for c in ver.get("not_passing", []):
                lines.append(f"    - {c}")
        for key in ("replayci", "replayci_report"):
            x = r.get(key)
            if x and x.get("stderr_tail"):
                lines.append(f"- {label} {key} stderr (tail): {x['stderr_tail'].strip()[-500:]!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
