#!/usr/bin/env python3
"""Benchmark live-call concurrency: 200 cases against the fake provider server (tests/support/fakeserver.py)
with a fixed reply latency, at --jobs 1, 4 and 16, through the real SDKs.

    python bench/live_concurrency.py [--cases 200] [--latency 0.2] [--jobs 1,4,16]
                                     [--providers openai,anthropic] [--cli] [--json]

For each provider and jobs value it runs every case once (`replay: off`) and prints the wall
time and the efficiency = ideal / actual, where ideal = ceil(cases / jobs) x latency (the
time a perfect pool of `jobs` workers needs when every call takes `latency`), along with the
most calls the server saw in flight at once.

The fake server runs in its own process by default (`--server thread`: in this one, where its
handler threads compete with replayci's for the GIL, as in the test suite).

The runs go through `replayci.run(...)`, the function the CLI calls, in this process after one
small warm-up run per provider, so the SDK import (~0.6 s openai, ~1.5 s anthropic, once per
process) is not counted against concurrency. `--cli` also times the whole `replayci` process
(interpreter start, SDK import, reports) for each row.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
sys.path.insert(0, str(HERE.parent))

from fakeserver import FakeServer, Reply  # noqa: E402

from replayci.core.hashing import boundary_hashes

KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                   "required": ["location"]}}}]


def make_project(root: Path, cases: int, per_contract: int = 20) -> Path:
    """A pack of *cases* cases in contracts of *per_contract*, each its own question."""
    pack = root / "packs" / "live"
    (pack / "contracts").mkdir(parents=True)
    (pack / "golden").mkdir()
    (pack / "pack.yaml").write_text("pack_id: live\nschema_version: v0.1\ndefault_model: bench-model\n")
    (pack / "nr-allowlist.json").write_text("[]\n")
    (root / ".replayci.yml").write_text("provider: recorded\n")
    for c in range(math.ceil(cases / per_contract)):
        ids = range(c * per_contract, min(cases, (c + 1) * per_contract))
        lines = ["tool: get_weather", "expected_tool_calls:", "  - name: get_weather",
                 "    argument_invariants:", "      - {path: $.location, type: string}", "golden_cases:"]
        for i in ids:
            lines += [f"  - id: case_{i:04d}", f"    input_ref: case_{i:04d}.json"]
            req = {"model": "bench-model", "messages": [
                {"role": "system", "content": "Use the tools."},
                {"role": "user", "content": f"Weather in city {i}?"}], "tools": TOOLS, "temperature": 0}
            fx = {"boundary": {"model": "bench-model", **boundary_hashes(req)}, "request": req}
            (pack / "golden" / f"case_{i:04d}.json").write_text(json.dumps(fx))
        (pack / "contracts" / f"c{c:03d}.yaml").write_text("\n".join(lines) + "\n")
    return pack


_SERVER_PROCESS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from fakeserver import FakeServer, Reply
with FakeServer(default=Reply.tool_call("get_weather", {"location": "Paris"})) as server:
    print(server.port, flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "latency":
            server.latency = float(arg)
        elif cmd == "reset":
            server.reset()
        elif cmd == "stats":
            print(json.dumps({"count": server.count(), "max_in_flight": server.max_in_flight}), flush=True)
"""


class RemoteServer:
    """The fake server in its own process, as a real provider is: it does not compete with
    replayci for this interpreter's GIL. Same interface as FakeServer for the benchmark."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER_PROCESS, str(HERE.parent / "tests" / "support")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self._latency = 0.0

    def _send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    @property
    def latency(self) -> float:
        return self._latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._latency = value
        self._send(f"latency {value}")

    def reset(self) -> None:
        self._send("reset")

    def _stats(self) -> dict:
        self._send("stats")
        return json.loads(self.proc.stdout.readline())

    def count(self) -> int:
        return self._stats()["count"]

    @property
    def max_in_flight(self) -> int:
        return self._stats()["max_in_flight"]

    def base_url_for(self, provider: str) -> str:
        url = f"http://127.0.0.1:{self.port}"
        return url + "/v1" if provider == "openai" else url

    def __enter__(self) -> RemoteServer:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def run_api(pack: Path, provider: str, server: FakeServer, jobs: int, filters=()) -> tuple[float, object]:
    import replayci

    env = {KEY_VARS[provider]: "sk-bench-not-a-key"}
    t0 = time.perf_counter()
    result = replayci.run([str(pack)], provider=provider, base_url=server.base_url_for(provider), jobs=jobs,
                          replay="off", filters=filters, environ=env, cwd=str(pack.parent.parent))
    return time.perf_counter() - t0, result


def run_cli(pack: Path, provider: str, server: FakeServer, jobs: int) -> float:
    env = {**os.environ, KEY_VARS[provider]: "sk-bench-not-a-key"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "replayci", "--provider", provider, "--base-url",
                           server.base_url_for(provider), "--jobs", str(jobs), "--pack", str(pack), "-q"],
                          cwd=pack.parent.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"replayci exited {proc.returncode}: {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds per reply")
    ap.add_argument("--jobs", default="1,4,16")
    ap.add_argument("--providers", default="openai,anthropic")
    ap.add_argument("--server", choices=("process", "thread"), default="process",
                    help="run the fake server in its own process (default, like a remote API) or in "
                         "a thread of this one (it then competes with replayci for the GIL)")
    ap.add_argument("--cli", action="store_true", help="also time the whole replayci process")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    jobs_list = [int(j) for j in args.jobs.split(",")]
    rows = []
    server_cm = (RemoteServer() if args.server == "process"
                 else FakeServer(default=Reply.tool_call("get_weather", {"location": "Paris"})).start())
    with tempfile.TemporaryDirectory() as tmp, server_cm as server:
        pack = make_project(Path(tmp), args.cases)
        for provider in args.providers.split(","):
            server.latency = 0.0
            run_api(pack, provider, server, 4, filters=("c000/case_000[0-3]",))  # warm-up: SDK import
            server.latency = args.latency
            for jobs in jobs_list:
                server.reset()
                wall, result = run_api(pack, provider, server, jobs)
                statuses = {c.status for c in result.cases}
                if statuses != {"pass"} or len(result.cases) != args.cases:
                    raise SystemExit(f"unexpected outcomes: {statuses}")
                ideal = math.ceil(args.cases / jobs) * args.latency
                row = {"provider": provider, "server": args.server, "jobs": jobs, "cases": args.cases, "latency_s": args.latency,
                       "calls": server.count(), "max_in_flight": server.max_in_flight,
                       "ideal_s": round(ideal, 3), "wall_s": round(wall, 3),
                       "efficiency": round(ideal / wall, 3)}
                if args.cli:
                    server.reset()
                    row["cli_wall_s"] = round(run_cli(pack, provider, server, jobs), 3)
                rows.append(row)
                if not args.json:
                    print(_line(row), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


def _line(row: dict) -> str:
    text = (f"{row['provider']:<10} server {row['server']:<7} jobs {row['jobs']:>3}   {row['cases']} cases x {row['latency_s']:g} s   "
            f"wall {row['wall_s']:7.3f} s   ideal {row['ideal_s']:6.2f} s   efficiency {row['efficiency']:.3f}   "
            f"max in flight {row['max_in_flight']}")
    if "cli_wall_s" in row:
        text += f"   (whole CLI process {row['cli_wall_s']:.2f} s)"
    return text


if __name__ == "__main__":
    main()
