#!/usr/bin/env python3
"""Benchmark `replayci proxy` against the fake provider (tests/support/fakeserver.py) on 127.0.0.1.

    python bench/proxy.py [--requests 300] [--events 20] [--gap 0.01] [--bulk 4000] [--clients 16] [--json]

Measures, with the proxy running as the real CLI in its own process:

- latency per request: --requests sequential chat completions sent straight to the fake
  provider, then the same through the proxy in record mode (each one captured), in check mode
  (each one judged against the case just recorded) and in replay mode (answered from the pack); "added" is the proxied p50/p95 minus the direct one;
- latency per streamed chunk: streams of --events SSE events, --gap seconds apart, from the
  tests' tiny streaming upstream; each event's arrival at the client minus the moment the
  upstream wrote it, straight and through the proxy in record mode; in replay mode, the time
  from the first to the last chunk of a replayed stream, per chunk;
- throughput: --bulk requests from --clients concurrent keep-alive clients in record mode,
  then the same requests replayed (each captured exchange is served once, so replay needs as
  many as it is asked for).

Goals: < 5 ms added per request at p50, > 500 replayed requests/s with 16 clients. The machine
is shared: figures move from run to run; compare them within one run.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

from fakeserver import FakeServer, Reply  # noqa: E402
from proxy_support import Upstream  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
KEY = "sk-bench-0123456789abcdef"


def body(i: int, stream: bool = False) -> bytes:
    doc = {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "Use the tools."},
                                               {"role": "user", "content": f"What is the weather in city {i}?"}],
           "tools": TOOLS, "temperature": 0}
    if stream:
        doc = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"Say {'word ' * 18}{i}"}],
               "stream": True}
    return json.dumps(doc).encode()


class Client:
    """One keep-alive connection."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.prefix = parts.path.rstrip("/")
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def post(self, path: str, data: bytes) -> tuple[int, bytes]:
        self.conn.request("POST", self.prefix + path, data, {"content-type": "application/json",
                                                             "authorization": f"Bearer {KEY}"})
        answer = self.conn.getresponse()
        return answer.status, answer.read()

    def stream(self, path: str, data: bytes) -> list[float]:
        """Arrival time of each piece of a streamed answer."""
        self.conn.request("POST", self.prefix + path, data, {"content-type": "application/json"})
        answer = self.conn.getresponse()
        arrived = []
        while True:
            piece = answer.read1(65536)
            if not piece:
                break
            arrived.extend([time.monotonic()] * piece.count(b"\n\n"))
        self.conn.close()  # the upstream closes streams; start the next on a fresh connection
        return arrived


def timed(client: Client, bodies: list[bytes]) -> list[float]:
    out = []
    for data in bodies:
        started = time.perf_counter()
        status, _ = client.post("/chat/completions", data)
        out.append((time.perf_counter() - started) * 1000)
        assert status == 200, status
    return out


