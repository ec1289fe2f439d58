"""JSON values: the one table of JSON type names, equality and display."""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

TYPE_NAMES = ("string", "number", "integer", "boolean", "array", "object", "null")


ACTUAL_LIMIT = 200


class NotJSONValue(ValueError):
    """Text that json.loads accepts but JSON does not: NaN, Infinity, a number too large for any float."""


def _not_json(name: str) -> Any:
    raise NotJSONValue(f"{name} is not a JSON value")


def finite_float(text: str) -> float:
    """A JSON number as a float; one too large for any float (1e999) is refused, not infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise NotJSONValue(f"{text} is too large for a number")
    return value


# Strict JSON, as an application reads it: NaN, Infinity and 1e999 are not JSON.
STRICT_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=finite_float)


_LONE = re.compile("[\ud800-\udfff]")


def unicode_only(value: Any) -> Any:
    """*value* (from JSON) with each half of a surrogate pair in its texts and keys (JSON can
    escape one, "\\ud800"; it is no character, and no UTF-8 holds it) replaced by U+FFFD, as
    undecodable bytes are; *value* itself when it holds none."""
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.loads(_LONE.sub("\ufffd", text))
    except (ValueError, TypeError, RecursionError):  # not JSON: left to whoever reads it
        pass
    return value


def strict_loads(text: str | bytes) -> Any:
    """json.loads of strict JSON (ValueError, NotJSONValue among them, for what JSON is not)."""
    return json.loads(text, parse_constant=_not_json, parse_float=finite_float)


def encoder(*, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": "),
            allow_nan: bool = True) -> Callable[[Any], str]:
    """json.dumps(value, ensure_ascii=False, ...) with these options, its C encoder built once:
    json.dumps builds an encoder, a C encoder and a table of the containers it is in (to refuse
    a circular value) on every call, a cost hot paths pay many times per case. The values
    encoded come from JSON text and are never circular, so there is no such table (a
    circular value would end in RecursionError instead of ValueError)."""
    options = json.JSONEncoder(sort_keys=sort_keys, separators=separators, ensure_ascii=False,
                               allow_nan=allow_nan)
    make = json.encoder.c_make_encoder
    if make is None:  # an interpreter without the C accelerator: the plain encoder
        return options.encode
    one_shot = make(None, options.default, json.encoder.encode_basestring, None, options.key_separator,
                    options.item_separator, sort_keys, False, allow_nan)
    join = "".join

    def encode(value: Any) -> str:
        return join(one_shot(value, 0))

    return encode


_SCALARS = frozenset((str, int, float, bool, type(None)))
_encode_str = json.encoder.encode_basestring  # the C one when the interpreter has it
_one_scalar = encoder(allow_nan=False)
_FLAT: dict[str, Callable[[Any], str]] = {}  # the item separator of a depth -> its encoder


class _Unusual(Exception):
    """A value the indenting walk leaves to json.dumps: a tuple, a subclass, a key not a string."""


def indented(value: Any) -> str:
    """json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False), byte for
    byte, several times faster: indenting turns json.dumps's C encoder off, so this walk lays out
    the containers that hold containers and has the C encoder write every other value, a
    container of plain values whole (its item separator carrying the indent). The same errors:
    ValueError for NaN and infinities, TypeError for what JSON has no form for, RecursionError
    at the same depth."""
    out: list[str] = []
    try:
        _walk(value, "\n", out)
    except (_Unusual, RecursionError):  # (the walk takes two frames a level, json.dumps's generators none)
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return "".join(out)


def indented_members(members: dict[str, Any]) -> str:
    """`indented` of an object from the texts of its members: *members* maps each key to the
    text `member_text` gave its value (a text reused for several objects holding that value)."""
    return "{" + ",".join(f"\n  {_encode_str(key)}: {members[key]}" for key in sorted(members)) + "\n}"


def member_text(value: Any) -> str:
    """*value* as `indented` writes it as a member of the outermost object; ValueError,
    TypeError or RecursionError where `indented` might write it otherwise or not at all."""
    out: list[str] = []
    try:
        _walk(value, "\n  ", out)
    except _Unusual:
        raise TypeError("left to json.dumps") from None
    return "".join(out)


def _flat(inner: str) -> Callable[[Any], str]:
    got = _FLAT.get(inner)
    if got is None:
        got = _FLAT[inner] = encoder(sort_keys=True, separators=("," + inner, ": "), allow_nan=False)
    return got


def _walk(value: Any, pad: str, out: list[str]) -> None:
    kind = type(value)
    if kind is dict or kind is list:
        _container(value, pad, out)
    elif kind in _SCALARS:
        out.append(_one_scalar(value))
    else:
        raise _Unusual


def _container(value: dict | list, pad: str, out: list[str]) -> None:
    if not value:
        out.append("{}" if type(value) is dict else "[]")
    elif all(type(v) in _SCALARS for v in (value.values() if type(value) is dict else value)):
        text = _flat(pad + "  ")(value)  # '{"a": 1,<pad>  "b": 2}': its first and last line laid out here
        out.append(f"{text[0]}{pad}  {text[1:-1]}{pad}{text[-1]}")
    elif type(value) is dict:
        _walk_dict(value, pad, out)
    else:
        _walk_list(value, pad, out)


def _walk_dict(value: dict, pad: str, out: list[str]) -> None:
    inner = pad + "  "
    sep = "{" + inner
    for key in sorted(value):
        if type(key) is not str:
            raise _Unusual
        item = value[key]
        kind = type(item)
        if kind is str:
            out.append(f"{sep}{_encode_str(key)}: {_encode_str(item)}")
        elif kind is dict or kind is list:
            out.append(f"{sep}{_encode_str(key)}: ")
            _container(item, inner, out)
        elif kind in _SCALARS:
            out.append(f"{sep}{_encode_str(key)}: {_one_scalar(item)}")
        else:
            raise _Unusual
        sep = "," + inner
    out.append(pad + "}")


def _walk_list(value: list, pad: str, out: list[str]) -> None:
    inner = pad + "  "
    sep = "[" + inner
    for item in value:
        kind = type(item)
        if kind is str:
            out.append(sep + _encode_str(item))
        elif kind is dict or kind is list:
            out.append(sep)
            _container(item, inner, out)
        elif kind in _SCALARS:
            out.append(sep + _one_scalar(item))
        else:
            raise _Unusual
        sep = "," + inner
    out.append(pad + "]")


_SCALARS = frozenset((str, int, float, bool, type(None)))


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, scalars shared), several times
    quicker than copy.deepcopy; anything else is deep-copied as copy.deepcopy copies it."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind in _SCALARS:
        return value
    import copy  # why: only for what JSON does not hold

    return copy.deepcopy(value)


def json_type(value: Any) -> str:
    """The JSON type name of a value."""
    if type(value) is str:  # (first: what invariants ask about most)
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: 1 equals 1.0, but true is not 1 and "1" is not 1."""
    if type(a) is str:  # (first: what invariants compare most)
        return type(b) is str and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(json_equal(v, b[k]) for k, v in a.items()))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    return type(a) is type(b) and a == b


