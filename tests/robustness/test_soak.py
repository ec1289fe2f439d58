"""Soak: 500 live cases through the real CLI and SDKs against a faulty fake provider.

The fake server (tests/fakeserver.py) answers each case from a plan fixed in advance: the
case's question names it, and the server picks the answer from the number of requests it has
already seen for that question. Of the 500 cases, 20% meet 429s (Retry-After 0.05-0.2 s),
10% 5xx, 5% timeouts (a reply slower than the contract's timeouts.total_ms), 5% dropped
connections, 2% non-JSON bodies, 2% a 400; the rest get a clean answer at once. A fault hits
the first attempt only, the first two, or every attempt. The cases are spread over four retry
policies (2 attempts; 3 attempts; 1 attempt; 3 attempts but only for 429s).

`replayci --provider P --jobs 8 --record` runs them in a child process. Then, for every case,
the outcome is the one its policy implies (computed here independently of replayci): pass, or
fail as unexpected_error with the provider's HTTP status; the attempts in the report and the
requests the server saw are the number the policy allows; Retry-After was waited for. No case
is `error`, nothing crashed, every recording on disk is complete, valid and canonical, no
temporary file is left, no API key reached a file, and the recordings replay offline.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import PackBuilder, request
from fakeserver import FakeServer, Fault, RecordedRequest, Reply

N_CASES = 500
JOBS = 8
TIMEOUT_MS = 600        # the contracts' timeouts.total_ms
SLOW_S = 1.5            # a "timeout" fault answers this late
SEED = 20261122
KEYS = {"openai": "sk-proj-SOAKTEST-3a5c7e9b1d2f4a6c8e0b", "anthropic": "sk-ant-api03-SOAKTEST-8f6d4b2a0c9e7f5d"}
ENV_KEY = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-soak-test"}
PARIS = Reply.tool_call("get_weather", {"location": "Paris"})

# The share of cases per fault (of 500): 20% 429, 10% 5xx, 5% timeout, 5% dropped, 2% not
# JSON, 2% a 400 (never retried), 56% clean.
MIX = {"429": 100, "5xx": 50, "timeout": 25, "dropped": 25, "not_json": 10, "400": 10, "ok": 280}


@dataclass(frozen=True)
class Policy:
    max_attempts: int
    retry_on: tuple[str, ...] = ("429", "5xx", "timeout", "connection")

    def yaml(self) -> str:
        kinds = ", ".join(f'"{k}"' for k in self.retry_on)
        return (f"retries: {{max_attempts: {self.max_attempts}, retry_on: [{kinds}]}}\n"
                f"timeouts: {{total_ms: {TIMEOUT_MS}}}\n"
                "rate_limits: {on_429: {respect_retry_after: true, max_sleep_seconds: 5}}\n")


POLICIES = {"retry2": Policy(2), "retry3": Policy(3), "once": Policy(1), "only429": Policy(3, ("429",))}


@dataclass(frozen=True)
class Step:
    """One failed attempt: what the server does, and what the client must make of it."""

    action: object
    kind: str             # the retry kind the provider classifies it as
    retryable: bool
    status: int | None    # the HTTP status the failure reports
    retry_after: float | None = None


def step(fault: str, rng: random.Random) -> Step:
    if fault == "429":
        wait = rng.choice([0.05, 0.1, 0.2])
        return Step(Fault.rate_limit(retry_after=wait), "429", True, 429, wait)
    if fault == "5xx":
        status = rng.choice([500, 502, 503])
        return Step(Fault.status(status), "5xx", True, status)
    if fault == "timeout":
        return Step(Fault.slow(SLOW_S, PARIS), "timeout", True, None)
    if fault == "dropped":
        return Step(Fault.dropped(), "connection", True, None)
    if fault == "not_json":
        return Step(Fault.not_json(), "invalid_response", False, 200)
    if fault == "400":
        return Step(Fault.status(400), "client", False, 400)
    raise AssertionError(fault)


@dataclass
class Case:
    id: str
    contract: str
    fault: str
    plan: list[Step]      # the failed attempts, in order; then clean answers

    @property
    def question(self) -> str:
        return f"soak:{self.id}: what is the weather in Paris?"

    def expected(self) -> tuple[str, int, Step | None]:
        """(status, attempts, the last failure) that the contract's policy implies."""
        policy = POLICIES[self.contract]
        attempt = 0
        while True:
            attempt += 1
            if attempt > len(self.plan):
                return "pass", attempt, None
            s = self.plan[attempt - 1]
            if s.retryable and s.kind in policy.retry_on and attempt < policy.max_attempts:
                continue
            return "fail", attempt, s


