"""JSON Schema validators, built once per distinct schema (Draft 2020-12 by default)."""
from __future__ import annotations

from typing import Any

from .hashing import canonical_json

_validators: dict[str, Any] = {}


class SchemaError(ValueError):
    """A JSON Schema that is not itself valid."""


def validator_for(schema: Any, *, check: bool = False):
    """A validator for *schema*; the same object for every equal schema."""
    try:
        key = canonical_json(schema)
    except (TypeError, ValueError):
        raise SchemaError("a JSON Schema must be JSON") from None
    v = _validators.get(key)
    if v is not None and not check:
        return v
    import jsonschema
    from jsonschema import validators

    default = jsonschema.Draft202012Validator
    cls = validators.validator_for(schema, default=default) if isinstance(schema, dict) else default
    cls = _bounded(cls)
    if check:
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise SchemaError(f"{exc.message}" + (f" (at /{where})" if where else "")) from None
    v = cls(schema)
    _validators[key] = v
    return v


def search(pattern, text: str):
    """A JSON Schema `pattern` search (a string or a compiled regex) under the regex time
    limit: a catastrophic pattern on a long string makes the case `error` (CaseError), it
    never hangs the run."""
    import regex

    from .errors import CaseError
    from .invariants import REGEX_TIMEOUT_S

    try:
        if isinstance(pattern, str):
            return regex.search(pattern, text, timeout=REGEX_TIMEOUT_S)
        return pattern.search(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        shown = pattern if isinstance(pattern, str) else pattern.pattern
        raise CaseError(
            f"JSON Schema pattern {shown!r} took longer than {REGEX_TIMEOUT_S:g} s on a "
            f"{len(text):,}-character string (catastrophic backtracking?): simplify the pattern"
        ) from None


_bounded_classes: dict = {}


def _bounded(cls):
    """*cls* with `pattern` and `patternProperties` matched by search() (jsonschema uses re,
    which has no time limit)."""
    out = _bounded_classes.get(cls)
    if out is None:
        from jsonschema import ValidationError, validators

        def pattern(validator, patrn, instance, schema):
            if validator.is_type(instance, "string") and not search(patrn, instance):
                yield ValidationError(f"{instance!r} does not match {patrn!r}")

        def pattern_properties(validator, patterns, instance, schema):
            if not validator.is_type(instance, "object"):
                return
            for patrn, subschema in patterns.items():
                for k, v in instance.items():
                    if search(patrn, k):
                        yield from validator.descend(v, subschema, path=k, schema_path=patrn)

        out = validators.extend(cls, {"pattern": pattern, "patternProperties": pattern_properties})
        _bounded_classes[cls] = out
    return out


def first_errors(validator, instance: Any) -> list:
    """Validation errors, most relevant first (jsonschema's own ordering)."""
    from jsonschema.exceptions import relevance

    return sorted(validator.iter_errors(instance), key=relevance)


# ---------------------------------------------------------------- a fast pre-check
#
# Most tool schemas use a small, plain subset of JSON Schema. For those, a compiled Python
# predicate answers "valid?" many times faster than jsonschema; jsonschema still runs when the
# answer is "no", to explain the failure, and for any schema outside the subset.

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "format",
                          "deprecated", "readOnly", "writeOnly", "$schema", "$id"})
_SUPPORTED = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "enum",
                             "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                             "minLength", "maxLength", "pattern", "items", "minItems", "maxItems",
                             "uniqueItems"}
_fast: dict[str, Any] = {}


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    return False


