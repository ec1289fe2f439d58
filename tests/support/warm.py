"""Warm Pythons: the applications the tests run under `replayci proxy -- COMMAND`, and the CLI itself.

Importing a provider SDK costs one to four seconds of CPU, and importing the CLI's commands half a
second; the tests run applications dozens of times and `python -m replayci` hundreds of times. A
server process imports the modules once; each command is a small client that hands the server its
arguments, environment, working directory and its stdin, stdout and stderr, and the server forks a
process that runs the command with them and reports its exit status.

    python warm.py serve SOCKET MODULE...     # import MODULEs, then fork a process per command
    python warm.py run SOCKET SCRIPT ARG...   # run SCRIPT in a fork of the server; exit as it does
    python warm.py serve-cli SOCKET           # import replayci's CLI, then fork a process per command
    python -I -S warm.py cli SOCKET ARG...    # `python -m replayci ARG...` in a fork of that server
    python warm.py keep SOCKET                # start servers on request, shared by a session's processes

An application's process (`run`) is the application as it would run: the real SDKs over real HTTP,
its own environment (the proxy's base URLs included), its output on the proxy's pipes, its exit
status. A signal the client receives (the proxy's interrupt) is passed on to the script; a client
that goes away takes its script with it.

The CLI's process (`cli`) is a real process running the real `replayci` main, started as
`python -m replayci` starts it: runpy's `-m` path with the test's argv, environment, working
directory (and sys.path[0]), umask and resource limits, on the test's own stdin, stdout and stderr
(a closed one stays closed), with the interpreter's own stdio settings, its handling of SystemExit,
KeyboardInterrupt and uncaught errors, and its shutdown (non-daemon threads joined, atexit, flushes:
a failed flush of stdout exits 120). The server imports only the CLI's modules (its commands'
modules, none of which imports a provider SDK, httpx or mcp: it refuses to start if one did), so a
command still imports what it imports lazily, as it would. The client's exit mirrors the command's:
its exit code, or death by the same signal. SIGINT, SIGTERM and the other catchable signals the
client receives go to the command; a client killed (SIGKILL) takes the command with it, a moment
later — tests that SIGKILL the CLI and look at what it left at once run it cold. What the server
cannot make the same — the interpreter's start-up, which reads the environment — it never
pretends: a client whose start-up environment (PYTHON*, locale, TZ, HOME, temp dir) differs from
the server's runs `python -m replayci` itself, cold, in its own process (tests/support/warmed.py
starts a server per start-up environment, so this is the exception). Process-level facts a test
could read about its child — its pid, its resource usage from wait4, its process group — are the
client's: tests measuring start-up (imports, `-X` flags) run the CLI cold, and tests measuring a
command's CPU time or peak memory read them from WARM_USAGE (below).
The client imports only the standard library, so a command starts in milliseconds. With WARM_USAGE
set in a client's environment, the client writes its command's CPU time and peak memory (the
server's wait4) to that file as JSON: a test measuring them reads that file, and reads its child's
own wait4 when no file appeared (the command ran cold, in the client's process). With WARM_LOG set
in the server's environment, each command's argv, directory and CPU time are appended to that file.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

_FDS = 3  # stdin, stdout, stderr
# What the server sends back when a command ends: its exit status, CPU seconds and peak memory (wait4's).
_STATUS = struct.Struct("!idq")
# What the interpreter reads from the environment while it starts (flags, paths, locale, stdio
# encoding, hash seed, time zone, user site, temp dir): a command started warm must see the same.
STARTUP_PREFIXES = ("PYTHON", "LC_")
STARTUP_NAMES = ("LANG", "LANGUAGE", "TZ", "HOME", "TMPDIR", "TEMP", "TMP")
# Modules the CLI's server must not have imported: the recorded path never imports them.
NEVER_WARM = ("openai", "anthropic", "google.genai", "boto3", "botocore", "mcp", "httpx")
# Signals the CLI's client passes on to the command (SIGKILL and SIGSTOP cannot be caught).
FORWARDED = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGUSR1",
                                                     "SIGUSR2", "SIGTERM", "SIGALRM") if hasattr(signal, name))


def startup_environment(environ) -> dict[str, str]:
    """The part of an environment the interpreter reads while it starts."""
    return {k: v for k, v in environ.items() if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES}


def serve(path: str, modules: list[str]) -> None:
    """Import MODULEs, then fork a runner per connection until killed."""
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            pass
    _serve(path, "script")


def serve_cli(path: str) -> None:
    """Import the CLI as `python -m replayci` would before a command runs (every command's module),
    then fork a command per connection."""
    del sys.path[0]  # this file's folder; a command's sys.path[0] is its working directory, as under -m
    import warnings

    with warnings.catch_warnings(record=True) as shown:
        import replayci.cli as package

        before = dict(vars(package))  # as __main__.py finds it: `main` the console script, not main.py
        main = package.import_quietly("replayci.cli.main")
        for module in sorted({module for module, _ in main.COMMANDS.values()}):
            package.import_quietly(f"replayci.cli.{module}")
        vars(package).clear()
        vars(package).update(before)
    leaked = [name for name in NEVER_WARM if name in sys.modules]
    if leaked or shown:  # a cold command would not have them / would have printed them
        raise SystemExit(f"warm.py: the CLI's modules imported {leaked} or warned {[str(w) for w in shown]}")
    with open(path + ".env", "w", encoding="utf-8") as fh:
        json.dump(startup_environment(os.environ), fh)
    _serve(path, "cli")


def _connections(path: str, between=lambda: None):
    """Listen at PATH and yield (listener, connection) per client, until this process is told to
    stop (SIGTERM) or its parent goes; BETWEEN runs between connections (at least every 0.5 s)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the socket appears only once it accepts
    listener.settimeout(0.5)
    parent = os.getppid()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    while os.getppid() == parent and not stopping:  # the test session gone, the server goes too
        between()
        try:
            conn, _ = listener.accept()
        except (TimeoutError, InterruptedError):
            continue
        conn.settimeout(None)
        yield listener, conn
    listener.close()


def _serve(path: str, kind: str) -> None:
    # Reaping between connections: the runners' CPU time counts as the server's, as a command's would.
    for listener, conn in _connections(path, between=_reap):
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            listener.close()
            try:
                _runner(conn, kind)
            finally:
                os._exit(0)
        conn.close()
    _reap(block=True)


def _reap(block: bool = False) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _runner(conn: socket.socket, kind: str) -> None:
    """Fork the command with the client's descriptors, pass on its signals, send back its status."""
    import threading

    message, fds, _, _ = socket.recv_fds(conn, 1 << 22, _FDS)
    spec = json.loads(message)
    pid = os.fork()
    if pid == 0:
        conn.close()
        try:
            _run_cli(spec, fds) if kind == "cli" else _run_script(spec, fds)
        finally:  # only a failure of this file's own comes here: loud, never a command's status
            import traceback

            traceback.print_exc()
            os._exit(125)
    for fd in fds:
        os.close(fd)
    lock, done = threading.Lock(), []

    def watch() -> None:  # a signal number from the client goes to the command; the client gone kills it
        while True:
            data = conn.recv(1)
            with lock:  # the command is not reaped while this holds: its pid is never another's
                if done:
                    return
                _kill(pid, data[0] if data else signal.SIGKILL)
            if not data:
                return

    threading.Thread(target=watch, daemon=True).start()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with lock:
        done.append(True)
    _, status, usage = os.wait4(pid, 0)
    if os.environ.get("WARM_LOG"):  # profiling: what each command cost
        with open(os.environ["WARM_LOG"], "a", encoding="utf-8") as fh:
            fh.write(json.dumps([spec["argv"][:4], spec["cwd"], usage.ru_utime + usage.ru_stime]) + "\n")
    try:
        conn.sendall(_STATUS.pack(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime,
                                  usage.ru_maxrss))
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


def _run_cli(spec: dict, fds: list[int]) -> None:
    """In the forked process: become `python -m replayci ARGS` as the client was started, run it, exit."""
    _take_process(spec, fds)
    os.chdir(spec["cwd"])
    os.environ.clear()
    os.environ.update(spec["env"])
    sys.path.insert(0, os.getcwd())  # what -m puts first
    like = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
    streams = [_stdio(fd, like[fd]) if fd in spec["open"] else None for fd in range(_FDS)]
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    _main_module()
    sys.argv = ["-m", *spec["argv"]]
    code, interrupted = 0, False
    try:
        import runpy

        runpy._run_module_as_main("replayci", alter_argv=True)  # exactly what `python -m` calls
    except SystemExit as stop:
        code = _exit_code(stop)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        interrupted = True
    except BaseException:  # noqa: BLE001 - shown as the interpreter shows it
        sys.excepthook(*sys.exc_info())
        code = 1
    _finish(code, interrupted)


def _take_process(spec: dict, fds: list[int]) -> None:
    """The client's descriptors, umask and resource limits; nothing of the server's left open."""
    import resource

    received = dict(zip(spec["open"], fds, strict=True))
    for target in range(_FDS):
        if target in received:
            os.dup2(received[target], target)
        else:
            os.close(target)
    os.closerange(_FDS, 1 << 16)  # the received copies, and whatever the server held
    os.umask(spec["umask"])
    for name, limits in spec["limits"].items():
        which = getattr(resource, name)
        if resource.getrlimit(which) != tuple(limits):
            resource.setrlimit(which, tuple(limits))


def _stdio(fd: int, like):
    """A standard stream as the interpreter makes it at start-up (Python/pylifecycle.c create_stdio)."""
    import io

    buffered, write = not like.write_through, fd != 0  # write_through: -u or PYTHONUNBUFFERED
    buffering = -1 if buffered or not write else 0
    buf = open(fd, "wb" if write else "rb", buffering, closefd=False)  # noqa: SIM115
    raw = buf.raw if buffering else buf
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    line = buffered and (raw.isatty() or fd == 2)
    stream = io.TextIOWrapper(buf, like.encoding, like.errors, "\n", line, not buffered)
    stream.mode = "w" if write else "r"
    return stream


def _main_module() -> None:
    """A fresh, empty __main__, as the interpreter starts with (runpy fills it in)."""
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main


def _exit_code(stop: SystemExit) -> int:
    """The exit status the interpreter makes of an uncaught SystemExit."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    try:
        print(stop.code, file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass
    return 1


def _finish(code: int, interrupted: bool) -> None:
    """The interpreter's shutdown: threads, atexit, flushes (120 if stdout's fails); an uncaught
    KeyboardInterrupt ends the process by SIGINT, as Python does."""
    import atexit
    import threading
    import types

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception as exc:  # noqa: BLE001 - stdout's reported as the interpreter reports it
            if stream is sys.stdout:
                sys.unraisablehook(types.SimpleNamespace(exc_type=type(exc), exc_value=exc, exc_traceback=None,
                                                         err_msg=None, object=stream))
            code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
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
    code = _status(conn)
    return 1 if code is None else code if code >= 0 else 128 - code


def cli(path: str, args: list[str]) -> None:
    """`python -m replayci ARGS` in a fork of the CLI's server at PATH (cold if the start-up differs);
    leave as it did."""
    opened = [fd for fd in range(_FDS) if _is_open(fd)]
    for _ in range(_FDS - len(opened)):  # a closed standard descriptor stays closed: no file of ours takes it
        os.open(os.devnull, os.O_RDONLY)
    with open(path + ".env", encoding="utf-8") as fh:
        if json.load(fh) != startup_environment(os.environ):
            os.execv(sys.executable, [sys.executable, "-m", "replayci", *args])
    pending: list[int] = []
    conn: list[socket.socket] = []

    def forward(signum, _frame):
        if conn:
            conn[0].sendall(bytes([signum]))
        else:
            pending.append(signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    conn.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
    conn[0].connect(path)
    spec = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ), "open": opened, "umask": _umask(),
            "limits": _limits()}
    socket.send_fds(conn[0], [json.dumps(spec).encode()], opened)
    for signum in pending:
        conn[0].sendall(bytes([signum]))
    code = _status(conn[0])
    if code is None:
        if _is_open(2):
            os.write(2, b"warm.py: the CLI's server went away\n")
        os._exit(125)
    if code < 0:  # the command died of a signal: so does the client
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def _status(conn: socket.socket) -> int | None:
    """The command's exit status; its resource usage goes to the file WARM_USAGE names, if set."""
    data = b""
    while len(data) < _STATUS.size:
        try:
            chunk = conn.recv(_STATUS.size - len(data))
        except InterruptedError:
            continue
        if not chunk:
            return None
        data += chunk
    code, cpu, maxrss = _STATUS.unpack(data)
    if os.environ.get("WARM_USAGE"):
        with open(os.environ["WARM_USAGE"], "w", encoding="utf-8") as fh:
            json.dump({"cpu": cpu, "ru_maxrss": maxrss}, fh)
    return code


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _limits() -> dict[str, list[int]]:
    import resource

    return {name: list(resource.getrlimit(getattr(resource, name)))
            for name in dir(resource) if name.startswith("RLIMIT_")}


