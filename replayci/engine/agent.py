"""The agent loop of a scenario: send, answer the tool calls from recorded results (or the
tools' commands), repeat; and a recorded trajectory replayed as the same outcome."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checks.trajectory import Loop, ToolResultMissing
from ..core.hashing import args_hash
from ..core.provider_table import KEY_VARIABLES
from ..formats.canonical import assistant_message, tool_message

if TYPE_CHECKING:
    from ..pack.model import Contract

NO_RECORDING = {"error": "no recording"}


@dataclass
class ToolTable:
    """Recorded tool results by (tool, args_hash); identical calls get them in recorded order."""

    entries: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    used: dict[tuple[str, str], int] = field(default_factory=dict)
    new: list[dict] = field(default_factory=list)  # results obtained by running tool_commands
    arguments: dict[tuple[str, str], Any] = field(default_factory=dict)  # when known, for recordings

    @classmethod
    def from_records(cls, *lists: Any) -> ToolTable:
        """Every record of every list, in order (lists are appended to each other)."""
        table = cls()
        for records in lists:
            for key, result, arguments in _records(records):
                table.entries.setdefault(key, []).append(result)
                if arguments is not _UNKNOWN:
                    table.arguments.setdefault(key, arguments)
        return table

    @classmethod
    def merged(cls, *lists: Any) -> ToolTable:
        """One table from several sources that may repeat each other (a fixture's tool_results
        and the recording made from it): per (tool, args_hash) the longest list of results
        wins, the earlier source on ties, so nothing is served twice."""
        table = cls()
        for records in lists:
            mine = cls.from_records(records)
            for key, results in mine.entries.items():
                if len(results) > len(table.entries.get(key, ())):
                    table.entries[key] = list(results)
            for key, arguments in mine.arguments.items():
                table.arguments.setdefault(key, arguments)
        return table

    def take(self, tool: str, arguments: Any) -> tuple[bool, Any, str]:
        """(found, result, args_hash) for the next call of *tool* with *arguments*."""
        key = call_key(arguments)
        results = self.entries.get((tool, key), [])
        n = self.used.get((tool, key), 0)
        if n < len(results):
            self.used[(tool, key)] = n + 1
            self.arguments.setdefault((tool, key), arguments)
            return True, results[n], key
        return False, None, key

    def add(self, tool: str, arguments: Any, result: Any) -> None:
        """A result obtained by running the tool's command: served, and kept for the recording."""
        key = call_key(arguments)
        self.entries.setdefault((tool, key), []).append(result)
        self.used[(tool, key)] = self.used.get((tool, key), 0) + 1
        self.arguments.setdefault((tool, key), arguments)
        self.new.append({"tool": tool, "args_hash": key, "arguments": arguments, "result": result})

    def records(self) -> list[dict]:
        """Every result, for a recording: {tool, args_hash, arguments (when known), result}."""
        out = []
        for (tool, key), results in self.entries.items():
            for result in results:
                record = {"tool": tool, "args_hash": key, "result": result}
                if (tool, key) in self.arguments:
                    record["arguments"] = self.arguments[(tool, key)]
                out.append(record)
        return out


_UNKNOWN = object()


def call_key(arguments: Any) -> str:
    """args_hash(arguments); arguments no canonical JSON can hold (NaN, from a hostile
    provider) get a hash of their text instead of crashing the loop."""
    try:
        return args_hash(arguments)
    except (TypeError, ValueError):
        return args_hash(repr(arguments))


def _records(records: Any):
    """((tool, args_hash), result, arguments or _UNKNOWN) for each well-formed record."""
    for r in records or ():
        if isinstance(r, dict) and isinstance(r.get("tool"), str):
            key = r.get("args_hash") if isinstance(r.get("args_hash"), str) else args_hash(r.get("arguments"))
            yield (r["tool"], key), r.get("result"), r.get("arguments", _UNKNOWN)


def _tool_env() -> dict:
    """The environment of a tool command: ours, minus every variable an API key comes from."""
    return {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}


MAX_TOOL_OUTPUT = 8 * 1024 * 1024  # bytes of JSON a tool command may print