def _compile(schema: Any):
    """A predicate equivalent to jsonschema for this subset, or None when outside it."""
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict) or not set(schema) <= _SUPPORTED:
        return None
    checks = []
    t = schema.get("type")
    if t is not None:
        names = (t,) if isinstance(t, str) else tuple(t)
        checks.append(lambda v, names=names: any(_is_type(v, n) for n in names))
    if "enum" in schema or "const" in schema:
        from .invariants import json_equal

        allowed = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(allowed, list):
            return None
        checks.append(lambda v, allowed=allowed: any(json_equal(v, a) for a in allowed))
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    for key, test in (("minimum", lambda v, b: v >= b), ("maximum", lambda v, b: v <= b),
                      ("exclusiveMinimum", lambda v, b: v > b), ("exclusiveMaximum", lambda v, b: v < b)):
        if key in schema:
            bound = schema[key]
            if not num(bound):
                return None
            checks.append(lambda v, b=bound, test=test: not num(v) or test(v, b))
    if "minLength" in schema or "maxLength" in schema:
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        # jsonschema counts code points, as len() does
        checks.append(lambda v, lo=lo, hi=hi: not isinstance(v, str) or (len(v) >= lo and (hi is None or len(v) <= hi)))
    if "pattern" in schema:
        import re

        import regex

        try:
            re.compile(schema["pattern"])  # what jsonschema accepts
            rx = regex.compile(schema["pattern"])
        except (re.error, regex.error, TypeError):
            return None
        checks.append(lambda v, rx=rx: not isinstance(v, str) or search(rx, v) is not None)
    if "items" in schema:
        item = _compile(schema["items"])
        if item is None or not isinstance(schema["items"], (dict, bool)):
            return None
        checks.append(lambda v, item=item: not isinstance(v, list) or all(item(x) for x in v))
    if "minItems" in schema or "maxItems" in schema:
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        checks.append(lambda v, lo=lo, hi=hi: not isinstance(v, list) or (len(v) >= lo and (hi is None or len(v) <= hi)))
    if schema.get("uniqueItems") is True:
        from .invariants import json_equal

        def unique(v):
            if not isinstance(v, list):
                return True
            return not any(json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v)))

        checks.append(unique)
    elif "uniqueItems" in schema and schema["uniqueItems"] is not False:
        return None
    props = schema.get("properties")
    if props is not None:
        if not isinstance(props, dict):
            return None
        compiled = {}
        for name, sub in props.items():
            c = _compile(sub)
            if c is None:
                return None
            compiled[name] = c
        items = tuple(compiled.items())
        checks.append(lambda v, items=items: not isinstance(v, dict)
                      or all(k not in v or c(v[k]) for k, c in items))
    required = schema.get("required")
    if required is not None:
        if not isinstance(required, list):
            return None
        req = tuple(required)
        checks.append(lambda v, req=req: not isinstance(v, dict) or all(k in v for k in req))
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        known = frozenset(props or ())
        if extra is False:
            checks.append(lambda v, known=known: not isinstance(v, dict) or all(k in known for k in v))
        else:
            c = _compile(extra)
            if c is None:
                return None
            checks.append(lambda v, known=known, c=c: not isinstance(v, dict)
                          or all(k in known or c(x) for k, x in v.items()))
    checks = tuple(checks)
    return lambda v: all(check(v) for check in checks)


class CompiledSchema:
    """A schema with its fast predicate (when it has one) and, built on demand, a validator."""

    __slots__ = ("schema", "fast", "_validator")

    def __init__(self, schema: Any, validator=None):
        self.schema = schema
        other_draft = isinstance(schema, dict) and "$schema" in schema and "2020-12" not in str(schema["$schema"])
        self.fast = None if other_draft else _compile(schema)
        self._validator = validator

    @property
    def validator(self):
        if self._validator is None:
            self._validator = validator_for(self.schema)
        return self._validator

    def is_valid(self, instance: Any) -> bool:
        if self.fast is not None:
            return self.fast(instance)
        return self.validator.is_valid(instance)


_tables: dict[str, dict[str, CompiledSchema]] = {}


def tool_table(tools_key: str, tools: Any) -> dict[str, CompiledSchema]:
    """The compiled parameter schemas of a request's tools, by name; one per distinct tools list."""
    table = _tables.get(tools_key)
    if table is None:
        table = {}
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, dict):
                continue
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            name = fn.get("name")
            schema = fn.get("parameters", fn.get("input_schema"))
            if isinstance(name, str) and isinstance(schema, (dict, bool)):
                table[name] = CompiledSchema(schema)
        if len(_tables) < 4096:
            _tables[tools_key] = table
    return table
