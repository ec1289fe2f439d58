"""`replayci observe`: call a live provider on observation specs, record what came back, infer
invariants and write a runnable draft pack (contracts with ``status: observed``).

An observation spec is a JSON (or YAML) file ``{"messages": [...], "tools": [...]}``; tools in
OpenAI form or the flat ``{name, description, parameters}`` form. Other request keys
(``tool_choice``, ``temperature``, ``max_tokens``...) are sent as given; ``description`` becomes
the contract's description. The pack written passes ``replayci --provider recorded`` at once:
each spec gives a contract, a golden fixture (the request, boundary pinned) and a recording.
"""
from __future__ import annotations

import datetime
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..api import run as run_api
from ..capture import changes, gate
from ..capture.correspond import Index, Shape
from ..capture.inference import CASE_ID, Observation, infer_contract
from ..capture.packfiles import pack_id_for, write_pack_files, yaml_text
from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.files import write_atomic
from ..core.hashing import boundary_hashes
from ..core.paths import display_path
from ..engine import recordings
from ..pack import loader
from ..pack.model import Pack
from ..pack.sources import load_json, load_yaml
from ..pack.vocabulary import TIMEOUT_MS
from ..providers import LIVE_PROVIDERS, api_key_for, create, missing_key_message
from ..providers.base import Provider
from ..providers.call import call_once
from ..providers.retry import RetryPolicy

SPEC_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass
class ObserveResult:
    provider: str
    model: str
    output_dir: str
    pack_id: str
    observations: list[Observation]
    written: list[str] = field(default_factory=list)
    check: Any = None  # the RunResult of `--provider recorded` on the written pack
    draft: bool = False  # draft contracts (status: observed)
    broken: list = field(default_factory=list)  # answers that broke their cases (CaseResult): not written
    held: set = field(default_factory=set)  # the specs whose answers broke their cases
    packs: list = field(default_factory=list)  # the pack judged against
    changed: list[str] = field(default_factory=list)  # with update: per contract, what changed

    @property
    def ok(self) -> bool:
        """Every spec observed, none broke its case, and the written pack passes offline."""
        return (all(o.error is None for o in self.observations) and not self.broken and self.check is not None
                and self.check.ok and all(c.status == "pass" for c in self.check.cases))

    @property
    def written_specs(self) -> list[Observation]:
        """The specs whose contracts were written."""
        return [o for o in self.observations if o.error is None and o.name not in self.held]


# ----------------------------------------------------------------------------- specs


def _flat_tool(tool: Any, where: str) -> dict:
    """A tool in OpenAI form, from OpenAI, flat or Anthropic form; ConfigError when it is none."""
    if not isinstance(tool, dict):
        raise ConfigError(Problem(where, None, None, "a tool must be an object"))
    if isinstance(tool.get("function"), dict):
        fn = tool["function"]
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ConfigError(Problem(where, None, None, "a tool needs function.name"))
        return {"type": "function", **{k: v for k, v in tool.items() if k != "type"}}
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(Problem(where, None, None, "a tool needs a name: {name, description, parameters} or "
                                  "{type: function, function: {name, ...}}"))
    fn: dict[str, Any] = {"name": name}
    if tool.get("description"):
        fn["description"] = tool["description"]
    params = tool.get("parameters", tool.get("input_schema"))
    if params is not None:
        fn["parameters"] = params
    return {"type": "function", "function": fn}


