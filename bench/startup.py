#!/usr/bin/env python3
"""Time replayci's start-up: the interpreter floor, `--version`, and a small recorded run.

    python bench/startup.py [--repeat 9] [--n 10] [--replayci EXE] [--json]

Commands, each a whole process started with subprocess (stdout to /dev/null):

  floor          `python -c pass`: the interpreter and its site-packages (.pth files) alone;
  version        `replayci --version` (the console script next to sys.executable);
  version_m      `python -m replayci --version`;
  run            `replayci --provider recorded` in bench/out/project-N (bench/gen_pack.py N,
                 generated when missing or stale; N=10 by default);
  run_report     the same with `--report-json FILE` (a temporary file, removed after each run).

Method: one untimed warm-up run of each (page cache, .pyc files), then --repeat rounds running
each once in the order above (A B C A B C ...), so a change of load hits all alike; quoted is
the median wall time of each, with its lowest and highest. Exit 2 or more from any run is
reported with its stderr's tail and makes this script exit 1.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recorded import alternate, bench_env, ensure_project, find_replayci  # noqa: E402


class WallRunner:
    """Runs one command and returns its wall time, exit code and stderr's tail."""

    def __init__(self, env: dict):
        self.env = env

    def run(self, cmd: list[str], cwd: Path) -> dict:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        return {"wall_s": wall, "rc": p.returncode,
                "stderr_tail": p.stderr[-2000:].decode("utf-8", "replace")}


def commands(exe: Path, report: Path) -> dict[str, list[str]]:
    """The timed commands, in the order each round runs them."""
    py = sys.executable
    run = [str(exe), "--provider", "recorded"]
    return {
        "floor": [py, "-c", "pass"],
        "version": [str(exe), "--version"],
        "version_m": [py, "-m", "replayci", "--version"],
        "run": run,
        "run_report": [*run, "--report-json", str(report)],
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, print the medians (a table, or JSON with --json); 1 when a run crashed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9, help="rounds after the warm-up (default 9)")
    ap.add_argument("--n", type=int, default=10, help="cases in the recorded project (default 10)")
    ap.add_argument("--replayci", help="replayci executable (default: next to sys.executable)")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out", help="where the project is generated")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    project = ensure_project(args.n, args.out_dir)
    exe = find_replayci(args.replayci)
    with tempfile.TemporaryDirectory(prefix="replayci-startup-") as tmp:
        report = Path(tmp) / "report.json"
        runs = alternate(WallRunner(bench_env()), commands(exe, report), project, args.repeat,
                         after={"run_report": lambda: report.unlink(missing_ok=True)})
    res = {name: {"median_ms": 1e3 * statistics.median(r["wall_s"] for r in rs),
                  "min_ms": 1e3 * min(r["wall_s"] for r in rs),
                  "max_ms": 1e3 * max(r["wall_s"] for r in rs),
                  "rc": sorted({r["rc"] for r in rs}),
                  "crash": next((r["stderr_tail"] for r in rs if r["rc"] not in (0, 1)), None)}
           for name, rs in runs.items()}
    if args.json:
        print(json.dumps({"n": args.n, "repeat": args.repeat, "replayci": str(exe), "results": res}, indent=2))
    else:
        print(f"medians of {args.repeat} alternating rounds after a warm-up; N={args.n}; {exe}")
        print("| command | median ms | min–max ms | exit |")
        print("|:---|---:|---:|:---|")
        for name, r in res.items():
            print(f"| {name} | {r['median_ms']:.1f} | {r['min_ms']:.1f}–{r['max_ms']:.1f} | "
                  f"{'/'.join(map(str, r['rc']))} |")
    crashed = {name: r["crash"] for name, r in res.items() if r["crash"]}
    for name, tail in crashed.items():
        print(f"{name} crashed: {tail.strip()[-500:]!r}", file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
