"""The command group, exit codes, the error guard every command runs under, and the console script."""
from __future__ import annotations

import functools
import os
import signal
import sys

import click

from ..core.errors import ConfigError, did_you_mean
from ..core.version import __version__
from . import import_quietly

EXIT_OK, EXIT_GATE, EXIT_CONFIG, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

# name -> the cli module defining it and the command's name there. A command's module is
# imported only when that command runs, so `replayci --version` loads none of them.
COMMANDS = {
    "run": ("run", "run"),
    "merge": ("reports", "merge"),
    "report": ("reports", "report_command"),
    "diff": ("reports", "diff_command"),
    "regrade": ("regrade", "regrade_command"),
    "init": ("project", "init"),
    "validate": ("project", "validate"),
    "query": ("project", "query"),
    "schema": ("project", "schema"),
    "pin": ("pin", "pin"),
    "mutate": ("mutate", "mutate"),
    "observe": ("live", "observe"),
    "replay": ("live", "replay_command"),
    "proxy": ("proxy", "proxy"),
    "batch": ("batch", "batch"),
    "import": ("importing", "import_command"),
}


class _DefaultGroup(click.Group):
    """`replayci [flags]` is `replayci run [flags]`; commands load when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        return getattr(import_quietly(f"{__package__}.{module}"), name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version")):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """After the commands, the options of `run`, which `replayci [OPTIONS]` takes as they are."""
        run = self.get_command(ctx, "run")
        with click.Context(run, info_name="run", parent=ctx) as run_ctx:
            rows = [r for p in run.get_params(run_ctx) if "--help" not in p.opts
                    for r in [p.get_help_record(run_ctx)] if r]
        with formatter.section("Options of run, the default command"):
            formatter.write_dl(rows)
        super().format_epilog(ctx, formatter)

    def resolve_command(self, ctx, args):
        name = args[0] if args else None
        if name is not None and name not in COMMANDS and not name.startswith("-"):
            raise click.UsageError(f"no such command '{name}'" + did_you_mean(name, COMMANDS), ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="replayci", message="%(prog)s %(version)s")
def cli() -> None:
    """Contract tests for how language models call tools.

    Run `replayci` (same as `replayci run`) in a project with packs/ or a .replayci.yml;
    it takes the options of run listed below. `replayci COMMAND --help` shows another
    command's.
    """


# Every command takes --no-color, so a CI script can pass it to any of them; a command that
# prints no colour accepts it and has nothing to turn off.
no_color_accepted = click.option("--no-color", is_flag=True, expose_value=False,
                                 help="No colour (this command prints none; accepted by every command).")


def choice(value: str | None, choices: tuple[str, ...], flag: str) -> str | None:
    """*value* when it is one of *choices* (or unset); else a usage error naming the nearest."""
    if value is not None and value not in choices:
        raise click.UsageError(f"{flag} {value!r} is not one of {', '.join(choices)}"
                               + did_you_mean(value, choices))
    return value


def guarded(fn):
    """Map errors to exit codes: config 2, internal 3, Ctrl-C 130; never a raw traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            _fail_config(exc)
        except KeyboardInterrupt:
            say("replayci: interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            output_closed(EXIT_CONFIG)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except OSError as exc:  # the machine refused (a full disk, a read-only folder): no bug of ours
            os_refused(exc)
        except Exception as exc:  # a bug: short message, traceback only with -v
            _internal(exc, kwargs.get("verbose", 0))

    return wrapper


def output_closed(code: int, why: str = "broken pipe") -> None:
    """The reader of our output went away (`replayci ... | head`) or it cannot take more (a full
    disk): no traceback, nothing more written to it, a one-line note where it can still be read,
    and *code*."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    say(f"replayci: the output was closed before everything was written ({why})")
    sys.exit(code)


def os_refused(exc: OSError) -> None:
    """A file or stream the system would not let us use: what and why, exit 2."""
    if exc.filename is None:  # a write to stdout itself (stderr is where this note goes)
        output_closed(EXIT_CONFIG, exc.strerror or str(exc))
    say(f"replayci: cannot use {exc.filename}: {exc.strerror or exc}")
    sys.exit(EXIT_CONFIG)


def say(line: str) -> None:
    """A line on stderr, if stderr can still take it (it may be closed or full)."""
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):
        pass


def _fail_config(exc: ConfigError) -> None:
    problems = exc.problems
    head = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
    say(f"replayci: {head}, nothing was run:")
    for p in problems:
        say(f"  {p}")
    sys.exit(EXIT_CONFIG)


def _internal(exc: BaseException, verbose: int) -> None:
    say(f"replayci: internal error: {type(exc).__name__}: {exc}")
    if verbose:
        import traceback  # only here: --version and every clean run start without it

        try:
            traceback.print_exc()
        except (OSError, ValueError, AttributeError):  # stderr full or closed (None)
            pass
    else:
        say("  (run with -v for the traceback; please report it)")
    sys.exit(EXIT_INTERNAL)


def main(argv: list[str] | None = None) -> None:
    """The console script."""
    _tolerant_streams()
    _interrupt_on_sigterm()
    try:
        os.getcwd()
    except OSError as exc:
        say(f"replayci: the working directory is gone or unreadable ({exc.strerror}); cd to a project first")
        _leave(EXIT_CONFIG)
    try:
        cli.main(args=argv, prog_name="replayci", standalone_mode=True)
    except KeyboardInterrupt:
        say("replayci: interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit as done:
        if not isinstance(done.code, (int, type(None))):
            raise
        _leave(done.code or 0)


def _interrupt_on_sigterm() -> None:
    """SIGTERM (a CI job cancelled, `kill`, `timeout`) stops a command as Ctrl-C does: the file
    being written is finished or left as it was (never its temp file), the cases run so far are
    reported, exit 130. A command that defers interrupts while it writes sets its own handler."""
    def handler(signum, frame):  # noqa: ARG001 - the signal module's signature
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding caller): the signal is not ours
        pass


def _tolerant_streams() -> None:
    """Text a terminal cannot show (non-ASCII under LANG=C, a file name that is not UTF-8)
    comes out escaped instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _leave(code: int) -> None:
    """Exit without tearing down the interpreter: freeing every loaded object one by one
    takes a large run a noticeable time and changes nothing. Output is flushed first;
    every file the command wrote is closed already."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with that stream closed
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's own exit says 120
            code = code or (120 if stream is sys.stdout else 0)
    os._exit(code)