_show = encoder(sort_keys=True)


def show(value: Any, limit: int = ACTUAL_LIMIT) -> str:
    """A value as JSON text, cut at *limit* characters."""
    try:
        text = _show(value)
    except (TypeError, ValueError):
        text = repr(value)
    except RecursionError:
        text = "(nested too deeply to show)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_number(v: Any) -> bool:
    """True for JSON numbers (not booleans)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


ABSENT = object()  # a member one side of a difference does not have


def differences(recorded: Any, got: Any, limit: int = 1 << 30) -> list[tuple[str, Any, Any]]:
    """(JSON path, recorded value, value got) where two documents differ, keys in canonical
    order, at most *limit*; a side without the member has ABSENT."""
    out: list[tuple[str, Any, Any]] = []
    _differ(recorded, got, "$", out, limit)
    return out


def _differ(a: Any, b: Any, path: str, out: list, limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        steps = [(f"{path}.{k}" if k.isidentifier() else f"{path}[{json.dumps(k)}]",
                  a.get(k, ABSENT), b.get(k, ABSENT)) for k in sorted(set(a) | set(b))]
    elif isinstance(a, list) and isinstance(b, list):
        steps = [(f"{path}[{i}]", a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT)
                 for i in range(max(len(a), len(b)))]
    else:
        if type(a) is not type(b) or a != b:
            out.append((path, a, b))
        return
    for step, x, y in steps:
        if x is ABSENT or y is ABSENT:
            out.append((step, x, y))
        else:
            _differ(x, y, step, out, limit)
        if len(out) >= limit:
            return


def finite(value: Any, replaced: list[int]) -> Any:
    """*value* with every NaN and infinity replaced by None (counted in *replaced*)."""
    if isinstance(value, float) and not math.isfinite(value):
        replaced[0] += 1
        return None
    if isinstance(value, dict):
        return {k: finite(v, replaced) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v, replaced) for v in value]
    return value