def quantiles(ms: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(ms, n=20)
    return statistics.median(ms), cuts[18]


class ProxyProcess:
    """`replayci proxy` without a command, in its own process."""

    def __init__(self, pack: Path, mode: str, upstream: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
        self.proc = subprocess.Popen([sys.executable, "-m", "replayci", "proxy", "--pack", str(pack), "--mode", mode,
                                      "--port", "0", "--upstream", f"openai={upstream}"], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = ""
        while "OPENAI_BASE_URL=" not in line:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the proxy did not start: " + self.proc.stderr.read())
        self.base = line.strip().split("=", 1)[1]

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)  # as Ctrl-C: every capture written first
        _, err = self.proc.communicate(timeout=300)
        return next(ln for ln in reversed(err.splitlines()) if ln.startswith("replayci proxy:"))


def stream_delays(base: str, upstream: Upstream, events: int, rounds: int) -> list[float]:
    """ms from the upstream writing each event to the client reading it."""
    delays = []
    for r in range(rounds):
        upstream.sent_at.clear()
        arrived = Client(base).stream("/chat/completions", body(r, stream=True))
        sent = list(upstream.sent_at)
        assert len(arrived) == len(sent) >= events, (len(arrived), len(sent))
        delays += [(a - s) * 1000 for a, s in zip(arrived, sent, strict=True)]
    return delays


def concurrent(base: str, bodies: list[bytes], clients: int) -> float:
    """Requests per second for *bodies* spread over *clients* keep-alive clients."""
    shares = [bodies[i::clients] for i in range(clients)]
    failures: list[int] = []

    def work(share: list[bytes]) -> None:
        client = Client(base)
        for data in share:
            status, _ = client.post("/chat/completions", data)
            if status != 200:
                failures.append(status)

    threads = [threading.Thread(target=work, args=(share,)) for share in shares]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    assert not failures, f"{len(failures)} requests failed: {failures[:5]}"
    return len(bodies) / elapsed


def measure(args: argparse.Namespace, root: Path) -> dict:
    out: dict = {}
    bodies = [body(i) for i in range(args.requests)]
    bulk = [body(100_000 + i) for i in range(args.bulk)]
    with FakeServer(default=Reply.tool_call("get_weather", {"location": "Paris"})) as fake, \
            Upstream(gap=args.gap) as streaming:
        timed(Client(fake.openai_base_url), bodies[:20])  # warm-up
        out["direct"] = quantiles(timed(Client(fake.openai_base_url), bodies))
        out["stream_direct"] = quantiles(stream_delays(f"{streaming.url}/v1", streaming, args.events, 3))
        proxy = ProxyProcess(root / "pack", "record", f"{fake.openai_base_url}")
        out["record"] = quantiles(timed(Client(proxy.base), bodies))
        out["record_rps"] = concurrent(proxy.base, bulk, args.clients)
        out["record_summary"] = proxy.stop()
        # Check mode over the pack just recorded: each answer judged against its case, off the path back.
        proxy = ProxyProcess(root / "pack", "check", f"{fake.openai_base_url}")
        out["check"] = quantiles(timed(Client(proxy.base), bodies))
        out["check_summary"] = proxy.stop()
        proxy = ProxyProcess(root / "stream-pack", "record", f"{streaming.url}/v1")
        out["stream_record"] = quantiles(stream_delays(proxy.base, streaming, args.events, 3))
        proxy.stop()
    proxy = ProxyProcess(root / "pack", "replay", "http://127.0.0.1:9/v1")  # no upstream at all
    out["replay"] = quantiles(timed(Client(proxy.base), bodies))
    out["replay_rps"] = concurrent(proxy.base, bulk, args.clients)
    out["replay_summary"] = proxy.stop()
    proxy = ProxyProcess(root / "stream-pack", "replay", "http://127.0.0.1:9/v1")
    spans = []
    for r in range(3):
        arrived = Client(proxy.base).stream("/chat/completions", body(r, stream=True))
        spans.append((arrived[-1] - arrived[0]) * 1000 / max(len(arrived) - 1, 1))
    out["stream_replay_per_chunk_ms"] = statistics.median(spans)
    proxy.stop()
    return out


def render(r: dict, args: argparse.Namespace) -> str:
    d50, d95 = r["direct"]
    rows = [
        f"replayci proxy benchmark · fake provider on 127.0.0.1 · {os.cpu_count()} cores (shared machine)",
        "",
        f"  per request ({args.requests} sequential)          p50        p95",
        f"    straight to the fake provider      {d50:7.2f} ms {d95:7.2f} ms",
        f"    record: added by the proxy         {r['record'][0] - d50:7.2f} ms {r['record'][1] - d95:7.2f} ms",
        f"    check: added by the proxy          {r['check'][0] - d50:7.2f} ms {r['check'][1] - d95:7.2f} ms",
        f"    replay (no upstream at all)        {r['replay'][0]:7.2f} ms {r['replay'][1]:7.2f} ms",
        f"  per streamed chunk ({args.events}+ events, {args.gap * 1000:.0f} ms apart)",
        f"    straight: write to read            {r['stream_direct'][0]:7.2f} ms {r['stream_direct'][1]:7.2f} ms",
        f"    record: added by the proxy         {r['stream_record'][0] - r['stream_direct'][0]:7.2f} ms "
        f"{r['stream_record'][1] - r['stream_direct'][1]:7.2f} ms",
        f"    replay: between chunks             {r['stream_replay_per_chunk_ms']:7.2f} ms",
        f"  throughput, {args.clients} concurrent clients, {args.bulk} requests",
        f"    record                             {r['record_rps']:7.0f} req/s",
        f"    replay                             {r['replay_rps']:7.0f} req/s",
        "",
        f"  goals: < 5 ms added at p50 ({'met' if max(r['record'][0], r['check'][0]) - d50 < 5 and r['replay'][0] < 5 else 'MISSED'}), "
        f"> 500 replayed req/s ({'met' if r['replay_rps'] > 500 else 'MISSED'})",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.01)
    parser.add_argument("--bulk", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replayci-proxy-bench-") as tmp:
        result = measure(args, Path(tmp))
    print(json.dumps(result, indent=2) if args.json else render(result, args))


if __name__ == "__main__":
    main()