def _contract_name(stem: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._-") or "spec"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _spec_files(input_dir: str) -> list[tuple[str, str]]:
    """(file name, path) of every spec file of *input_dir*, sorted by name."""
    try:
        names = sorted(n for n in os.listdir(input_dir) if n.endswith(SPEC_SUFFIXES))
    except OSError as exc:
        raise ConfigError(f"{input_dir}: cannot list it: {exc.strerror or exc}") from None
    paths = ((fname, os.path.join(input_dir, fname)) for fname in names)
    return [(fname, path) for fname, path in paths if os.path.isfile(path)]


def _load_spec(path: str, display: str) -> dict:
    """The spec file's object; ConfigError (every problem) when it is no readable object."""
    if path.endswith(".json"):
        raw = load_json(path, display)
    else:
        doc = load_yaml(path, display)
        if doc.problems:
            raise ConfigError(doc.problems)
        raw = doc.value
    if not isinstance(raw, dict):
        raise ConfigError(Problem(display, 1, 1, 'expected an object {"messages": [...], "tools": [...]}'))
    return raw


def _checked_tools(raw: dict, display: str) -> list[dict]:
    """The spec's tools in OpenAI form, its messages checked; ConfigError (the problem of each
    wrong tool) when wrong."""
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise ConfigError(Problem(display, None, None,
                                  "'messages' must be a non-empty list of {role, content} objects"))
    tools = raw.get("tools") or []
    if not isinstance(tools, list):
        raise ConfigError(Problem(display, None, None, "'tools' must be a list"))
    converted, problems = [], []
    for i, t in enumerate(tools):
        try:
            converted.append(_flat_tool(t, f"{display}: tools[{i}]"))
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)
    return converted


def read_specs(input_dir: str, model: str) -> list[Observation]:
    """Every spec of *input_dir* (sorted by name); ConfigError lists every problem found."""
    problems: list[Problem] = []
    out: list[Observation] = []
    taken: set[str] = set()
    for fname, path in _spec_files(input_dir):
        display = display_path(path)
        try:
            raw = _load_spec(path, display)
            tools = _checked_tools(raw, display)
        except ConfigError as exc:
            problems += exc.problems
            continue
        request = {k: v for k, v in raw.items() if k not in ("description", "model")}
        request["model"] = model
        if tools:
            request["tools"] = tools
        description = raw.get("description") if isinstance(raw.get("description"), str) else None
        out.append(Observation(_contract_name(os.path.splitext(fname)[0], taken), display, request,
                               description))
    if problems:
        raise ConfigError(problems)
    if not out:
        raise ConfigError(f"{input_dir}: no observation specs (*.json, *.yaml) found; each is "
                          '{"messages": [...], "tools": [...]}')
    return out


# ----------------------------------------------------------------------------- inference


def describe(obs: Observation) -> str:
    """One line: what the model did."""
    if obs.error:
        return f"ERROR {obs.error}"
    calls = (obs.response or {}).get("tool_calls") or []
    if not calls:
        return "no tool call (text answer)"
    contract = obs.contract or {}
    cases = contract.get("golden_cases") or [{}]
    expected = contract.get("expected_tool_calls") or (cases[0].get("assertions") or {}).get("expected_tool_calls")
    shown = []
    for inv_call in expected or []:
        args = ", ".join(_shown(i) for i in inv_call.get("argument_invariants") or [])
        shown.append(f"{inv_call['name']}({args})")
    return " + ".join(shown)


def _shown(inv: dict) -> str:
    """One argument invariant, short: `city="Paris"`, `id~/^call_[A-Za-z0-9]+$/`, `note: string`."""
    key = inv["path"].removeprefix("$.")
    if "equals" in inv:
        return f"{key}={json.dumps(inv['equals'], ensure_ascii=False)}"
    if "regex" in inv:
        return f"{key}~/{inv['regex']}/"
    return f"{key}: {inv.get('type')}" + (f" one_of[{len(inv['one_of'])}]" if "one_of" in inv else "")


# ----------------------------------------------------------------------------- the command


def _live_target(settings: Settings) -> tuple[str, str]:
    """(provider, model) of an observe run: a live provider and a model, or ConfigError."""
    if settings.provider not in LIVE_PROVIDERS:
        raise ConfigError(f"observe calls a live provider: pass --provider {' or '.join(LIVE_PROVIDERS)} "
                          f"(got {settings.provider})")
    if not settings.model:
        raise ConfigError("observe needs a model: pass --model (or set REPLAYCI_MODEL / model in .replayci.yml)")
    return settings.provider, settings.model


