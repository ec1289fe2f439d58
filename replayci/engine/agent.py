"""The agent loop of a scenario: send, answer the tool calls from recorded results (or the
tools' commands), repeat; and a recorded trajectory replayed as the same outcome. Tool results
are keyed by each tool's key paths, carry its version, and are sanitized when recorded."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks.jsonpath import DescentLimit, compile_path, locations
from ..checks.response import named_calls
from ..checks.trajectory import Loop, ToolResultMissing, judge_step
from ..core.hashing import args_hash
from ..formats.canonical import assistant_message, tool_message
from ..pack.model import NO_TOOL_REPLAY, Contract, ToolReplay
from ..pack.servers import COMMAND_PREFIX
from .tool_command import MAX_TOOL_OUTPUT as MAX_TOOL_OUTPUT
from .tool_command import run_tool_command

NO_RECORDING = {"error": "no recording"}


def tool_mode(setting: str | None, contract: Contract) -> str:
    """The tools' replay mode of a live loop: as set, else auto when the contract has tool
    commands to run, else strict."""
    return setting or ("auto" if contract.tool_commands else "strict")


@dataclass
class ToolTable:
    """Recorded tool results by (tool, args_hash); identical calls get them in recorded order.

    A tool's args_hash covers its configured key paths only; a result recorded under another
    version than the tool's is never served, and is written back until a new one replaces it.
    """

    configs: Mapping[str, ToolReplay] = field(default_factory=dict)
    entries: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    used: dict[tuple[str, str], int] = field(default_factory=dict)
    new: list[dict] = field(default_factory=list)  # results obtained by running tool_commands
    arguments: dict[tuple[str, str], Any] = field(default_factory=dict)  # when known, for recordings
    stale: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # records of another version
    overwritten: set = field(default_factory=set)  # keys whose old results a recording run replaced

    @classmethod
    def from_records(cls, *lists: Any, configs: Mapping[str, ToolReplay] | None = None) -> ToolTable:
        """Every record of every list, in order (lists are appended to each other)."""
        table = cls(configs=dict(configs or {}))
        for records in lists:
            for key, record, arguments in table._records(records):
                if _version_of(record) != table.config(key[0]).version:
                    table.stale.setdefault(key, []).append(record)
                    continue
                table.entries.setdefault(key, []).append(record.get("result"))
                if arguments is not _UNKNOWN:
                    table.arguments.setdefault(key, arguments)
        return table

    @classmethod
    def merged(cls, *lists: Any, configs: Mapping[str, ToolReplay] | None = None) -> ToolTable:
        """One table from several sources that may repeat each other (a fixture's tool_results
        and the recording made from it): per (tool, args_hash) the longest list of results
        wins, the earlier source on ties, so nothing is served twice."""
        table = cls(configs=dict(configs or {}))
        for records in lists:
            mine = cls.from_records(records, configs=configs)
            for own, theirs in ((table.entries, mine.entries), (table.stale, mine.stale)):
                for key, results in theirs.items():
                    if len(results) > len(own.get(key, ())):
                        own[key] = list(results)
            for key, arguments in mine.arguments.items():
                table.arguments.setdefault(key, arguments)
        return table

    def config(self, tool: Any) -> ToolReplay:
        return self.configs.get(tool, NO_TOOL_REPLAY) if isinstance(tool, str) else NO_TOOL_REPLAY

    def key(self, tool: str, arguments: Any) -> str:
        """The args_hash of a call of *tool*: over its key paths only, when it has some."""
        return call_key(arguments, self.config(tool))

    def take(self, tool: str, arguments: Any) -> tuple[bool, Any, str]:
        """(found, result, args_hash) for the next call of *tool* with *arguments*."""
        key = self.key(tool, arguments)
        results = self.entries.get((tool, key), [])
        n = self.used.get((tool, key), 0)
        if n < len(results):
            self.used[(tool, key)] = n + 1
            self.arguments.setdefault((tool, key), arguments)
            return True, results[n], key
        return False, None, key

    def add(self, tool: str, arguments: Any, result: Any, *, overwrite: bool = False) -> str:
        """A result obtained by running the tool's command: served, and kept for the recording
        (in place of a result of another version; with *overwrite*, of every older result of
        the same call). Returns its args_hash."""
        key = self.key(tool, arguments)
        self.stale.pop((tool, key), None)
        if overwrite and (tool, key) not in self.overwritten:
            self.overwritten.add((tool, key))
            self.entries[(tool, key)], self.used[(tool, key)] = [], 0
            self.arguments[(tool, key)] = arguments
        self.entries.setdefault((tool, key), []).append(result)
        self.used[(tool, key)] = self.used.get((tool, key), 0) + 1
        self.arguments.setdefault((tool, key), arguments)
        self.new.append({"tool": tool, "args_hash": key, "arguments": arguments, "result": result})
        return key

    def records(self) -> list[dict]:
        """Every result, sanitized, for a recording: {tool, args_hash, arguments (when known),
        result, version (when the tool has one)}; then the results of other versions."""
        out = []
        for (tool, key), results in self.entries.items():
            config = self.config(tool)
            for result in results:
                record = {"tool": tool, "args_hash": key, "result": sanitize(result, config)}
                if (tool, key) in self.arguments:
                    record["arguments"] = self.arguments[(tool, key)]
                if config.version is not None:
                    record["version"] = config.version
                out.append(record)
        for (tool, key), records in self.stale.items():
            out += [{**r, "args_hash": key, "result": sanitize(r.get("result"), self.config(tool))}
                    for r in records]
        return out

    def sanitized(self, steps: list[dict]) -> list[dict]:
        """A trajectory as it is recorded: each step's tool results sanitized."""
        return [{**s, "tool_results": [{**r, "result": sanitize(r.get("result"), self.config(r.get("tool")))}
                                       for r in s.get("tool_results") or ()]} for s in steps]

    def version_note(self, tool: str, key: str) -> str:
        """Why a call found nothing, when versions are the reason (else "")."""
        wanted = self.config(tool).version
        recorded = sorted({_quoted(_version_of(r)) for r in self.stale.get((tool, key), ())})
        if not recorded:
            return f"no result of {_quoted(wanted)} is recorded" if wanted is not None else ""
        return f"the recorded result is of {', '.join(recorded)}, the tool now has {_quoted(wanted)}"

    def _records(self, records: Any):
        """((tool, args_hash), record, arguments or _UNKNOWN) for each well-formed record; a
        tool with key paths hashes the record's arguments (its args_hash may predate them)."""
        for r in records or ():
            if not (isinstance(r, dict) and isinstance(r.get("tool"), str)):
                continue
            arguments = r.get("arguments", _UNKNOWN)
            keyed = self.config(r["tool"]).key is not None and arguments is not _UNKNOWN
            given = r.get("args_hash") if isinstance(r.get("args_hash"), str) and not keyed else None
            yield (r["tool"], given or self.key(r["tool"], r.get("arguments"))), r, arguments