def launch(mode: str, sock: str, modules, env: dict):
    """Start `warm.py MODE SOCK MODULE...` with ENV; the process once it accepts at SOCK, or None
    if it ended or took two minutes first (then it is killed)."""
    import subprocess
    import time

    server = subprocess.Popen([sys.executable, __file__, mode, sock, *modules], env=env, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not os.path.exists(sock):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            server.wait()
            return None
        time.sleep(0.02)
    return server


def keep(path: str) -> None:
    """Start servers on request, once each, for every test process of a session; stop them all when
    told to (SIGTERM) or when the session is gone."""
    import threading

    started: dict = {}  # name: the server's process (None if it did not start)
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    def start(ask: dict) -> str:
        with guard:
            lock = locks.setdefault(ask["name"], threading.Lock())
        sock = os.path.join(os.path.dirname(path), ask["name"])
        with lock:  # one start per server; a second asker waits for the first's
            if ask["name"] not in started:
                started[ask["name"]] = launch(ask["mode"], sock, ask["modules"], ask["env"])
        return sock if started[ask["name"]] else ""

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.sendall(start(json.loads(_line(conn))).encode() + b"\n")

    for _, conn in _connections(path):
        threading.Thread(target=answer, args=(conn,), daemon=True).start()
    servers = [server for server in started.values() if server]
    for server in servers:
        server.terminate()
    for server in servers:  # waited for: their commands' CPU time counts as the session's
        server.wait()


def ask_keeper(path: str, ask: dict) -> str:
    """The socket of the server the keeper at PATH runs for ASK (starting it on first ask), or ""."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        conn.sendall(json.dumps(ask).encode() + b"\n")
        return _line(conn).decode().strip()


def _line(conn: socket.socket) -> bytes:
    """What the peer sends up to its first newline (what it sent, if it closes before one)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return data


if __name__ == "__main__":
    if sys.argv[1] == "keep":
        keep(sys.argv[2])
    elif sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "serve-cli":
        serve_cli(sys.argv[2])
    elif sys.argv[1] == "cli":
        cli(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3:]))