def run_tool_command(command: str, arguments: Any, timeout_ms: int, cwd: str | None = None) -> Any:
    """Run a tool command (in *cwd*: the pack directory): arguments as JSON on stdin, the
    result as JSON on stdout. A failure is the result {"error": ...}, never an exception.

    Output is read up to MAX_TOOL_OUTPUT bytes: a command that prints more is stopped."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return {"error": f"tool command cannot be parsed: {exc}"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=cwd or None, env=_tool_env())
    except OSError as exc:
        return {"error": f"tool command failed to start: {exc.strerror}"}
    out, err, too_much = bytearray(), bytearray(), []

    def read(stream, sink: bytearray, limit: int, stop: bool) -> None:
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                return
            if len(sink) + len(chunk) > limit:
                sink += chunk[:limit - len(sink)]
                if stop:  # stdout over the limit: the result is refused anyway
                    too_much.append(True)
                    proc.kill()
                    return
                continue  # stderr: keep the start, drain the rest
            sink += chunk

    def write() -> None:
        try:
            proc.stdin.write(json.dumps(arguments).encode("utf-8"))
            proc.stdin.close()
        except OSError:  # it did not read its input (exited, or closed stdin)
            pass

    threads = [threading.Thread(target=read, args=(proc.stdout, out, MAX_TOOL_OUTPUT, True), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, err, 65536, False), daemon=True),
               threading.Thread(target=write, daemon=True)]
    for t in threads:
        t.start()
    try:
        proc.wait(timeout=timeout_ms / 1000)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return {"error": f"tool command timed out after {timeout_ms} ms"}
    finally:
        for t in threads:
            t.join(timeout=5)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
    if too_much:
        return {"error": f"tool command printed more than {MAX_TOOL_OUTPUT:,} bytes"}
    stdout = out.decode("utf-8", "replace")
    if proc.returncode != 0:
        stderr = err.decode("utf-8", "replace")
        return {"error": f"tool command exited {proc.returncode}: {stderr.strip()[:200]}"}
    try:
        return json.loads(stdout)
    except ValueError:
        return {"error": f"tool command printed no JSON: {stdout.strip()[:200]}"}


def drive(contract: Contract, request: dict, call_model: Callable[[dict], dict], table: ToolTable, *,
          run_commands: bool, cwd: str | None = None, miss_hint: str | None = None) -> Loop:
    """Run the loop live: send, answer tool calls from the table, repeat.

    *call_model* takes the request with the conversation so far and returns a normalized
    response (a failed call is a ``success: false`` document: it ends the loop). Tool calls
    are answered from *table*; a miss runs the tool's command when *run_commands*, else is
    ``{"error": "no recording"}`` under tool_replay: lenient, else ends the loop as
    ``missing`` (strict).
    """
    messages = list(request.get("messages") or [])
    commands = dict(contract.tool_commands)
    steps: list[dict] = []
    for _ in range(contract.max_steps):
        response = call_model({**request, "messages": list(messages)})
        step = {"response": response, "tool_results": []}
        steps.append(step)
        calls = response.get("tool_calls") or []
        if not response.get("success", True) or not calls:
            return Loop(steps)
        messages.append(assistant_message(response))
        for call in calls:
            name, arguments = call.get("name"), call.get("arguments")
            found, result, key = table.take(name, arguments)
            if not found:
                if run_commands and name in commands:
                    result = run_tool_command(commands[name], arguments, contract.tool_ms, cwd)
                    table.add(name, arguments, result)
                elif contract.tool_replay == "lenient":
                    result = NO_RECORDING
                else:
                    hint = _miss_hint(name in commands) if miss_hint is None else miss_hint
                    return Loop(steps, missing=ToolResultMissing(name, arguments, key, hint))
            step["tool_results"].append({"call_id": call.get("id"), "tool": name, "args_hash": key,
                                         "result": result})
            messages.append(tool_message(call.get("id"), result))
    return Loop(steps, limit_reached=bool(steps and steps[-1]["response"].get("tool_calls")))


def _miss_hint(has_command: bool) -> str:
    """How to give a tool call with no recorded result one."""
    if has_command:
        return "its tool_commands entry runs only under --replay auto or record"
    return ("add it to the fixture's tool_results, give the contract a "
            "tool_commands entry for it, or set tool_replay: lenient")


def trajectory_summary(steps: list[dict]) -> list[dict]:
    """The trajectory for reports: per step the calls (tool, arguments, result) and the text."""
    out = []
    for n, s in enumerate(steps, 1):
        r = s["response"]
        results = {t.get("call_id"): t.get("result") for t in s.get("tool_results") or ()}
        out.append({"step": n,
                    "calls": [{"tool": c.get("name"), "arguments": c.get("arguments"),
                               "result": results.get(c.get("id"))} for c in r.get("tool_calls") or []],
                    "content": r.get("content"),
                    "error": r.get("error")})
    return out


def replay_recorded(trajectory: list[dict], contract: Contract) -> Loop:
    """A recorded trajectory as a loop outcome (recorded mode replays it step by step)."""
    steps = [{"response": s["response"], "tool_results": list(s.get("tool_results") or ())}
             for s in trajectory]
    limit = len(steps) >= contract.max_steps and bool(steps and steps[-1]["response"].get("tool_calls"))
    return Loop(steps, limit_reached=limit)
