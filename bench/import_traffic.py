#!/usr/bin/env python3
"""Time `replayci import` of a folder of recordings against a floor that only parses its files.

    python bench/import_traffic.py [DIR] [--repeat 3] [--json]

DIR defaults to shared/data/traffic-dev in the nearest folder above the repository holding one. Each round, in this order:

  floor    read every cassette and HAR file and parse it (YAML with libyaml's safe loader, JSON
           with the json module): what any reader of these files pays, bodies left as text;
  import   `replayci.capture.importing.import_sources` of DIR into a new temporary pack: read,
           decode, classify, convert, normalize, group sessions, write fixtures and contracts.

Quoted: the median wall time and CPU time (user + system of this process) of each over --repeat
rounds, after one untimed warm-up round (page cache, .pyc files), and the ratio import / floor.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def floor(folder: Path) -> None:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            yaml.load(path.read_bytes(), Loader=loader)  # noqa: S506 - the safe loader
        elif path.suffix in (".har", ".json") and path.name != "MANIFEST.json":
            json.loads(path.read_bytes())


def do_import(folder: Path) -> None:
    from replayci.capture.importing import import_sources

    out = Path(tempfile.mkdtemp(prefix="replayci-import-bench-"))
    try:
        import_sources([str(folder)], str(out / "pack"), log=lambda line: None)
    finally:
        shutil.rmtree(out)


def timed(step, folder: Path) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    step(folder)
    return time.perf_counter() - wall, _cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = next((p / "shared" / "data" / "traffic-dev" for p in ROOT.parents
                    if (p / "shared" / "data" / "traffic-dev").is_dir()), ROOT.parent / "shared" / "data" / "traffic-dev")
    parser.add_argument("folder", nargs="?", default=str(default))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"no such folder: {folder}", file=sys.stderr)
        return 2
    steps = {"floor": floor, "import": do_import}
    for step in steps.values():
        step(folder)  # warm-up
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
    for _ in range(args.repeat):
        for name, step in steps.items():
            times[name].append(timed(step, folder))
    out = {name: {"wall_s": round(statistics.median(t[0] for t in rows), 3),
                  "cpu_s": round(statistics.median(t[1] for t in rows), 3)} for name, rows in times.items()}
    out["ratio_wall"] = round(out["import"]["wall_s"] / out["floor"]["wall_s"], 2)
    out["ratio_cpu"] = round(out["import"]["cpu_s"] / out["floor"]["cpu_s"], 2)
    out["files"] = sum(1 for p in folder.rglob("*") if p.is_file())
    if args.json:
        print(json.dumps(out))
    else:
        for name in steps:
            print(f"{name:7} {out[name]['wall_s']:7.3f} s wall  {out[name]['cpu_s']:7.3f} s cpu")
        print(f"import / floor: {out['ratio_wall']}x wall, {out['ratio_cpu']}x cpu ({out['files']} files, "
              f"{os.cpu_count()} cpus)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