def _call_all(client: Provider, specs: list[Observation], *, model: str, policy: RetryPolicy, key: str,
              jobs: int) -> None:
    """Call the provider on every spec, up to *jobs* at once; each observation gets its answer."""

    def one(obs: Observation) -> None:
        answer = call_once(client, obs.request, model=model, policy=policy, key=key)
        obs.attempts, obs.latency_ms = answer.attempts, answer.latency_ms
        if answer.problem is not None:
            obs.error = answer.problem
        else:
            obs.response, obs.raw = answer.response, answer.raw

    pool = ThreadPoolExecutor(max_workers=max(jobs, 1), thread_name_prefix="replayci-observe")
    try:
        list(pool.map(one, specs))
    except BaseException:  # Ctrl-C or SIGTERM: no new call starts, and none in flight is waited for
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _write_pack(result: ObserveResult, settings: Settings) -> None:
    """The draft pack of the observed specs: pack.yaml, an empty allowlist, and per spec a
    contract, a golden fixture and a recording."""
    provider, model, output_dir = result.provider, result.model, result.output_dir
    when = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    result.written += write_pack_files(output_dir, result.pack_id, f"Observed from {provider} {model}", model,
                                       "replayci observe")
    for obs in result.written_specs:
        rec_file = os.path.join(output_dir, "recordings", obs.name, f"{CASE_ID}.json")
        try:  # first: an answer replayci could not read back leaves no files for its spec
            recordings.write(rec_file, recordings.build(
                pack_id=result.pack_id, contract=obs.name, case=CASE_ID, provider=provider, model=model,
                request=obs.request, response=obs.response or {}, latency_ms=obs.latency_ms, raw=obs.raw,
                keep_raw=settings.keep_raw, redact_fields=settings.redact_fields))
        except recordings.NotWritten as exc:
            obs.error = str(exc)
            continue
        obs.contract = infer_contract(obs, provider, model, when, draft=result.draft)
        contract_file = os.path.join(output_dir, "contracts", f"{obs.name}.yaml")
        write_atomic(contract_file, yaml_text(obs.contract, _header(provider, model, when, obs, result.draft)))
        fixture_file = os.path.join(output_dir, "golden", f"{obs.name}.json")
        fixture = {"boundary": {"model": model, **boundary_hashes(obs.request)}, "request": obs.request}
        write_atomic(fixture_file, recordings.dumps(fixture))
        result.written += [contract_file, fixture_file, rec_file]


def _header(provider: str, model: str, when: str, obs: Observation, draft: bool) -> str:
    first = f"# Observed from {provider} {model} on {when} ({obs.display}) by `replayci observe`.\n"
    if draft:
        return first + "# A draft: review the invariants, then remove `status: observed` to make it count.\n"
    return first + "# Its case pins this answer: review the checks (docs/generated-contracts.md).\n"


def judge_over(result: ObserveResult, packs: list[Pack]) -> None:
    """Judge each answer against the case it corresponds to in the pack observed into (its spec's
    contract, else the case of the same request or first user message): one that breaks it is
    listed and its spec held back (nothing of it written)."""
    index = Index.of(packs)
    named = {(r.item.contract.id, r.item.case.id): r for r in index.singles}
    for obs in result.observations:
        if obs.error is not None:
            continue
        recorded = named.get((obs.name, CASE_ID)) or index.single(Shape("", obs.request), similar=False).case
        if recorded is None:
            continue
        judged = gate.judge_answer(recorded.item, obs.request, obs.response or {}, origin="observe",
                                   recorded=recorded.shape.request)
        if gate.breaks(judged):
            result.broken.append(judged)
            result.held.add(obs.name)
            obs.contract = infer_contract(obs, result.provider, result.model, "")  # (shown, not written)


