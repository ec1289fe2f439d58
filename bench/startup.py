#!/usr/bin/env python3
"""Time replayci's start-up: the interpreter floor, `--version`, and a small recorded run.

    python bench/startup.py [--repeat 9] [--n 10] [--replayci EXE] [--baseline CHECKOUT] [--json]

Commands, each a whole process started with subprocess (stdout to /dev/null):

  floor          `python -c pass`: the interpreter and its site-packages (.pth files) alone;
  floor_no_site  `python -S -c pass`: the interpreter without site (what the .pth files and
                 site itself cost is the difference);
  version        `replayci --version` (the console script next to sys.executable);
  version_m      `python -m replayci --version`;
  run            `replayci --provider recorded` in bench/out/project-N (bench/gen_pack.py N,
                 generated when missing or stale; N=10 by default);
  run_report     the same with `--report-json FILE` (a temporary file, removed after each run).

Method: one untimed warm-up run of each (page cache, .pyc files), then --repeat rounds running
each once in the order above (A B C A B C ...), so a change of load hits all alike; quoted is
the median wall time of each, with its lowest and highest. With --baseline DIR (another
checkout, e.g. `git archive` of the previous release unpacked), each replayci command also
runs with DIR first on PYTHONPATH, in the same rounds, so before and after meet the same load.
A crash (exit 2 or more, or a traceback) is reported with its stderr's tail and makes this
script exit 1.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recorded import bench_env, crashed, ensure_project, find_replayci, paired  # noqa: E402


def timed(argv: list[str], cwd: Path, env: dict) -> dict:
    """Run one command; its wall time, exit code and stderr's tail."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "rc": p.returncode, "stderr_tail": p.stderr[-2000:].decode("utf-8", "replace")}


def commands(exe: Path, report: Path, env: dict, baseline: Path | None) -> dict[str, tuple[list[str], dict]]:
    """The timed commands (argv, environment), in the order each round runs them; with
    *baseline*, each replayci command a second time with that checkout first on PYTHONPATH."""
    py = sys.executable
    run = [str(exe), "--provider", "recorded"]
    ours = {
        "version": [str(exe), "--version"],
        "version_m": [py, "-m", "replayci", "--version"],
        "run": run,
        "run_report": [*run, "--report-json", str(report)],
    }
    cmds = {"floor": ([py, "-c", "pass"], env), "floor_no_site": ([py, "-S", "-c", "pass"], env)}
    for name, argv in ours.items():
        if baseline is not None:
            path = os.pathsep.join(filter(None, (str(baseline), env.get("PYTHONPATH"))))
            cmds[f"{name} (baseline)"] = (argv, {**env, "PYTHONPATH": path})
        cmds[name] = (argv, env)
    return cmds


def rounds(cmds: dict[str, tuple[list[str], dict]], cwd: Path, repeat: int, report: Path) -> dict[str, list[dict]]:
    """One untimed warm-up run of each command, then *repeat* rounds running each once, in order."""
    runs: dict[str, list[dict]] = {name: [] for name in cmds}
    for i in range(repeat + 1):
        for name, (argv, env) in cmds.items():
            r = timed(argv, cwd, env)
            report.unlink(missing_ok=True)
            if i:
                runs[name].append(r)
    return runs


def summary(rs: list[dict], base: list[dict] | None) -> dict:
    """Median, lowest and highest wall time in ms, exit codes, the first crash's stderr, and
    against *base* the median over rounds of this run's time / the baseline's."""
    walls = [r["wall_s"] for r in rs]
    out = {"median_ms": 1e3 * statistics.median(walls), "min_ms": 1e3 * min(walls), "max_ms": 1e3 * max(walls),
           "rc": sorted({r["rc"] for r in rs}),
           "crash": next((r["stderr_tail"] for r in rs if crashed(r)), None)}
    if base:
        out["vs_baseline"] = paired(rs, base)["median"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure, print the medians (a table, or JSON with --json); 1 when a run crashed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9, help="rounds after the warm-up (default 9)")
    ap.add_argument("--n", type=int, default=10, help="cases in the recorded project (default 10)")
    ap.add_argument("--replayci", help="replayci executable (default: next to sys.executable)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out", help="where the project is generated")
    ap.add_argument("--baseline", type=Path,
                    help="also time each replayci command with this checkout first on PYTHONPATH (before/after)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    project = ensure_project(args.n, args.out_dir)
    exe = find_replayci(args.replayci)
    with tempfile.TemporaryDirectory(prefix="replayci-startup-") as tmp:
        report = Path(tmp) / "report.json"
        runs = rounds(commands(exe, report, bench_env(), args.baseline), project, args.repeat, report)
    res = {name: summary(rs, runs.get(f"{name} (baseline)")) for name, rs in runs.items()}
    if args.json:
        print(json.dumps({"n": args.n, "repeat": args.repeat, "replayci": str(exe), "results": res}, indent=2))
    else:
        print(f"medians of {args.repeat} alternating rounds after a warm-up; N={args.n}; {exe}")
        print("| command | median ms | min–max ms | exit | / baseline (paired) |")
        print("|:---|---:|---:|:---|---:|")
        for name, r in res.items():
            vs = r.get("vs_baseline")
            print(f"| {name} | {r['median_ms']:.1f} | {r['min_ms']:.1f}–{r['max_ms']:.1f} | "
                  f"{'/'.join(map(str, r['rc']))} | {f'{vs:.2f}×' if vs else ''} |")
    failed = {name: r["crash"] for name, r in res.items() if r["crash"]}
    for name, tail in failed.items():
        print(f"{name} crashed: {tail.strip()[-500:]!r}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
