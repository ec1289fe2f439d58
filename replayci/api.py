"""The Python API; the CLI and the pytest plugin are thin layers over it."""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from .checks import jsonpath
from .config import Settings, resolve
from .core.errors import ConfigError, did_you_mean
from .engine import rules
from .engine.answers import Response
from .engine.cases import Item, Listener
from .engine.events import Handler
from .engine.judge import judge
from .engine.results import CaseResult, RunResult
from .engine.runner import run as run_engine
from .formats import NormalizeError, normalize
from .pack import loader
from .pack.model import Case, Contract, Pack


def load_pack(path: str | os.PathLike) -> Pack:
    """Load and validate one pack directory (or its pack.yaml); raises ConfigError."""
    return loader.load_pack(os.fspath(path))


# The options run() takes besides provider: the command line's, by their Python names.
RUN_OPTIONS = ("model", "base_url", "jobs", "replay", "tool_replay_mode", "record", "strict_fixtures", "repeat",
               "filters", "categories", "tags", "shard", "keep_raw", "stream", "processes", "batch",
               "batch_timeout_s", "targets", "baseline", "gate_baseline")


def _check_options(options: Mapping[str, Any]) -> None:
    for name in options:
        if name not in RUN_OPTIONS:
            raise TypeError(f"run() got an unexpected keyword argument {name!r}"
                            + did_you_mean(name, RUN_OPTIONS) + f"; it takes {', '.join(RUN_OPTIONS)}")


def run(packs: Iterable[str | os.PathLike | Pack] | str | os.PathLike | Pack | None = None, *,
        provider: str | None = None, listener: Handler | Listener | None = None,
        handlers: Iterable[Handler] = (), environ: Mapping[str, str] | None = None, cwd: str | None = None,
        **options: Any) -> RunResult:
    """Run packs and return every case's result with the summary and gates.

    *handlers* (`engine.events.Handler`s, e.g. the reporters of `report.handlers.reporters`)
    and then *listener* (a Handler, or a function called with each case's result) hear the
    run's events as it goes.

    Options are the CLI's (RUN_OPTIONS: model, base_url, jobs, replay, tool_replay_mode, record,
    strict_fixtures, repeat, filters, categories, tags, shard, keep_raw, stream, processes, batch,
    batch_timeout_s, targets ["PROVIDER:MODEL", ...], baseline (a JSON report's path, or the
    report), gate_baseline); an unknown one is a TypeError. Unset options come from the
    environment and the nearest .replayci.yml, as on the command line, and the command line's
    rules apply (`engine/rules.py`): a value it refuses is a ConfigError with its message.
    """
    _check_options(options)
    rules.check_options({"provider": provider, **options})
    if options.get("baseline") is not None:
        options = {**options, **read_baseline(options["baseline"])}
    if isinstance(packs, (str, os.PathLike, Pack)):
        packs = [packs]
    loaded = [p for p in packs or () if isinstance(p, Pack)]
    paths = [os.fspath(p) for p in packs or () if not isinstance(p, Pack)]
    flags = {"provider": provider, "packs": tuple(paths), **options}
    settings = resolve(flags, cwd=cwd, environ=environ)
    rules.check_settings(settings, provider=provider, model=options.get("model"))
    if not loaded:
        return run_settings(settings, listener=listener, handlers=handlers, environ=environ)[1]
    if paths:
        loaded += load_settings_packs(settings)
    else:
        settings = settings.with_(packs=())
    return run_engine(settings, packs=loaded, listener=listener, handlers=handlers, environ=environ)[1]


def read_baseline(baseline: str | os.PathLike | Mapping) -> dict:
    """The `baseline` option: a JSON report (its path, or the report); ConfigError when it is
    not one."""
    from .report.shape import ReportError, read_report, shape_problem  # why: the baseline option only

    path = None
    if isinstance(baseline, (str, os.PathLike)):
        path = os.fspath(baseline)
        try:
            baseline = read_report(path)
        except ReportError as exc:
            raise ConfigError(str(exc)) from None
    problem = shape_problem(baseline)
    if problem:
        raise ConfigError(f"{path or 'baseline'}: {problem}")
    return {"baseline": dict(baseline), "baseline_file": path}


def run_settings(settings: Settings, *, listener: Handler | Listener | None = None, environ=None,
                 handlers: Iterable[Handler] = ()) -> tuple[list[Pack], RunResult]:
    """Load the packs of resolved settings and run them, telling *handlers* and *listener* the
    run's events (used by the CLI)."""
    _require_packs(settings)
    return run_engine(settings, listener=listener, environ=environ, handlers=handlers)


def load_settings_packs(settings: Settings) -> list[Pack]:
    """The packs of resolved settings, loaded and validated; raises ConfigError when there are none."""
    _require_packs(settings)
    return loader.load_packs(list(settings.packs), project_root=settings.project_root)


def _require_packs(settings: Settings) -> None:
    if not settings.packs:
        raise ConfigError(f"no packs found: looked for packs/*/pack.yaml under {settings.project_root}; "
                          "pass a pack directory (--pack DIR), set 'pack' in .replayci.yml, "
                          "or run `replayci init`")


def check_response(contract: Contract, response: Any, request: Mapping | None = None, *,
                   case: str | None = None, case_id: str = "check_response", expect_ok: bool = True,
                   expected_error: str | None = None) -> CaseResult:
    """Check one response from your own application against a loaded contract.

    *response* may be a raw OpenAI chat completion, a raw Anthropic message (dicts or the
    SDKs' objects), or replayci's canonical form; *request* is the OpenAI-form request that
    produced it (its tools give the argument schemas and input invariants run on it).
    *case* names one of the contract's golden cases: its own assertions, ``expect_ok`` and
    ``expected_error`` apply, as in a run. *case_id* only labels the result.
    """
    from .providers.base import as_plain  # why: a run never loads the providers package for it

    payload = as_plain(response)
    try:
        doc = normalize(payload)
    except NormalizeError as exc:
        raise ValueError(str(exc)) from None
    pack_id = os.path.basename(os.path.dirname(os.path.dirname(contract.file))) or "contract"
    if case is not None:
        judged = _golden_case(contract, case)
    else:
        judged = Case(id=case_id, input_ref="", fixture_path="", fixture_display="",
                      expect_ok=expect_ok, expected_error=expected_error, source=contract.source)
    pack = Pack(pack_id=pack_id, dir="", display_dir="", name=None, version=None, provider=None,
                default_model=None, contracts_dir="", golden_dir="", negative_golden_dir="",
                recordings_dir="", contracts=(contract,), gates={})
    return judge(Item(pack, contract, judged), Response(dict(request or {}), doc))


def _golden_case(contract: Contract, name: str) -> Case:
    """The contract's case called *name*; a ValueError naming its cases when there is none."""
    for candidate in contract.cases:
        if candidate.id == name:
            return candidate
    names = [c.id for c in contract.cases]
    listed = ", ".join(f"'{n}'" for n in names) or "none"
    raise ValueError(f"contract '{contract.id}' has no case '{name}' (its cases: {listed})"
                     + did_you_mean(name, names))


def query(path: str, document: Any) -> list:
    """The values an RFC 9535 JSONPath matches in *document*, in document order."""
    return jsonpath.query(path, document)
