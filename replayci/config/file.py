"""`.replayci.yml`: finding the nearest one, and its validation against the vocabulary, secrets refused."""
from __future__ import annotations

import os
import re
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.provider_table import KEY_VARIABLES, LIVE_PROVIDERS, PROVIDER_KEY_VARIABLE
from ..pack import vocabulary as spec
from ..pack.servers import mcp_servers
from ..pack.sources import Located, load_yaml
from .settings import file_safe

CONFIG_NAMES = (".replayci.yml", ".replayci.yaml")
# Keys whose presence in a config file means a secret was written down.
_SECRET_KEYS = re.compile(r"(api[_-]?key|apikey|secret|token|password|authorization)", re.I)
_NOT_SECRETS = frozenset(spec.GATES_KEYS)  # max_total_tokens counts tokens; it holds no secret
_SECRET_VALUES = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,})")


def find_config(start: str) -> str | None:
    """The nearest .replayci.yml in *start* or a parent directory."""
    here = os.path.abspath(start)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(here, name)
            if os.path.isfile(candidate):
                return candidate
            if os.path.lexists(candidate):  # a FIFO, a device, a folder, a link to nothing: never ignored
                what = "a link to nothing" if not os.path.exists(candidate) else "not a regular file (a " \
                    "directory, device, pipe or socket)"
                raise ConfigError(Problem(candidate, None, None, f"{what}; replayci reads its configuration "
                                          "only from a regular file: replace it or remove it"))
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _secrets(doc: Located, value: Any, path: tuple = ()) -> list[Problem]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and _SECRET_KEYS.search(k) and k not in _NOT_SECRETS and v not in (None, ""):
                own = " / ".join(dict.fromkeys(v for p in LIVE_PROVIDERS.values() for v in p.own_keys))
                out.append(doc.problem(path + (k,), "API keys never live in files: remove it and set "
                                       f"{PROVIDER_KEY_VARIABLE} (or {own}) in the environment"))
            else:
                out.extend(_secrets(doc, v, path + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_secrets(doc, v, path + (i,)))
    elif isinstance(value, str) and _SECRET_VALUES.search(value):
        out.append(doc.problem(path, "this looks like an API key; keys come from the environment "
                               f"({', '.join(KEY_VARIABLES)}), never files"))
    return out


def read_config(file: str, display: str) -> tuple[dict, Located]:
    """Load and validate a .replayci.yml; raises ConfigError with every problem."""
    doc = load_yaml(file, display)
    problems = list(doc.problems)
    raw = doc.value if doc.value is not None else {}
    if not isinstance(raw, dict):
        raise ConfigError(doc.problem((), "expected a mapping of settings"))
    problems.extend(_secrets(doc, raw))
    for key, value in raw.items():
        problems.extend(_setting_problems(doc, key, value))
    problems.extend(mcp_servers(doc, raw.get("mcp_servers"), os.path.dirname(os.path.abspath(file)))[1])
    if "pack" in raw and "packs" in raw:
        problems.append(doc.problem(("packs",), "give either 'pack' or 'packs', not both"))
    elif raw.get("packs") == []:
        problems.append(doc.problem(("packs",), "expected at least one pack directory (or remove "
                                    "'packs' to run every packs/*/pack.yaml)"))
    if raw.get("targets") == []:
        problems.append(doc.problem(("targets",), "expected at least one target {provider, model} "
                                    "(or remove 'targets')"))
    problems.extend(_duplicate_labels(doc, raw.get("targets")))
    if problems:
        raise ConfigError(problems)
    return raw, doc


def _duplicate_labels(doc: Located, targets: Any) -> list[Problem]:
    """Two targets of one label would share their recordings and their column."""
    if not isinstance(targets, list):
        return []
    seen: set = set()
    out = []
    for i, t in enumerate(targets):
        if not isinstance(t, dict) or not isinstance(t.get("provider"), str) or not isinstance(t.get("model"), str):
            continue
        label = t.get("label") or f"{t['provider']}:{t['model']}"
        if file_safe(str(label)) in seen:
            out.append(doc.problem(("targets", i), f"target {label!r} is listed twice (its recordings folder "
                                   f"{file_safe(str(label))!r} too); give one of them another label"))
        seen.add(file_safe(str(label)))
    return out


def _setting_problems(doc: Located, key: Any, value: Any) -> list[Problem]:
    """What is wrong with one top-level setting and its sub-keys (a key that names a secret
    is reported by _secrets, not as unknown)."""
    if key not in spec.CONFIG_KEYS:
        if isinstance(key, str) and _SECRET_KEYS.search(key):
            return []
        return [doc.problem((key,), spec.unknown_key_message(key, spec.CONFIG_KEYS))]
    fragment = spec.CONFIG_KEYS[key]
    why = spec.check_value(fragment, value)
    if why is not None:
        return [doc.problem((key,), spec.mismatch(why, repr(value)))]
    items = fragment.get("items")
    if isinstance(value, list) and isinstance(items, dict) and "properties" in items:
        return [p for i, item in enumerate(value) for p in _table_problems(doc, (key, i), item, items)]
    if not isinstance(value, dict):
        return []
    problems = _table_problems(doc, (key,), value, fragment) if "properties" in fragment else []
    entry = fragment.get("additionalProperties")
    if isinstance(entry, dict) and "properties" in entry:
        for name, item in value.items():  # a mapping of names to tables (pricing per model)
            why = spec.check_value(entry, item)
            problems.extend([doc.problem((key, name), spec.mismatch(why, repr(item)))] if why
                            else _table_problems(doc, (key, name), item, entry))
    return problems


def _table_problems(doc: Located, path: tuple, value: dict, fragment: dict) -> list[Problem]:
    """Unknown keys, values that do not fit, and missing required keys of a mapping."""
    table = fragment["properties"]
    out = []
    for sub, subval in value.items():
        if sub not in table:
            if not (isinstance(sub, str) and _SECRET_KEYS.search(sub)):
                out.append(doc.problem(path + (sub,), spec.unknown_key_message(sub, table)))
            continue
        why = spec.check_value(table[sub], subval)
        if why is not None:
            out.append(doc.problem(path + (sub,), spec.mismatch(why, repr(subval))))
    out.extend(doc.problem(path, f"missing required key '{k}'")
               for k in fragment.get("required", ()) if k not in value)
    return out
