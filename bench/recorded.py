#!/usr/bin/env python3
"""Benchmark `replayci --provider recorded` against the floor of parsing the same files.

    python bench/recorded.py [--sizes 100,1000,10000] [--repeat 3] [--small 10] [--json]
                             [--save FILE] [--replayci EXE] [--no-gnu-time]

For each N (plus a small run, N=10 by default) it generates bench/out/project-N with
bench/gen_pack.py (cached: regenerated only when missing or made by another version of the
generator), then measures whole-process wall time and peak RSS of

  (a) `replayci --provider recorded`, run in the project directory, stdout to /dev/null
      (exit 0 or 1 is a normal verdict; anything else is reported with stderr's tail), and
  (b) the floor: `python bench/floor.py DIR`, one process that only parses the same YAML
      (CSafeLoader) and JSON (json.load) files,

best of --repeat runs each, after one untimed warm-up run of each (page cache, .pyc files).
It also times `replayci --version` and `python -c pass`, and runs replayci once more with
`--json` to report the case statuses, so a fast run that evaluated nothing is visible.

Timing: GNU time (`/usr/bin/time -f "%e %M"`) for peak RSS, with the wall clock taken by
perf_counter around it (%e has 10 ms resolution). Without GNU time, each command runs under
a small Python helper that reports `resource.getrusage(RUSAGE_CHILDREN)` for its one child
(so peak RSS is per command, not a maximum over the whole benchmark) and its wall clock;
it reads ~1 MB higher than GNU time for tiny processes, because a forked child's RSS before
exec counts towards its maximum.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
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
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
if sys.platform == "darwin":
    kb //= 1024  # bytes there
with open(out, "w") as f:
    f.write(f"{wall:.6f} {kb}\n")
sys.exit(rc if rc >= 0 else 128 - rc)
"""