_UNKNOWN = object()


def _version_of(record: Mapping) -> str | None:
    """A recorded result's version, as text (None: recorded without one)."""
    version = record.get("version")
    return None if version is None else str(version)


def call_key(arguments: Any, config: ToolReplay | None = None) -> str:
    """args_hash(arguments), or of {path: value} over the tool's key paths when it has some;
    arguments no canonical JSON can hold (NaN, from a hostile provider) get a hash of their
    text instead of crashing the loop."""
    if config is not None and config.key is not None:
        arguments = key_arguments(arguments, config.key)
    try:
        return args_hash(arguments)
    except (TypeError, ValueError):
        return args_hash(repr(arguments))


def key_arguments(arguments: Any, paths: tuple[str, ...]) -> dict:
    """{path: the value it matches (the list of them when it matches several)}; a path that
    matches nothing is left out, one too deep or large to walk keys by that fact."""
    out: dict = {}
    for path in paths:
        try:
            found = compile_path(path).find(arguments)
        except DescentLimit as exc:
            out[path] = f"(not evaluated: {exc})"
            continue
        if found:
            out[path] = found[0] if len(found) == 1 else found
    return out


def sanitize(result: Any, config: ToolReplay) -> Any:
    """A tool result as it is recorded: only its `keep` paths, or without its `drop` paths (in
    place of one too deep or large to walk them, a note: never the result unsanitized)."""
    paths = config.keep if config.keep is not None else config.drop
    if config.keep is None and not paths:
        return result
    try:
        matched = [loc for path in paths for loc in locations(path, result)]
    except DescentLimit as exc:
        return f"(not recorded: {exc})"
    return _pruned(result, matched, config.keep is not None)


