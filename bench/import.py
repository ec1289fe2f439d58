#!/usr/bin/env python3
"""Benchmark `replayci import` of a folder of recordings, and the offline run of the pack it
writes, each against a floor that only reads and parses the same files.

    python bench/import.py [DIR] [--repeat 7] [--before CHECKOUT] [--json] [--no-gnu-time]

DIR defaults to shared/data/traffic-dev in the nearest folder above the repository holding one
(717 cassettes and HAR files, 14 MB). Four commands, each a process of its own:

  floor        `python bench/import.py --floor DIR`: read every cassette and HAR file and parse
               it (YAML with libyaml's safe loader, JSON with json.loads), then json.loads every
               JSON text inside it (request and response bodies, gzip-compressed ones unpacked,
               and each event of a streamed answer): what any reader of these files pays;
  import       `python -m replayci import DIR --pack PACK` into a new pack each time (deleted
               after each run): read, decode, classify, convert, normalize, group sessions,
               write fixtures and contracts;
  pack floor   `python bench/import.py --pack-floor PACK` on the pack the import wrote: its
               pack.yaml and contracts (libyaml's safe loader), every fixture their cases name
               (json.loads), and every JSON text inside a fixture's answer (each event of a
               streamed answer, a tool call's arguments), which a run reads as well;
  run          `python -m replayci --provider recorded --pack PACK`: the pack run offline.

With --before CHECKOUT (a folder holding another version's `replayci/` package, e.g. `git
worktree add ../old main`), that version's import and run are timed in the same rounds
(PYTHONPATH=CHECKOUT), and the paired ratio now / before is quoted too.

Method (as bench/recorded.py): one untimed warm-up run of each command, then --repeat rounds
running each once in turn, so a change of load on the machine hits all alike. Quoted: the
median wall time and CPU time (user + system of the process and its children) of each, and the
paired ratios -- the median over rounds of import / floor and run / pack floor taken within a
round, with the lowest and highest -- in wall time and in CPU time.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recorded import Runner, alternate, bench_env, crashed, have_gnu_time, paired, summarize  # noqa: E402

ROOT = HERE.parent


def default_folder() -> Path:
    for parent in ROOT.parents:
        if (parent / "shared" / "data" / "traffic-dev").is_dir():
            return parent / "shared" / "data" / "traffic-dev"
    return ROOT.parent / "shared" / "data" / "traffic-dev"


def parse_inner(value) -> int:
    """json.loads every JSON text inside a parsed recording: a body (bytes, gzip-compressed or
    not, or text) that holds a JSON object or array, and each `data:` line of an event stream
    that does. Returns how many texts were parsed."""
    parsed = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (str, bytes)):
            if isinstance(item, bytes):
                if item[:2] == b"\x1f\x8b":
                    try:
                        item = gzip.decompress(item)
                    except (OSError, EOFError):
                        continue
                item = item.decode("utf-8", "replace")
            parsed += _parse_text(item)
    return parsed


def _parse_text(text: str) -> int:
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            json.loads(text)
            return 1
        except ValueError:
            return 0
    if "data:" not in text:
        return 0
    parsed = 0
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].lstrip()[:1] in ("{", "["):
            try:
                json.loads(line[5:])
                parsed += 1
            except ValueError:
                pass
    return parsed


def floor(folder: Path) -> tuple[int, int]:
    """Read and parse every cassette and HAR file under *folder*, and the JSON inside them."""
    import yaml

    loader = yaml.CSafeLoader
    files = texts = 0
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            doc = yaml.load(path.read_bytes(), Loader=loader)  # noqa: S506 - the safe loader
        elif path.suffix in (".har", ".json") and path.name != "MANIFEST.json":
            doc = json.loads(path.read_bytes())
        else:
            continue
        files += 1
        texts += parse_inner(doc)
    return files, texts


def pack_floor(pack: Path) -> tuple[int, int, int]:
    """Read and parse a pack's pack.yaml, contracts and the fixtures they name, and the JSON
    inside those fixtures' answers (as bench/floor.py, for a pack folder of its own)."""
    import yaml

    def load(path: Path):
        return yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506 - the safe loader

    load(pack / "pack.yaml")
    json.loads((pack / "nr-allowlist.json").read_bytes())
    contracts = fixtures = texts = 0
    for path in sorted((pack / "contracts").glob("*.yaml")):
        contracts += 1
        for case in load(path).get("golden_cases") or ():
            fixture = json.loads((pack / "golden" / case["input_ref"]).read_bytes())
            fixtures += 1
            texts += parse_inner(fixture.get("response"))
    return contracts, fixtures, texts