def have_gnu_time() -> bool:
    if not os.access(GNU_TIME, os.X_OK):
        return False
    try:
        p = subprocess.run([GNU_TIME, "-f", "%e %M", "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0 and len(p.stderr.split()) == 2


class Runner:
    """Runs one command, returns wall seconds, peak RSS (KB), exit code and stderr's tail."""

    def __init__(self, *, use_gnu_time: bool, env: dict):
        self.gnu = use_gnu_time
        self.env = env
        self.name = "GNU time" if use_gnu_time else "getrusage(RUSAGE_CHILDREN) helper"

    def run(self, cmd: list[str], cwd: Path) -> dict:
        with tempfile.TemporaryDirectory(prefix="replayci-bench-") as tmp:
            stats, errf = os.path.join(tmp, "stats"), os.path.join(tmp, "stderr")
            if self.gnu:
                full = [GNU_TIME, "-f", "%e %M", "-o", stats, *cmd]
            else:
                full = [sys.executable, "-c", _HELPER, stats, *cmd]
            with open(errf, "wb") as err:
                t0 = time.perf_counter()
                rc = subprocess.call(full, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=err)
                outer = time.perf_counter() - t0
            with open(stats) as f:
                # GNU time writes "Command exited with non-zero status N" before the format line.
                e, m = f.read().strip().splitlines()[-1].split()
            with open(errf, "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace")
        wall = outer if self.gnu else float(e)
        return {"wall_s": wall, "time_e": float(e), "rss_kb": int(m), "rc": rc, "stderr_tail": tail}


def best_of(runner: Runner, cmd: list[str], cwd: Path, repeat: int, *, warmup: bool = True) -> dict:
    if warmup:
        runner.run(cmd, cwd)
    runs = [runner.run(cmd, cwd) for _ in range(repeat)]
    return {
        "wall_s": min(r["wall_s"] for r in runs),
        "wall_all_s": [round(r["wall_s"], 4) for r in runs],
        "rss_mb": min(r["rss_kb"] for r in runs) / 1024,
        "rc": sorted({r["rc"] for r in runs}),
        "stderr_tail": next((r["stderr_tail"] for r in runs if r["rc"] not in (0, 1)), None),
    }


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


def verify(exe: Path, project: Path, env: dict) -> dict:
    """One untimed `--json` run: what did replayci conclude about the cases?"""
    p = subprocess.run([str(exe), "--provider", "recorded", "--json"], cwd=project, env=env,
                       capture_output=True, text=True, timeout=3600)
    out = {"rc": p.returncode}
    try:
        report = json.loads(p.stdout)
        cases = report.get("cases") or []
        out["cases"] = len(cases)
        out["statuses"] = dict(Counter(c.get("status") for c in cases))
        bad = [c for c in cases if c.get("status") != "pass"]
        out["not_passing"] = [
            {k: c.get(k) for k in ("contract", "case", "status", "classification", "reason")}
            for c in bad[:5]
        ]
    except (ValueError, AttributeError) as exc:
        out["error"] = f"--json output is not a JSON report ({exc.__class__.__name__}); " \
                       f"stderr: {p.stderr.strip()[-300:]}"
    return out


def ensure_project(n: int, out_dir: Path) -> Path:
    project = out_dir / f"project-{n}"
    if not gen_pack.is_current(project, n):
        print(f"generating {project} ...", file=sys.stderr)
        gen_pack.generate(n, project, quiet=True)
    return project


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Time replayci --provider recorded against the parse floor.")
    ap.add_argument("--sizes", default="100,1000,10000", help="comma-separated case counts")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (best is kept)")
    ap.add_argument("--small", type=int, default=10, help="also run this small N (0: skip)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--replayci", help="replayci executable (default: next to sys.executable)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out", help="where projects are generated")
    ap.add_argument("--no-gnu-time", action="store_true", help="use the getrusage fallback")
    ap.add_argument("--save", type=Path, help="also write the JSON results to this file")
    args = ap.parse_args(argv)

    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | ({args.small} if args.small else set()))
    env = bench_env()
    runner = Runner(use_gnu_time=not args.no_gnu_time and have_gnu_time(), env=env)
    exe = find_replayci(args.replayci)
    runnable, version = probe(exe, env)
    py = sys.executable
    floor = str(HERE / "floor.py")

    res: dict = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "timer": runner.name, "repeat": args.repeat},
        "replayci": {"executable": str(exe), "runnable": runnable,
                     ("version" if runnable else "not_runnable_reason"): version},
        "python_startup": best_of(runner, [py, "-c", "pass"], HERE, args.repeat),
        "rows": [],
    }
    if runnable:
        res["replayci_version_run"] = best_of(runner, [str(exe), "--version"], HERE, args.repeat)
    else:
        print(f"replayci is not runnable ({version}); measuring the floor only", file=sys.stderr)

    for n in sizes:
        project = ensure_project(n, args.out_dir)
        print(f"N={n}: timing ...", file=sys.stderr)
        row: dict = {"n": n, "project": str(project),
                     "floor": best_of(runner, [py, floor, str(project)], project, args.repeat)}
        if runnable:
            row["replayci"] = best_of(runner, [str(exe), "--provider", "recorded"], project, args.repeat)
            row["ratio"] = row["replayci"]["wall_s"] / row["floor"]["wall_s"]
            row["verify"] = verify(exe, project, env)
        res["rows"].append(row)

    if args.save:
        args.save.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(markdown(res))
    return 0


def _f(x: float | None, nd: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [
        f"replayci `--provider recorded` vs the parse floor — best of {m['repeat']}, "
        f"{m['cpus']} CPUs, Python {m['python']}, timer: {m['timer']}",
        "",
        "| N | replayci wall s | floor wall s | ratio | replayci peak RSS MB | floor peak RSS MB | replayci exit |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        rc = r.get("replayci")
        lines.append(
            f"| {r['n']} | {_f(rc and rc['wall_s'], 3)} | {_f(r['floor']['wall_s'], 3)} | "
            f"{_f(r.get('ratio'), 2)}{'×' if r.get('ratio') else ''} | {_f(rc and rc['rss_mb'], 1)} | "
            f"{_f(r['floor']['rss_mb'], 1)} | {'/'.join(map(str, rc['rc'])) if rc else 'n/a'} |")
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
        ver = r.get("verify")
        if ver:
            what = ver.get("error") or f"{ver['cases']} cases, {ver['statuses']}"
            lines.append(f"- N={r['n']} `--json` run: exit {ver['rc']}, {what}")
            for c in ver.get("not_passing", []):
                lines.append(f"    - {c}")
        rc = r.get("replayci")
        if rc and rc.get("stderr_tail"):
            lines.append(f"- N={r['n']} replayci stderr (tail): {rc['stderr_tail'].strip()[-500:]!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
