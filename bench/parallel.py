#!/usr/bin/env python3
"""What the second core gains: a recorded run in one process against the same run split in
two, with and without --report-json, alternated (one of each per round after a warm-up).

    python bench/parallel.py [--sizes 10000,100000] [--repeat 5] [--replayci EXE]

Projects come from bench/gen_pack.py (bench/out/project-N, as bench/recorded.py makes them).
`REPLAYCI_PROCESSES=1` keeps a run in one process; `=2` splits it. Quoted per size: the
median wall time and peak RSS (the larger process) of each, the median per-case time, and
the paired gain (one process / two, within a round).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import recorded  # noqa: E402


def measure(runner: recorded.Runner, exe: Path, project: Path, repeat: int, report: str) -> dict:
    """One size: alternate one process and two, each with and without a report."""
    cmds = {}
    for procs in (1, 2):
        base = ["env", f"REPLAYCI_PROCESSES={procs}", str(exe), "--provider", "recorded", "--no-color"]
        cmds[f"{procs}"] = base
        cmds[f"{procs}+report"] = [*base, "--report-json", report]
    runs = recorded.alternate(runner, cmds, project, repeat)
    out = {name: recorded.summarize(r) for name, r in runs.items()}
    for kind in ("", "+report"):
        out[f"gain{kind}"] = recorded.paired(runs[f"1{kind}"], runs[f"2{kind}"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--replayci", help="the replayci executable (default: beside this Python)")
    args = ap.parse_args(argv)
    exe = recorded.find_replayci(args.replayci)
    runner = recorded.Runner(use_gnu_time=recorded.have_gnu_time(), env=recorded.bench_env())
    report = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"replayci-parallel-{os.getpid()}.json")
    print("| cases | 1 process | 2 processes | gain | 1 process, report | 2 processes, report | gain | "
          "µs/case (2, report) | peak MB (1 / 2, report) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in args.sizes.split(",")):
        project = recorded.ensure_project(n, HERE / "out")
        res = measure(runner, exe, project, args.repeat, report)
        per_case = res["2+report"]["wall_s"] / n * 1e6
        print(f"| {n:,} | {res['1']['wall_s']:.2f} s | {res['2']['wall_s']:.2f} s | "
              f"{res['gain']['median']:.2f}× | {res['1+report']['wall_s']:.2f} s | "
              f"{res['2+report']['wall_s']:.2f} s | {res['gain+report']['median']:.2f}× | {per_case:.0f} | "
              f"{res['1+report']['rss_max_mb']:.0f} / {res['2+report']['rss_max_mb']:.0f} |", flush=True)
        bad = [name for name, r in res.items() if "rc" in r and r["stderr_tail"]]  # crashed: not a verdict
        if bad:
            print(f"  crashed: {bad}: {res[bad[0]]['stderr_tail'][-400:]}", file=sys.stderr)
    if os.path.exists(report):
        os.unlink(report)
    print(f"\nmedians of {args.repeat} alternating rounds; load average {os.getloadavg()}; "
          f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
