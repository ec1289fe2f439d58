"""Flag > environment (REPLAYCI_*) > .replayci.yml > pack.yaml > default: the Settings of a run."""
from __future__ import annotations

import glob
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..checks.jsonpath import JSONPathError, compile_path
from ..core.errors import ConfigError, did_you_mean
from ..core.paths import display_path
from ..core.provider_table import LIVE_PROVIDERS
from ..pack import vocabulary as spec
from ..pack.servers import mcp_servers
from ..pack.sources import Located
from .file import find_config, read_config
from .settings import AUTO_MAX, BATCH_PACE, ENV_KEYS, STATS_DEFAULTS, Settings, Target


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def project_packs(root: str) -> tuple[str, ...]:
    """Every packs/*/ directory of the project that holds a pack.yaml, sorted."""
    return tuple(sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "packs", "*", "pack.yaml"))))


def _expand_listed(root: str, listed: list) -> tuple[str, ...]:
    """The pack directories the config names, its globs (`packs/*`) expanded in sorted order."""
    out: list[str] = []
    for rel in listed:
        where = os.path.normpath(os.path.join(root, rel))
        if glob.has_magic(rel):
            matches = sorted(p for p in glob.glob(where) if os.path.isdir(p))
            out.extend(p for p in matches if os.path.isfile(os.path.join(p, "pack.yaml")))
        else:
            out.append(where)
    return tuple(dict.fromkeys(out))


def _check_listed_packs(doc: Located, root: str, listed: list, single: bool) -> None:
    """Each pack named in the config must be a directory with a pack.yaml (a glob: at least one)."""
    from ..pack.loader import find_pack_file  # the loader and its checks: only when a config names packs

    problems = []
    for i, rel in enumerate(listed):
        if glob.has_magic(rel) and _expand_listed(root, [rel]):
            continue
        if not glob.has_magic(rel) and os.path.isfile(find_pack_file(os.path.join(root, rel))):
            continue
        found = sorted(_rel(p, root) for p in project_packs(root))
        problems.append(doc.problem(("pack",) if single else ("packs", i),
                                    f"{rel}: no pack.yaml there; expected a pack directory "
                                    "(pack.yaml, contracts/, golden/)" + did_you_mean(rel, found)))
    if problems:
        raise ConfigError(problems)


def parse_repeat(value: Any) -> tuple[int, bool]:
    """(runs or MAX, sampled until decided) of --repeat N | auto | auto:MAX."""
    text = str(value).strip()
    auto = text == "auto" or text.startswith("auto:")
    number = text[5:] if text.startswith("auto:") else (str(AUTO_MAX) if auto else text)
    if number.isdigit() and int(number) >= (2 if auto else 1):
        return int(number), auto
    raise ConfigError(f"--repeat {text!r}: expected a whole number >= 1, auto, or auto:MAX with MAX >= 2 "
                      f"(the most runs a case gets; default {AUTO_MAX})")


def _repeat(value: Any) -> dict:
    if value in (None, ""):
        return {"repeat": 1, "repeat_auto": False}
    repeat, auto = parse_repeat(value)
    return {"repeat": repeat, "repeat_auto": auto}


def _stats(raw: Any, doc: Located | None) -> dict:
    """The sequential test's error rates and pass probabilities: `bad` below `ok`."""
    stats = {**STATS_DEFAULTS, **(raw or {})}
    if not (0 < stats["alpha"] and 0 < stats["beta"] and 0.5 < stats["bad"] < stats["ok"] < 1):
        message = (f"stats: expected 0.5 < bad < ok < 1 (got bad {stats['bad']}, ok {stats['ok']}: a stable case "
                   "passes at least ok of its runs, a flaky one at most bad and fails at most bad) and alpha, "
                   "beta above 0")
        raise ConfigError(doc.problem(("stats",), message) if doc is not None else message)
    return stats


def _processes(value: Any) -> int | None:
    """Recorded runs use one process or two: any number above two means two."""
    return None if value is None else min(int(value), 2)