def make_cases() -> list[Case]:
    rng = random.Random(SEED)
    faults = [f for f, n in MIX.items() for _ in range(n)]
    assert len(faults) == N_CASES
    rng.shuffle(faults)
    cases = []
    for i, fault in enumerate(faults):
        plan: list[Step] = []
        if fault != "ok":
            # how long the fault lasts: the first attempt, the first two, or every attempt
            times = rng.choice([1, 1, 1, 2, 3])
            plan = [step(fault, rng) for _ in range(times)]
        cases.append(Case(f"c{i:03d}", list(POLICIES)[i % len(POLICIES)], fault, plan))
    return cases


def question_of(req: RecordedRequest) -> str | None:
    body = req.body if isinstance(req.body, dict) else {}
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
    if isinstance(content, list):  # Anthropic content blocks
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content


class Planned:
    """The server's default answer: the case's plan, by the attempts seen for its question."""

    def __init__(self, cases: list[Case]):
        self.plans = {c.question: c.plan for c in cases}
        self.seen: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, req: RecordedRequest):
        q = question_of(req)
        with self.lock:
            n = self.seen[q]
            self.seen[q] += 1
        plan = self.plans.get(q)
        if plan is None:
            return Fault.status(400, message=f"unknown question {q!r}")
        return plan[n].action if n < len(plan) else PARIS


def build_pack(root: Path, cases: list[Case]) -> PackBuilder:
    pack = PackBuilder(root, "soak")
    for name, policy in POLICIES.items():
        lines = ["tool: get_weather", policy.yaml().rstrip("\n"),
                 "assertions:", "  output_invariants:",
                 '    - path: "$.tool_calls[0].arguments.location"', "      equals: Paris",
                 "golden_cases:"]
        for c in cases:
            if c.contract == name:
                lines += [f"  - id: {c.id}", f"    input_ref: {c.id}.json"]
        pack.contract(name, "\n".join(lines) + "\n")
    for c in cases:
        req = request(c.question, tools=[request()["tools"][0]])
        (pack.dir / "golden" / f"{c.id}.json").write_text(json.dumps({"request": req}), "utf-8")
    return pack


