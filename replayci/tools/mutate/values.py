"""Argument values a mutant puts in: what the schemas allow, outside an enum, another JSON
type, or a different value that keeps the arguments valid."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ...checks.schemas import validator_for
from ...pack.model import Contract

MAX_VALUE_CANDIDATES = 40


class ArgumentSchemas:
    """What the schemas that apply to one call say about its arguments."""

    def __init__(self, contract: Contract, declared: dict[str, Any], name: Any, arguments: dict):
        schemas = []
        if name in declared:
            schemas.append(declared[name])
        if contract.arguments_schema is not None and name == contract.tool:
            schemas.append(getattr(contract.arguments_schema, "schema", contract.arguments_schema))
        # Only the schemas the recorded arguments satisfy: a change "staying valid" never
        # has to meet a schema the passing response itself did not.
        self.validators = [v for v in (validator_for(s) for s in schemas) if v.is_valid(arguments)]
        self.required: set[str] = set()
        self.props: dict[str, list[Any]] = {}
        for s in schemas:
            if not isinstance(s, dict):
                continue
            req = s.get("required")
            if isinstance(req, list):
                self.required.update(r for r in req if isinstance(r, str))
            props = s.get("properties")
            if isinstance(props, dict):
                for key, sub in props.items():
                    self.props.setdefault(key, []).append(sub)

    def valid(self, arguments: dict) -> bool:
        """True when *arguments* still meet every schema the recorded ones met."""
        return all(v.is_valid(arguments) for v in self.validators)

    def prop(self, key: str, what: str) -> Any:
        """The first *what* keyword (enum, ...) a schema gives property *key*, or None."""
        for sub in self.props.get(key, ()):
            if isinstance(sub, dict) and what in sub:
                return sub[what]
        return None


def outside_enum(value: Any, enum: list) -> Any:
    """A value of the same kind as *value* that the enum does not allow."""
    def fresh(candidates):
        for c in candidates:
            if not any(c == e and type(c) is type(e) for e in enum):
                return c
        return None

    if isinstance(value, str):
        return fresh([value.upper(), value.capitalize(), f"{value}_other", "other"])
    numbers = [e for e in enum if isinstance(e, (int, float)) and not isinstance(e, bool)]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and numbers:
        top = max(numbers)
        return fresh([top + 1, top + 2])
    return fresh(["other", "other_1"])


def retyped(value: Any) -> Any:
    """*value* as another JSON type, the way models get it wrong: 2 -> "2", {...} -> "{...}"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        if re.fullmatch(r"-?[0-9]+", value.strip()):
            return int(value)
        if re.fullmatch(r"-?[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?", value.strip()):
            return float(value)
        return [value]
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return ""  # null -> an empty string


def _shift(ch: str, step: int) -> str:
    for lo, n in (("a", 26), ("A", 26), ("0", 10)):
        base = ord(lo)
        if base <= ord(ch) < base + n:
            return chr(base + (ord(ch) - base + step) % n)
    return ch


def _string_candidates(value: str, enum: Any) -> Iterator[str]:
    if isinstance(enum, list):
        yield from (e for e in enum if isinstance(e, str))
    # One character moved within its class (letter, capital, digit) keeps the length and
    # usually the pattern: "LHR" -> "LHS", "2025-04-14" -> "2025-04-15".
    positions = [i for i, ch in enumerate(value) if ch.isascii() and ch.isalnum()]
    for i in reversed(positions):
        for step in (1, -1, 2):
            yield value[:i] + _shift(value[i], step) + value[i + 1:]
    yield value + "x"
    yield value[:-1] if value else "x"


def _number_candidates(value: float, sub: dict) -> Iterator[int | float]:
    enum = sub.get("enum")
    if isinstance(enum, list):
        yield from (e for e in enum if isinstance(e, (int, float)) and not isinstance(e, bool))
    step = sub.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        yield value + step
        yield value - step
    if isinstance(value, int):
        yield from (value + 1, value - 1, value + 2, value - 2, value * 2, value // 2, value + 10)
    else:
        yield from (value + 1.0, value - 1.0, value + 0.5, value - 0.5, value * 2, value / 2,
                    round(value + 0.01, 10), round(value - 0.01, 10))
    bounds = [sub.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
    bounds = [b for b in bounds if isinstance(b, (int, float)) and not isinstance(b, bool)]
    yield from bounds
    if len(bounds) >= 2:
        yield (min(bounds) + max(bounds)) / 2
    if isinstance(value, int):  # a whole number in a "number" field may move by a fraction
        yield from (value + 0.5, value - 0.5, value / 2)


def changed_value(key: str, value: Any, arguments: dict, schemas: ArgumentSchemas) -> Any:
    """A different value for arguments[key] that keeps the arguments schema-valid, or None."""
    subs = [s for s in schemas.props.get(key, ()) if isinstance(s, dict)]
    merged: dict = {}
    for s in subs:
        for k, v in s.items():
            merged.setdefault(k, v)
    if isinstance(value, str):
        candidates: Iterator[Any] = _string_candidates(value, merged.get("enum"))
    else:
        candidates = _number_candidates(value, merged)
    tried = 0
    for cand in candidates:
        if cand == value and type(cand) is type(value):
            continue
        tried += 1
        if tried > MAX_VALUE_CANDIDATES:
            break
        trial = {**arguments, key: cand}
        if schemas.valid(trial):
            return cand
    return None
