"""The command line: flags -> settings -> API -> reports -> exit code.

`cli` (the click group) and the commands load from main.py on first use: `replayci --version`
is answered without importing click, most of its start-up otherwise."""
from __future__ import annotations

import gc
import importlib
import os
import sys

from ..core.version import __version__

__all__ = ["cli", "main"]


def main(argv: list[str] | None = None) -> None:
    """The console script: `replayci --version` alone answered here, the rest by main.py."""
    if (sys.argv[1:] if argv is None else list(argv)) == ["--version"]:
        _version()
    _command_line().main(argv)


def _version() -> None:
    """Print what click's --version prints and leave as main.py does (flushed, os._exit). When
    stdout refuses the line (a closed pipe, a full disk), return: click's path then answers
    exactly as it always has."""
    out = sys.stdout
    try:
        if out is not None:  # started with stdout closed: click prints nothing and exits 0
            out.write(f"replayci {__version__}\n")
            out.flush()
    except OSError:
        return
    os._exit(0)


def _command_line():
    """main.py, with this package's `cli` and `main` left naming main.py's (importing it
    would leave `main` naming the module)."""
    module = import_quietly(f"{__name__}.main")
    globals().update(cli=module.cli, main=module.main)
    return module


def import_quietly(module: str):
    """Import a module with the cyclic collector off, then freeze what it made."""
    # The import makes tens of thousands of objects that live as long as the process
    # (functions, classes, tables: click's and the commands') and no garbage, so the
    # collections it would set off scan them in vain; frozen, later ones skip them too.
    if module in sys.modules:  # loaded before (in-process callers, tests): nothing to pause for
        return sys.modules[module]
    was = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        if was:
            gc.freeze()
            gc.enable()


def __getattr__(name: str):
    if name == "cli":
        return _command_line().cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