def run_cli(root: Path, *args: str, provider: str | None = None, server: FakeServer | None = None,
            timeout: float = 120) -> tuple[int, str, float]:
    """`python -m replayci ARGS` in *root* (live against *server* when given)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REPLAYCI_", "GITHUB_", "OPENAI_", "ANTHROPIC_"))}
    env.update(NO_COLOR="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    argv = [sys.executable, "-m", "replayci", *args]
    if provider is not None:
        argv += ["--provider", provider]
    if server is not None:
        env[ENV_KEY[provider]] = KEYS[provider]
        argv += ["--base-url", server.base_url_for(provider), "--model", MODELS[provider]]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - t0


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_soak_500_live_cases_with_faults(tmp_path, provider):
    cases = make_cases()
    pack = build_pack(tmp_path, cases)
    planned = Planned(cases)
    with FakeServer(default=planned) as server:
        code, out, seconds = run_cli(tmp_path, "run", "--jobs", str(JOBS), "--record",
                                     "--report-json", "report.json", "-q", provider=provider,
                                     server=server)
        requests = server.requests
        max_in_flight = server.max_in_flight
    print(f"{provider}: {N_CASES} cases, {len(requests)} requests, {seconds:.1f} s, "
          f"at most {max_in_flight} in flight")

    # Nothing crashed; the run ended with the verdict the plans imply.
    assert "Traceback" not in out and "internal error" not in out, out[-3000:]
    expected = {c.id: c.expected() for c in cases}
    assert code == (1 if any(e[0] == "fail" for e in expected.values()) else 0), out[-3000:]
    assert seconds < 60, f"{seconds:.1f} s"
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    got = {c["case"]: c for c in report["cases"]}
    # in stable order (contracts by file name, cases as listed) whatever order calls finished in
    assert [c["case"] for c in report["cases"]] == [
        c.id for c in sorted(cases, key=lambda c: (c.contract, c.id))]

    # Every case: the outcome and the number of attempts its policy implies, on both sides.
    seen = Counter(question_of(r) for r in requests)
    wrong = []
    for c in cases:
        status, attempts, last = expected[c.id]
        r = got[c.id]
        ok = (r["status"] == status and r.get("attempts") == attempts and seen[c.question] == attempts)
        if ok and status == "fail":
            message = r["failures"][0]["message"]
            ok = (r["classification"] == "unexpected_error"
                  and f"after {attempts} attempt" in message
                  and (last.status is None or f"HTTP {last.status}" in message)
                  and (last.kind != "timeout" or "timeout" in message))
        if not ok:
            wrong.append((c.id, c.contract, c.fault, [s.kind for s in c.plan], (status, attempts),
                          (r["status"], r.get("attempts"), seen[c.question], r["reason"])))
    assert not wrong, f"{len(wrong)} cases differ from their policy:\n" + "\n".join(map(str, wrong[:20]))
    assert not any(r["status"] == "error" for r in got.values())
    outcomes = Counter(e[0] for e in expected.values())
    assert outcomes["pass"] > 300 and outcomes["fail"] > 50, outcomes  # both sides are exercised
    assert len(requests) == sum(e[1] for e in expected.values())
    assert max_in_flight >= 4, max_in_flight  # the calls really ran concurrently

    # Retry-After was honoured: the retry of a 429 came no sooner than the server asked.
    by_question: dict = {}
    for r in requests:
        by_question.setdefault(question_of(r), []).append(r.time)
    for c in cases:
        if c.plan and c.plan[0].kind == "429" and expected[c.id][1] > 1:
            first, second = by_question[c.question][:2]
            assert second - first >= c.plan[0].retry_after * 0.9, (c.id, second - first)

    # Recordings: one per passing case, complete, valid, canonical; no temp file; no key.
    recordings = pack.dir / "recordings"
    files = sorted(p for p in recordings.rglob("*") if p.is_file())
    assert all(p.suffix == ".json" and not p.name.startswith(".") for p in files), \
        [p.name for p in files if p.suffix != ".json" or p.name.startswith(".")]
    passing = {c.id for c in cases if expected[c.id][0] == "pass"}
    assert {p.stem for p in files} == passing
    for p in files:
        text = p.read_text("utf-8")
        doc = json.loads(text)
        assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n", p
        meta = doc["meta"]
        assert meta["pack_id"] == "soak" and meta["case_id"] == p.stem
        assert meta["contract"] == p.parent.name and meta["provider"] == provider
        assert meta["model"] == MODELS[provider] and meta["recorded_at"].endswith("+00:00")
        for key in ("schema_version", "replayci_version", "latency_ms"):
            assert key in meta, (p, key)
        assert set(doc["boundary"]) == {"model", "tool_schema_hash", "message_hash", "system_hash"}
        response = doc["response"]
        assert response["success"] is True and response["stop_reason"] == "tool_calls"
        assert [(t["id"], t["name"], t["arguments"]) for t in response["tool_calls"]] == \
            [("call_1", "get_weather", {"location": "Paris"})]
        assert KEYS[provider] not in text and "raw" not in doc
    # ... and they replay offline: every recorded case passes, the others have no recording.
    code, out, _ = run_cli(tmp_path, "validate")
    assert code == 0, out
    code, out, _ = run_cli(tmp_path, "run", "--report-json", "replay.json", "-q", provider="recorded")
    replay = {c["case"]: c for c in json.loads((tmp_path / "replay.json").read_text("utf-8"))["cases"]}
    assert {k for k, r in replay.items() if r["status"] == "pass"} == passing, out[-2000:]
    assert {r["reason"] for k, r in replay.items() if k not in passing} == {"recording_not_found"}