def _existing(output_dir: str, *, force: bool, update: bool, draft: bool) -> list[Pack] | None:
    """The pack at *output_dir* that answers are judged against before anything is written over it
    (None: none there, or nothing to judge: --update, --draft). Read before any call is made."""
    if not os.path.exists(os.path.join(output_dir, "pack.yaml")):
        return None
    if not (force or update):
        raise ConfigError(f"{output_dir} already holds a pack; pass --force to observe into it (an answer that "
                          "breaks its case is not written), --update to accept new behaviour, or choose another "
                          "--output")
    return None if update or draft else [loader.load_pack(output_dir)]


def observe(settings: Settings, *, input_dir: str, output_dir: str, force: bool = False,
            timeout_ms: int = TIMEOUT_MS, max_attempts: int = 2, environ=None, draft: bool = False,
            update: bool = False) -> ObserveResult:
    """Observe every spec of *input_dir* with the settings' provider and model; write the pack.
    Over an existing pack (*force*), each answer is judged against its case first and one that
    breaks it is not written; *update* writes every answer."""
    environ = os.environ if environ is None else environ
    provider, model = _live_target(settings)
    specs = read_specs(input_dir, model)
    packs = _existing(output_dir, force=force, update=update, draft=draft)
    contracts_dir = os.path.join(output_dir, "contracts")
    before = changes.snapshot(contracts_dir) if update else None
    key = api_key_for(provider, environ)
    if not key:
        raise ConfigError(missing_key_message(provider))
    client = create(provider, api_key=key, base_url=settings.base_url)
    try:
        _call_all(client, specs, model=model, policy=RetryPolicy(max_attempts=max_attempts, total_ms=timeout_ms),
                  key=key, jobs=settings.jobs)
    finally:
        client.close()
    result = ObserveResult(provider, model, output_dir, pack_id_for(output_dir), specs, draft=draft,
                           packs=packs or [])
    if packs:
        judge_over(result, packs)
    if result.written_specs:
        _write_pack(result, settings)
    if result.written_specs:  # (again: an answer may have been refused on the way)
        result.check = run_api([output_dir], provider="recorded", replay="strict", environ=environ)
    if before is not None:
        result.changed = changes.describe(before, changes.snapshot(contracts_dir))
    return result


def render(result: ObserveResult, *, style=lambda text, **_: text) -> str:
    """The human-readable summary of an observe run."""
    lines = [f"replayci observe · {result.provider} · {result.model} · {len(result.observations)} specs "
             f"→ {result.output_dir}", ""]
    width = max(len(o.name) for o in result.observations)
    for o in result.observations:
        text = describe(o)
        if o.error:
            text = style(text, fg="magenta", bold=True)
        elif o.name in result.held:
            text = style(f"{text}: breaks its case, not written", fg="red", bold=True)
        lines.append(f"  {o.name:<{width}}   {text}")
    lines.append("")
    ok = result.written_specs
    failed = sum(o.error is not None for o in result.observations)
    if ok:
        kind = "draft contracts (status: observed)" if result.draft else "contracts"
        lines.append(f"  wrote pack {result.pack_id} to {result.output_dir}: {len(ok)} {kind}, "
                     f"{len(ok)} fixtures, {len(ok)} recordings")
    if result.check is not None:
        s = result.check.summary
        word = "passes" if s["pass"] == s["total"] else "does NOT pass"
        lines.append(f"  replayci --provider recorded --pack {result.output_dir}: {s['pass']}/{s['total']} "
                     f"passed: the pack {word} offline")
        for c in result.check.cases:
            if c.status != "pass":
                lines.append(f"      {c.contract}/{c.case}: {c.status} {c.classification or c.reason or ''}".rstrip())
    if failed:
        lines.append(style(f"  {failed} spec{'s' if failed != 1 else ''} could not be observed "
                           "(no contract written for them)", fg="red", bold=True))
    return "\n".join(lines) + "\n"