def commands(folder: Path, out: Path, before: Path | None) -> dict[str, list[str]]:
    py = sys.executable
    cmds = {
        "floor": [py, str(HERE / "import.py"), "--floor", str(folder)],
        "import": [py, "-m", "replayci", "import", str(folder), "--pack", str(out / "import-now")],
        "pack floor": [py, str(HERE / "import.py"), "--pack-floor", str(out / "pack")],
        "run": [py, "-m", "replayci", "--provider", "recorded", "--pack", str(out / "pack")],
    }
    if before is not None:
        env = ["env", f"PYTHONPATH={before}", py, "-m", "replayci"]
        cmds["import (before)"] = [*env, "import", str(folder), "--pack", str(out / "import-before")]
        cmds["run (before)"] = [*env, "--provider", "recorded", "--pack", str(out / "pack")]
    return cmds


def measure(folder: Path, repeat: int, before: Path | None, use_gnu_time: bool) -> dict:
    env = bench_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    runner = Runner(use_gnu_time=use_gnu_time, env=env)
    with tempfile.TemporaryDirectory(prefix="replayci-import-bench-") as tmp:
        out = Path(tmp)
        cmds = commands(folder, out, before)
        made = runner.run(cmds["import"][:-1] + [str(out / "pack")], out)  # the pack the runs read
        if made["rc"] != 0:
            raise SystemExit(f"replayci import failed:\n{made['stderr_tail']}")
        # Each pack an import writes is moved aside, all deleted at the end: a file created on
        # ext4 without a journal just after many were deleted costs a scan past each of those
        # (the kernel skips inodes freed in the last minutes), which would time the bench's own
        # deletions rather than the import.
        kept = out / "written"
        kept.mkdir()
        after = {name: (lambda name=name: os.replace(out / cmds[name][-1], kept / f"{len(os.listdir(kept))}"))
                 for name in cmds if name.startswith("import")}
        runs = alternate(runner, cmds, out, repeat, after=after)
        pack = out / "pack"
        fixtures = sum(1 for _ in (pack / "golden").rglob("*.json"))
        contracts = sum(1 for _ in (pack / "contracts").glob("*.yaml"))
    result = {"folder": str(folder), "repeat": repeat, "cpus": os.cpu_count(), "timer": runner.name,
              "load": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
              "pack": {"fixtures": fixtures, "contracts": contracts},
              "commands": {name: summarize(rs) for name, rs in runs.items()}}
    pairs = [("import", "floor"), ("run", "pack floor")]
    if before is not None:
        pairs += [("import", "import (before)"), ("run", "run (before)"), ("import (before)", "floor"),
                  ("run (before)", "pack floor")]
    result["ratios"] = {f"{a} / {b}": {"wall": paired(runs[a], runs[b]), "cpu": paired(runs[a], runs[b], "cpu_s")}
                        for a, b in pairs}
    result["crashed"] = sorted(name for name, rs in runs.items() if any(crashed(r) or r["rc"] for r in rs))
    return result


def text_report(res: dict) -> str:
    lines = [f"{res['folder']}: {res['repeat']} alternating rounds after a warm-up, {res['cpus']} cpus, "
             f"load {res['load']}, timed by {res['timer']}; the pack: {res['pack']['fixtures']} fixture files, "
             f"{res['pack']['contracts']} contracts",
             f"{'':18} {'wall (median)':>14} {'cpu (median)':>14}"]
    for name, s in res["commands"].items():
        lines.append(f"{name:18} {s['wall_s']:12.3f} s {s['cpu_s']:12.3f} s")
    lines.append("paired ratios, median (lowest-highest):")
    for name, r in res["ratios"].items():
        cells = [f"{kind} {r[kind]['median']:.2f}x ({r[kind]['min']:.2f}-{r[kind]['max']:.2f})"
                 for kind in ("wall", "cpu") if r[kind]]
        lines.append(f"  {name:30} " + ", ".join(cells))
    if res["crashed"]:
        lines.append(f"FAILED: {', '.join(res['crashed'])} (exit status not 0)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=default_folder())
    ap.add_argument("--repeat", type=int, default=7, help="rounds after the warm-up (default 7)")
    ap.add_argument("--before", type=Path, help="a checkout of another version, timed in the same rounds")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--no-gnu-time", action="store_true", help="time with getrusage instead of /usr/bin/time")
    ap.add_argument("--floor", action="store_true", help="only parse DIR's files (the floor itself), once")
    ap.add_argument("--pack-floor", action="store_true", help="only parse the pack DIR's files, once")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"no such folder: {args.folder}", file=sys.stderr)
        return 2
    if args.floor:
        files, texts = floor(args.folder)
        print(f"floor: {files} files, {texts} JSON texts inside them parsed")
        return 0
    if args.pack_floor:
        contracts, fixtures, texts = pack_floor(args.folder)
        print(f"pack floor: {contracts} contracts, {fixtures} fixtures, {texts} JSON texts inside them parsed")
        return 0
    res = measure(args.folder.resolve(), args.repeat, args.before and args.before.resolve(),
                  have_gnu_time() and not args.no_gnu_time)
    print(json.dumps(res, indent=2) if args.json else text_report(res))
    return 1 if res["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