def _pruned(value: Any, matched: list[tuple], keep: bool) -> Any:
    """*value* with only the *matched* locations (keep) or without them (drop)."""
    if () in matched:
        return value if keep else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None if keep else value
    out = []
    for k, v in items:
        below = [loc[1:] for loc in matched if loc[0] == k]
        if (keep and not below) or (not keep and () in below):
            continue
        out.append((k, _pruned(v, below, keep) if below else v))
    return dict(out) if isinstance(value, dict) else [v for _, v in out]


def drive(contract: Contract, request: dict, call_model: Callable[[dict], dict], table: ToolTable, *,
          tool_mode: str = "strict", cwd: str | None = None, miss_hint: str | None = None,
          call_server: Callable[[str, str, Any], Any] | None = None, judged: bool = True,
          output_tools: frozenset[str] = frozenset()) -> Loop:
    """Run the loop live: send, answer tool calls, repeat.

    *call_model* takes the request with the conversation so far and returns a normalized
    response (a failed call is a ``success: false`` document: it ends the loop). Each answer
    that calls tools is first judged (*judged*, judge_step with *contract*): a departure the
    contract forbids stops the loop there as ``diverged``. A call to one of *output_tools*
    (the recorded session ended on it with no result) ends the loop: no result is asked for.
    Tool calls are answered under *tool_mode* (answer_call); a call left unanswered is
    ``{"error": "no recording"}`` under tool_replay: lenient, else ends the loop as
    ``missing`` (strict). A tool command "mcp:NAME" is answered by *call_server* (command,
    tool, arguments): the tool called on that MCP server.
    """
    messages = list(request.get("messages") or [])
    steps: list[dict] = []
    for _ in range(contract.max_steps):
        sent = {**request, "messages": list(messages)}
        response = call_model(sent)
        step = {"response": response, "tool_results": []}
        steps.append(step)
        calls = response.get("tool_calls") or []
        if not response.get("success", True) or not calls:
            return Loop(steps)
        if any(isinstance(c.get("name"), str) and c["name"] in output_tools for c in calls):
            return Loop(steps)
        departures = judge_step(contract, len(steps), sent, response, steps[:-1]) if judged else []
        if departures:
            return Loop(steps, diverged=tuple(departures))
        messages.append(assistant_message(response))
        for call in named_calls(calls):  # (a name the model sent as an object: its JSON text)
            name, arguments = call.get("name"), call.get("arguments")
            found, result, key = answer_call(contract, table, name, arguments, tool_mode, cwd, call_server)
            record = {"call_id": call.get("id"), "tool": name, "args_hash": key, "result": result}
            if found and table.config(name).version is not None:
                record["version"] = table.config(name).version
            elif not found and contract.tool_replay == "lenient":
                record["result"] = NO_RECORDING
            elif not found:
                hint = _miss_hint(name in dict(contract.tool_commands)) if miss_hint is None else miss_hint
                note = table.version_note(name, key)
                return Loop(steps, missing=ToolResultMissing(name, arguments, key,
                                                             f"{note}; {hint}" if note else hint))
            step["tool_results"].append(record)
            messages.append(tool_message(call.get("id"), record["result"]))
    return Loop(steps, limit_reached=bool(steps and steps[-1]["response"].get("tool_calls")))


def output_tools(*trajectories: Any) -> frozenset[str]:
    """The tools a recorded session ended on: the calls of its last step when no result came
    back for them (an output tool, pydantic-ai's final_result or a forced structured-output
    tool), from the first of *trajectories* (the recording's, the fixture's) that has steps."""
    for trajectory in trajectories:
        if not isinstance(trajectory, list) or not trajectory or not isinstance(trajectory[-1], dict):
            continue
        last = trajectory[-1]
        response = last.get("response") if isinstance(last.get("response"), dict) else {}
        calls = response.get("tool_calls") if isinstance(response.get("tool_calls"), list) else []
        if last.get("tool_results") or not calls:
            return frozenset()
        names = (c.get("name", (c.get("function") if isinstance(c.get("function"), dict) else {}).get("name"))
                 for c in calls if isinstance(c, dict))  # (normalized, or in the fixture's OpenAI form)
        return frozenset(n for n in names if isinstance(n, str))
    return frozenset()


