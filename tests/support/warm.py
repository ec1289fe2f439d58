"""A warm Python for the applications the tests run under `replayci proxy -- COMMAND`.

Importing a provider SDK costs one to four seconds of CPU, and the proxy tests run an application
dozens of times. One server process imports the SDKs once; each command is a small client that
hands the server its arguments, environment, working directory and its stdin, stdout and stderr,
and the server forks a process that runs the script with them and reports its exit status. The
forked process is the application as it would run: the real SDKs over real HTTP, its own
environment (the proxy's base URLs included), its output on the proxy's pipes, its exit status.

    python warm.py serve SOCKET MODULE...    # import MODULEs, then fork a process per command
    python warm.py run SOCKET SCRIPT ARG...  # run SCRIPT in a fork of the server; exit as it does

The client imports only the standard library, so a command starts in milliseconds. A signal the
client receives (the proxy's interrupt) is passed on to the script; a client that goes away takes
its script with it.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import threading

_FDS = 3  # stdin, stdout, stderr


def serve(path: str, modules: list[str]) -> None:
    """Import MODULEs, then fork a runner per connection until killed."""
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the socket appears only once it accepts
    listener.settimeout(0.5)
    parent = os.getppid()
    while os.getppid() == parent:  # the test session gone, the server goes too
        _reap()  # so that the runners' CPU time counts as the server's, as a command's would
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            listener.close()
            try:
                _runner(conn)
            finally:
                os._exit(0)
        conn.close()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _runner(conn: socket.socket) -> None:
    """Fork the script with the client's descriptors, pass on its signals, send back its status."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 22, _FDS)
    spec = json.loads(message)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_script(spec, fds)
    for fd in fds:
        os.close(fd)
    lock, done = threading.Lock(), []

    def watch() -> None:  # a signal number from the client goes to the script; the client gone kills it
        while True:
            data = conn.recv(1)
            with lock:  # the script is not reaped while this holds: its pid is never another's
                if done:
                    return
                _kill(pid, data[0] if data else signal.SIGKILL)
            if not data:
                return

    threading.Thread(target=watch, daemon=True).start()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with lock:
        done.append(True)
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(struct.pack("!i", os.waitstatus_to_exitcode(status)))
    except OSError:
        pass


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _run_script(spec: dict, fds: list[int]) -> None:
    """In the forked process: become the command, run the script as __main__, exit with its status."""
    import runpy
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(spec["cwd"])
    os.environ.clear()
    os.environ.update(spec["env"])
    script = spec["argv"][0]
    sys.argv = list(spec["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    sys.stdin = open(0, closefd=False, encoding="utf-8")  # noqa: SIM115 - the process's own streams
    sys.stdout = open(1, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - the script's own failure, shown as Python shows it
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os._exit(code)


def run(path: str, argv: list[str]) -> int:
    """Run ARGV in a fork of the server at PATH; return its exit status."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    spec = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(spec).encode()], [0, 1, 2])

    def forward(signum, _frame):
        conn.sendall(bytes([signum]))

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    data = b""
    while len(data) < 4:
        try:
            chunk = conn.recv(4 - len(data))
        except InterruptedError:
            continue
        if not chunk:
            return 1
        data += chunk
    code = struct.unpack("!i", data)[0]
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3:]))
