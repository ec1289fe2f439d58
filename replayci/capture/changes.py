"""What a rewrite changed in a pack's contracts, per contract: cases added and removed, and the
pins that changed from what to what. The one summary `--update` prints, for the proxy, `import`
and `observe` alike: a line per change, each naming its contract file (and its case)."""
from __future__ import annotations

import json
import os
from typing import Any

from ..core.errors import ConfigError
from ..pack.sources import parse_yaml

_SHOWN = 12  # pin changes shown per contract
_NOT_PINS = frozenset(("description", "golden_cases", "id", "input_ref", "category", "tags", "name", "status"))
_NONE = "(none)"


def snapshot(contracts_dir: str) -> dict[str, str]:
    """Every contract file's text under *contracts_dir*, by name."""
    out = {}
    try:
        names = sorted(os.listdir(contracts_dir))
    except OSError:
        return out
    for name in names:
        if name.endswith((".yaml", ".yml")):
            try:
                with open(os.path.join(contracts_dir, name), encoding="utf-8") as fh:
                    out[name] = fh.read()
            except OSError:
                continue
    return out


def describe(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per change, contract by contract: `refund.yaml: case damaged_order:
    $.tool_calls[0].name equals "refund" -> "lookup"`."""
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if new is None:
            lines.append(f"  {name}: removed")
            continue
        was, now = _cases(old), _cases(new)
        if old is None:
            lines.append(f"  {name}: new, {len(now)} case{'s' if len(now) != 1 else ''}")
        lines += [f"  {name}: case {c} added" for c in now if c not in was and old is not None]
        lines += [f"  {name}: case {c} removed" for c in was if c not in now]
        pins = [f"  {name}: {change}" for change in _pin_changes(_contract(old), _contract(new), was, now)]
        lines += pins[:_SHOWN] + ([f"  {name}: ... and {len(pins) - _SHOWN} more pin changes"]
                                  if len(pins) > _SHOWN else [])
        if old is not None and not any(line.startswith(f"  {name}: ") for line in lines):
            lines.append(f"  {name}: rewritten (no case or pin changed)")
    return lines


def _pin_changes(old: dict, new: dict, was: dict, now: dict) -> list[str]:
    """The contract's own pins that changed, then each kept case's."""
    out = [f"{key} {_shown(a)} -> {_shown(b)}" for key, a, b in _diff(pins(old), pins(new))] if old else []
    for case_id, entry in now.items():
        if case_id in was:
            out += [f"case {case_id}: {key} {_shown(a)} -> {_shown(b)}"
                    for key, a, b in _diff(pins(was[case_id]), pins(entry))]
    return out


def _diff(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str | None, str | None]]:
    return [(k, a.get(k), b.get(k)) for k in (*a, *(k for k in b if k not in a)) if a.get(k) != b.get(k)]


def _shown(value: str | None) -> str:
    return _NONE if value is None else value


def pins(doc: dict) -> dict[str, str]:
    """What a contract or case pins, flat: `$.tool_calls[0].name equals` -> `"refund"`, an
    invariant's path and operator -> its value, any other check by its key."""
    out: dict[str, str] = {}
    for key, value in doc.items():
        if key in _NOT_PINS:
            continue
        if key in ("assertions", "trajectory") and isinstance(value, dict):
            for k, v in pins(value).items():
                _put(out, k, v)
        elif key == "step_invariants" and isinstance(value, list):
            for entry in value:
                step = entry.get("step") if isinstance(entry, dict) else None
                for inv in entry.get("invariants") or () if isinstance(entry, dict) else ():
                    _invariant(out, "", inv, f"step {step}: ")
        elif key == "expected_tool_calls" and isinstance(value, list):
            for n, call in enumerate(value):
                _call_pins(out, f"$.tool_calls[{n}]", call)
        elif key.endswith("invariants") and isinstance(value, list):
            for inv in value:
                _invariant(out, "", inv)
        else:
            _put(out, key, _json(value))
    return out


def _call_pins(out: dict[str, str], where: str, call: Any) -> None:
    if not isinstance(call, dict):
        _put(out, where, _json(call))
        return
    for key, value in call.items():
        if key == "name":
            _put(out, f"{where}.name equals", _json(value))
        elif key == "argument_invariants" and isinstance(value, list):
            for inv in value:
                _invariant(out, f"{where}.arguments", inv)
        else:
            _put(out, f"{where} {key}", _json(value))


def _invariant(out: dict[str, str], prefix: str, inv: Any, label: str = "") -> None:
    """An invariant's pins: its path (under *prefix*, for an argument's) with each operator."""
    path = inv.get("path") if isinstance(inv, dict) else None
    if not isinstance(path, str):
        _put(out, f"{label}{prefix or '$'} {_json(inv)}", "")
        return
    where = prefix + path[1:] if prefix and path.startswith("$") else path
    for op, value in inv.items():
        if op != "path":
            _put(out, f"{label}{where} {op}", _json(value))


def _put(out: dict[str, str], key: str, value: str) -> None:
    """*value* under *key*, or under `key #2`... when the key is taken (two checks of one path)."""
    n, name = 2, key
    while name in out:
        name, n = f"{key} #{n}", n + 1
    out[name] = value


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _contract(text: str | None) -> dict:
    """A contract file's document ({} when it is none or does not parse)."""
    if text is None:
        return {}
    try:
        doc = parse_yaml(text, "contract").value
    except ConfigError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _cases(text: str | None) -> dict[str, dict]:
    """A contract file's golden cases by id, in order."""
    cases = _contract(text).get("golden_cases")
    return {c["id"]: c for c in cases or () if isinstance(c, dict) and isinstance(c.get("id"), str)}