def answer_call(contract: Contract, table: ToolTable, name: Any, arguments: Any, mode: str,
                cwd: str | None, call_server: Callable[[str, str, Any], Any] | None = None
                ) -> tuple[bool, Any, str]:
    """(found, result, args_hash) for one tool call under the tools' replay *mode*: strict
    answers from the table only; auto from the table, else by running the tool's command
    (recorded); record and off always run the command (record overwrites the recorded
    results, off records nothing). A tool without a command is answered from the table."""
    command = dict(contract.tool_commands).get(name) if mode != "strict" else None
    if command is None or mode == "auto":
        found, result, key = table.take(name, arguments)
        if found or command is None:
            return found, result, key
    if command.startswith(COMMAND_PREFIX):  # only live runs get here, and they give call_server
        result = call_server(command, name, arguments)
    else:
        result = run_tool_command(command, arguments, contract.tool_ms, cwd)
    if mode == "off":
        return True, result, table.key(name, arguments)
    return True, result, table.add(name, arguments, result, overwrite=mode == "record")


def _miss_hint(has_command: bool) -> str:
    """How to give a tool call with no recorded result one."""
    if has_command:
        return "its tool_commands entry runs only under --tool-replay auto, record or off"
    return ("add it to the fixture's tool_results, give the contract a "
            "tool_commands entry for it, or set tool_replay: lenient")


def trajectory_summary(steps: list[dict]) -> list[dict]:
    """The trajectory for reports: per step the calls (tool, arguments, result) and the text."""
    out = []
    for n, s in enumerate(steps, 1):
        r = s["response"]
        results = {t.get("call_id"): t.get("result") for t in s.get("tool_results") or ()
                   if isinstance(t.get("call_id"), str)}
        out.append({"step": n,
                    "calls": [{"tool": c.get("name"), "arguments": c.get("arguments"),
                               "result": results.get(c["id"]) if isinstance(c.get("id"), str) else None}
                              for c in r.get("tool_calls") or []],
                    "content": r.get("content"),
                    "error": r.get("error")})
    return out


def replay_recorded(trajectory: list[dict], contract: Contract) -> Loop:
    """A recorded trajectory as a loop outcome (recorded mode replays it step by step): each
    result keyed by its tool's key paths; the first result of another version than its
    tool's is ``missing``."""
    configs = contract.tool_configs
    steps, missing = [], None
    for s in trajectory:
        arguments = {c.get("id"): c.get("arguments") for c in s["response"].get("tool_calls") or ()
                     if isinstance(c.get("id"), str)}
        results = []
        for r in s.get("tool_results") or ():
            config = _config_of(r, configs)
            cid = r.get("call_id") if isinstance(r, dict) else None
            call = arguments.get(cid, _UNKNOWN) if isinstance(cid, str) else _UNKNOWN  # (an odd id answers none)
            if call is not _UNKNOWN and config.key is not None:
                r = {**r, "args_hash": call_key(call, config)}
            if missing is None and stale_result(r, configs):
                missing = ToolResultMissing(
                    r.get("tool"), None if call is _UNKNOWN else call, r.get("args_hash"),
                    f"the recorded trajectory used {_quoted(_version_of(r))}, the tool now has "
                    f"{_quoted(config.version)}; re-record it with a live provider")
            results.append(r)
        steps.append({"response": s["response"], "tool_results": results})
    # (a last step whose calls got no result ended on an output tool: the loop was over)
    limit = (len(steps) >= contract.max_steps and bool(steps and steps[-1]["response"].get("tool_calls"))
             and bool(steps[-1]["tool_results"]))
    return Loop(steps, missing=missing, limit_reached=limit)


def _config_of(record: Any, configs: Mapping[str, ToolReplay]) -> ToolReplay:
    tool = record.get("tool") if isinstance(record, dict) else None
    return configs.get(tool, NO_TOOL_REPLAY) if isinstance(tool, str) else NO_TOOL_REPLAY


def _quoted(version: str | None) -> str:
    return "no version" if version is None else f'version "{version}"'


def stale_result(record: Any, configs: Mapping[str, ToolReplay]) -> bool:
    """Whether a recorded step's tool result is of another version than its tool's."""
    if not isinstance(record, dict) or record.get("result") == NO_RECORDING:
        return False
    return _version_of(record) != _config_of(record, configs).version


def stale_trajectory(trajectory: Any, contract: Contract) -> bool:
    """Whether a recorded trajectory (as read) used a result of another tool version."""
    configs = contract.tool_configs
    return isinstance(trajectory, list) and any(
        stale_result(r, configs) for s in trajectory if isinstance(s, dict)
        for r in s.get("tool_results") or () if isinstance(s.get("tool_results"), list))
