#!/usr/bin/env python3
"""How strong are the contracts `replayci import` writes from real traffic?

    python bench/import_strength.py [DIR] [--json]

DIR defaults to shared/data/traffic-dev in the nearest folder above the repository holding one.
In a temporary pack: import DIR (`replayci.capture.importing.import_sources`), run the pack
offline (every case must pass: a generated contract never fails its own recording), then mutate
every passing case (`replayci mutate`'s engine) and print the kill rate, killed/total, overall
and per mutation kind, with the time each step took. Exit 1 when the recorded run is not green.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _default_dir() -> Path | None:
    for parent in ROOT.parents:
        candidate = parent / "shared" / "data" / "traffic-dev"
        if candidate.is_dir():
            return candidate
    return None


def by_kind(report) -> dict[str, list[int]]:
    """Mutation kind -> [killed, total] over every counted mutant of *report*."""
    kinds: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for contract in report.contracts:
        for outcome in contract.counted:
            entry = kinds[outcome.mutant.kind]
            entry[0] += outcome.status == "killed"
            entry[1] += 1
    return dict(sorted(kinds.items()))


def measure(folder: Path) -> dict:
    from replayci import config
    from replayci.api import run as run_packs
    from replayci.capture.importing import import_sources
    from replayci.tools import mutate as mutation

    with tempfile.TemporaryDirectory() as tmp:
        pack = str(Path(tmp) / "pack")
        started = time.perf_counter()
        imported = import_sources([str(folder)], pack, log=lambda line: None)
        import_s = time.perf_counter() - started
        started = time.perf_counter()
        run = run_packs([pack], provider="recorded")
        run_s = time.perf_counter() - started
        statuses = collections.Counter(case.status for case in run.cases)
        started = time.perf_counter()
        report = mutation.mutate(config.resolve({"packs": [pack], "filters": []}))
        mutate_s = time.perf_counter() - started
    return {"fixtures": sum(len(f.placed) for f in imported.files), "cases": len(run.cases),
            "statuses": dict(statuses), "green": run.ok and set(statuses) == {"pass"},
            "mutants": report.mutants, "killed": report.killed, "kinds": by_kind(report),
            "scenarios_not_mutated": len(report.not_mutated),
            "seconds": {"import": round(import_s, 2), "run": round(run_s, 2), "mutate": round(mutate_s, 2)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", type=Path, default=_default_dir())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.dir is None or not args.dir.is_dir():
        parser.error("no traffic folder: pass DIR")
    out = measure(args.dir)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0 if out["green"] else 1
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(out["statuses"].items()))
    print(f"imported {out['fixtures']} exchanges; recorded run: {out['cases']} cases ({statuses})")
    rate = out["killed"] / out["mutants"] if out["mutants"] else 0.0
    print(f"mutate: {out['killed']}/{out['mutants']} mutants killed, kill rate {rate:.1%}"
          f" ({out['scenarios_not_mutated']} multi-step scenarios not mutated)")
    for kind, (killed, total) in out["kinds"].items():
        print(f"  {kind:<24} {killed:>5}/{total:<5} {killed / total:.1%}")
    secs = out["seconds"]
    print(f"time: import {secs['import']} s, run {secs['run']} s, mutate {secs['mutate']} s")
    return 0 if out["green"] else 1


if __name__ == "__main__":
    sys.exit(main())
