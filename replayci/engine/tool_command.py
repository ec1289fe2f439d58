"""A scenario's tool command: a program run with the call's arguments as JSON on stdin, its
result read as JSON from stdout. It is untrusted: whatever it prints or starts, the run gets an
answer within the command's timeout, and nothing it started outlives it."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from ..core.jsonvalue import NotJSONValue, strict_loads, unicode_only
from ..core.provider_table import KEY_VARIABLES

if TYPE_CHECKING:
    import subprocess

MAX_TOOL_OUTPUT = 8 * 1024 * 1024  # bytes of JSON a tool command may print
_MARK = "REPLAYCI_TOOL_RUN"  # set in a command's environment: what its descendants are found by
_DRAIN_S = 0.2  # after the command exits: how long what it started may keep its output open
_JOIN_S = 2.0


def _tool_env(mark: str) -> dict:
    """The environment of a tool command: ours, minus every variable an API key comes from."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env[_MARK] = mark
    return env


def run_tool_command(command: str, arguments: Any, timeout_ms: int, cwd: str | None = None) -> Any:
    """Run a tool command (in *cwd*: the pack directory): arguments as JSON on stdin, the
    result as JSON on stdout. A failure is the result {"error": ...}, never an exception.

    Output is read up to MAX_TOOL_OUTPUT bytes: a command that prints more is stopped. When
    the command ends (or its timeout does), every process it started is stopped too, those
    that left its process group included."""
    import shlex  # why: only scenarios with tool commands need them, not every recorded run
    import subprocess

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return {"error": f"tool command cannot be parsed: {exc}"}
    mark = uuid.uuid4().hex
    try:
        # Its own process group: a command stopped also stops what it started.
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=cwd or None, env=_tool_env(mark),
                                start_new_session=os.name == "posix")
    except OSError as exc:
        return {"error": f"tool command failed to start: {exc.strerror}"}
    run = _Run(proc, mark, json.dumps(arguments).encode("utf-8"))
    try:
        proc.wait(timeout=timeout_ms / 1000)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    run.finish(stop_now=timed_out)
    if timed_out:
        return {"error": f"tool command timed out after {timeout_ms} ms"}
    return run.result()


class _Run:
    """A started command, its output read by threads (stdout up to the limit, stderr's start)."""

    def __init__(self, proc: subprocess.Popen, mark: str, stdin: bytes) -> None:
        self.proc, self.mark, self.stdin = proc, mark, stdin
        self.out, self.err, self.too_much = bytearray(), bytearray(), False
        self.threads = [threading.Thread(target=self._read, args=(proc.stdout, self.out, MAX_TOOL_OUTPUT, True),
                                         daemon=True),
                        threading.Thread(target=self._read, args=(proc.stderr, self.err, 65536, False), daemon=True),
                        threading.Thread(target=self._write, daemon=True)]
        for t in self.threads:
            t.start()

    def _read(self, stream, sink: bytearray, limit: int, stop: bool) -> None:
        while True:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                return
            if len(sink) + len(chunk) > limit:
                sink += chunk[:limit - len(sink)]
                if stop:  # stdout over the limit: the result is refused anyway
                    self.too_much = True
                    _stop(self.proc, self.mark)
                    return
                continue  # stderr: keep the start, drain the rest
            sink += chunk

    def _write(self) -> None:
        try:
            self.proc.stdin.write(self.stdin)
            self.proc.stdin.close()
        except (OSError, ValueError):  # it did not read its input (exited, or closed stdin)
            pass

    def finish(self, *, stop_now: bool) -> None:
        """The command is done (or out of time): stop it and everything it started, then
        collect its output. What it started may not keep the output open, nor keep running."""
        if stop_now:
            _stop(self.proc, self.mark)
        self.proc.wait()
        readers = self.threads[:2]
        deadline = time.monotonic() + _DRAIN_S
        for t in readers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        # What it left behind: what carries its mark, and its group when the output is still open.
        _stop(self.proc, self.mark, group=any(t.is_alive() for t in readers))
        for t in self.threads:
            t.join(timeout=_JOIN_S)
        if any(t.is_alive() for t in self.threads):
            return  # a stream still in use is left open rather than waited for
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    def result(self) -> Any:
        if self.too_much:
            return {"error": f"tool command printed more than {MAX_TOOL_OUTPUT:,} bytes"}
        stdout = self.out.decode("utf-8", "replace")
        code = self.proc.returncode
        if code is not None and code < 0:
            try:
                name = f" ({signal.Signals(-code).name})"
            except ValueError:
                name = ""
            return {"error": f"tool command was killed by signal {-code}{name}"}
        if code != 0:
            stderr = self.err.decode("utf-8", "replace")
            return {"error": f"tool command exited {code}: {stderr.strip()[:200]}"}
        try:
            return unicode_only(strict_loads(stdout))
        except ValueError as exc:
            why = f" ({exc})" if isinstance(exc, NotJSONValue) else ""
            return {"error": f"tool command printed no JSON{why}: {stdout.strip()[:200]}"}
        except RecursionError:
            return {"error": "tool command printed JSON nested too deeply to read"}


def _stop(proc: subprocess.Popen, mark: str, *, group: bool = True) -> None:
    """Kill a tool command with every process of its group (unless not *group*), and every
    process that carries its mark (those that left the group: a new session, a daemon)."""
    try:
        if not group:
            pass
        elif os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:  # it (and its group) ended meanwhile
        pass
    for pid in _marked(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _marked(mark: str) -> list[int]:
    """The processes whose environment carries *mark* (where /proc tells; elsewhere none)."""
    needle = f"{_MARK}={mark}".encode()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except OSError:  # gone, or not ours to read
            continue
    return found