def _env_value(key: str, text: str) -> Any:
    if key in ("jobs", "processes"):
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{ENV_KEYS[key]}={text!r}: expected a whole number >= 1") from None
        if value < 1:
            raise ConfigError(f"{ENV_KEYS[key]}={text!r}: expected a whole number >= 1")
        return value
    fragment = spec.CONFIG_KEYS[key]
    why = spec.check_value(fragment, text)
    if why is not None:
        raise ConfigError(f"{ENV_KEYS[key]}={text!r}: expected {why}")
    return text


def _selected_packs(flags: Mapping[str, Any], raw: dict, doc: Located | None, cwd: str,
                    root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the packs to run, the project's packs the config leaves out): flags, else the
    config's pack/packs (globs allowed), else every packs/*/pack.yaml."""
    if flags.get("packs"):
        return tuple(os.path.abspath(os.path.join(cwd, p)) for p in flags["packs"]), ()
    if "pack" not in raw and "packs" not in raw:
        return project_packs(root), ()
    listed = [raw["pack"]] if "pack" in raw else list(raw["packs"])
    _check_listed_packs(doc, root, listed, "pack" in raw)
    packs = _expand_listed(root, listed)
    unselected = tuple(_rel(p, root) for p in project_packs(root)
                       if p not in packs and os.path.join(p, "pack.yaml") not in packs)
    return packs, unselected


def _replay_mode(flags: Mapping[str, Any], pick: Callable[..., Any], provider: str, sources: dict,
                 doc: Located | None) -> str | None:
    """--replay (or --record), the environment or the config; a live-only mode with the
    recorded provider from the environment or the config is refused."""
    replay = pick("replay")
    if flags.get("record"):
        return "record"
    if provider == "recorded" and replay not in (None, "strict") and sources.get("replay") != "flag":
        # (the same conflict from flags is a usage error of the command line)
        why = (f"{replay!r} needs a live provider ({' or '.join(LIVE_PROVIDERS)}); the recorded "
               "provider only replays (strict)")
        if sources["replay"] == "env":
            raise ConfigError(f"{ENV_KEYS['replay']}={replay!r}: {why}")
        raise ConfigError(doc.problem(("replay",), why))
    return replay


def _redact_fields(doc: Located, fields: list) -> tuple[str, ...]:
    """The redact.fields JSONPaths, each parsed now: a bad one is refused before anything is
    recorded unredacted."""
    problems = []
    for i, text in enumerate(fields):
        try:
            compile_path(text)
        except JSONPathError as exc:
            problems.append(doc.problem(("redact", "fields", i), f"invalid JSONPath {text!r}: {exc}"))
    if problems:
        raise ConfigError(problems)
    return tuple(fields)


def parse_target(text: str) -> Target:
    """`--target PROVIDER:MODEL`; ConfigError naming the flag for anything else."""
    provider, sep, model = str(text).partition(":")
    if not sep or not model.strip():
        raise ConfigError(f"--target {text!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini "
                          f"(providers: {', '.join(LIVE_PROVIDERS)})")
    if provider not in LIVE_PROVIDERS:
        raise ConfigError(f"--target {text!r}: unknown provider {provider!r}; expected one of "
                          f"{', '.join(LIVE_PROVIDERS)}" + did_you_mean(provider, list(LIVE_PROVIDERS)))
    return Target(provider=provider, model=model, label=f"{provider}:{model}")


def _targets(flags: Mapping[str, Any], raw: dict) -> tuple[tuple[Target, ...], bool]:
    """The run's targets (flags, else the config's) and whether they came from the flags."""
    if flags.get("targets"):
        targets = tuple(parse_target(t) for t in flags["targets"])
        labels = [t.dir for t in targets]
        twice = sorted({t.label for t in targets if labels.count(t.dir) > 1})
        if twice:
            raise ConfigError(f"--target {twice[0]} is given twice")
        return targets, True
    return tuple(Target(provider=t["provider"], model=t["model"], base_url=t.get("base_url"),
                        label=str(t.get("label") or f"{t['provider']}:{t['model']}"))
                 for t in raw.get("targets") or ()), False


def _live_targets(targets: tuple, from_flags: bool, provider: str, replay: str | None, sources: dict, *,
                  batch: bool = False) -> bool:
    """Whether a run with targets calls them: a live replay mode, a live --provider, or
    targets on the command line or --batch (unless --provider recorded says to replay them)."""
    if not targets:
        return False
    if provider != "recorded" or replay in ("auto", "record", "off"):
        return True
    return (from_flags or batch) and sources.get("provider") not in ("flag", "env")


def resolve(flags: Mapping[str, Any], *, cwd: str | None = None,
            environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from flags, environment and the nearest .replayci.yml."""
    cwd = os.path.abspath(cwd or os.getcwd())
    environ = os.environ if environ is None else environ
    config_file = find_config(cwd)
    raw: dict = {}
    root = cwd
    if config_file:
        root = os.path.dirname(config_file)
        raw, doc = read_config(config_file, display_path(config_file, cwd))
    sources: dict[str, str] = {}

    def pick(key: str, default: Any = None) -> Any:
        if flags.get(key) not in (None, (), []):
            sources[key] = "flag"
            return flags[key]
        env = ENV_KEYS.get(key)
        if env and environ.get(env):
            sources[key] = "env"
            return _env_value(key, environ[env])
        if key in raw:
            sources[key] = "config"
            return raw[key]
        return default

    packs, unselected = _selected_packs(flags, raw, doc if config_file else None, cwd, root)
    provider = pick("provider", "recorded")
    fixtures = raw.get("fixtures") or {}
    redact = raw.get("redact") or {}
    strict_fixtures = bool(flags.get("strict_fixtures") or fixtures.get("strict", False))
    targets, from_flags = _targets(flags, raw)
    explicit = sources.get("provider") in ("flag", "env")
    replay = _replay_mode(flags, pick, provider if explicit or not targets else "targets", sources,
                          doc if config_file else None)
    live = _live_targets(targets, from_flags, provider, replay, sources, batch=bool(flags.get("batch")))
    return Settings(
        project_root=root,
        config_file=config_file,
        packs=packs,
        provider=targets[0].provider if live else provider,
        model=pick("model"),
        base_url=pick("base_url"),
        jobs=int(pick("jobs", 4)),
        replay=replay,
        tool_replay_mode=pick("tool_replay_mode"),
        ttl_days=fixtures.get("ttl_days", 14),
        strict_fixtures=strict_fixtures,
        max_fixture_bytes=fixtures.get("max_bytes", 16 * 1024 * 1024),
        gates=dict(raw.get("gates") or {}),
        pricing=dict(raw.get("pricing") or {}),
        judge=dict(raw.get("judge") or {}),
        reports={**(raw.get("reports") or {})},
        redact_fields=_redact_fields(doc, redact["fields"]) if redact.get("fields") else (),
        proxy_ignore=tuple(raw["proxy"]["ignore"]) if "ignore" in (raw.get("proxy") or {}) else None,
        filters=tuple(flags.get("filters") or ()),
        categories=tuple(flags.get("categories") or ()),
        tags=tuple(flags.get("tags") or ()),
        **_repeat(flags.get("repeat")),
        stats=_stats(raw.get("stats"), doc if config_file else None),
        keep_raw=bool(flags.get("keep_raw")),
        stream=bool(pick("stream", False)),
        shard=flags.get("shard"),
        unselected_packs=unselected,
        processes=_processes(pick("processes")),
        sources=sources,
        mcp_servers=mcp_servers(doc, raw.get("mcp_servers"), root)[0] if config_file else (),
        batch=bool(flags.get("batch")),
        batch_timeout_s=float(flags.get("batch_timeout_s") or 24 * 3600),
        **batch_pace(environ),
        targets=targets,
        live_targets=live,
        baseline=flags.get("baseline"),
        baseline_file=flags.get("baseline_file"),
        gate_baseline=bool(flags.get("gate_baseline")),
    )


def batch_pace(environ: Mapping[str, str]) -> dict[str, float]:
    """The batch wait's intervals set in the environment (seconds > 0)."""
    pace = {}
    for key, variable in BATCH_PACE.items():
        text = environ.get(variable)
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0 < value < math.inf):
            raise ConfigError(f"{variable}={text!r}: expected a number of seconds > 0")
        pace[key] = value
    return pace
