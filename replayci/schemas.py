"""JSON Schema validators, built once per distinct schema (Draft 2020-12 by default)."""
from __future__ import annotations

from typing import Any

from .errors import CaseError
from .hashing import canonical_json
from .invariants import REGEX_TIMEOUT_S, json_equal

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
    try:
        if isinstance(pattern, str):
            import regex

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


class _Outside(Exception):
    """The schema uses something outside the plain subset."""


_TYPE_TESTS = {
    "string": "isinstance({x}, str)",
    "object": "isinstance({x}, dict)",
    "array": "isinstance({x}, list)",
    "boolean": "isinstance({x}, bool)",
    "null": "{x} is None",
    "integer": "_integer({x})",
    "number": "_number({x})",
}


def _integer(value: Any) -> bool:
    return not isinstance(value, bool) and (isinstance(value, int) or
                                            (isinstance(value, float) and value.is_integer()))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
_BOUNDS = (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))
_MAX_LINES = 4000


def _any_equal(value: Any, allowed: list) -> bool:
    return any(json_equal(value, a) for a in allowed)


def _unique(items: list) -> bool:
    return not any(json_equal(items[i], items[j])
                   for i in range(len(items)) for j in range(i + 1, len(items)))


class _Generator:
    """Python source for a predicate: one `return False` per way a value can fail."""

    def __init__(self):
        self.consts: dict[str, Any] = {"_search": search, "_any_equal": _any_equal, "_unique": _unique,
                                       "_integer": _integer, "_number": _number}
        self.names = 0

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        self.consts[name] = value
        return name

    def var(self) -> str:
        self.names += 1
        return f"x{self.names}"

    def node(self, schema: Any, x: str) -> list[str]:
        """Lines (indented from 0) that return False when *x* does not match *schema*."""
        if schema is True or (isinstance(schema, dict) and not schema):
            return []
        if schema is False:
            return ["return False"]
        if not isinstance(schema, dict) or not set(schema) <= _SUPPORTED:
            raise _Outside
        out: list[str] = []
        t = schema.get("type")
        known_type = t if isinstance(t, str) else None  # what x is once the type check passed

        def guarded(kinds: tuple, test: str, lines: list[str]) -> None:
            """*lines* (indented one level) under `if <test>:`, unless the type says so."""
            if known_type in kinds:
                out.extend(line[4:] for line in lines)
            else:
                out.append(f"if {test}:")
                out.extend(lines)

        if t is not None:
            names = [t] if isinstance(t, str) else t
            if not isinstance(names, list):
                raise _Outside
            tests = [_TYPE_TESTS[n].format(x=x) if isinstance(n, str) and n in _TYPE_TESTS else "False"
                     for n in names]
            out.append(f"if not ({' or '.join(tests) or 'False'}): return False")
        for key in ("enum", "const"):
            if key not in schema:
                continue
            allowed = schema[key] if key == "enum" else [schema[key]]
            if not isinstance(allowed, list):
                raise _Outside
            if allowed and all(type(a) is str for a in allowed):
                out.append(f"if not (type({x}) is str and {x} in {self.const(frozenset(allowed))}): "
                           "return False")
            else:
                out.append(f"if not _any_equal({x}, {self.const(allowed)}): return False")
        bounds = []
        for key, op in _BOUNDS:
            if key in schema:
                bound = schema[key]
                if not isinstance(bound, (int, float)) or isinstance(bound, bool):
                    raise _Outside
                bounds.append(f"    if not {x} {op} {self.const(bound)}: return False")
        if bounds:
            guarded(("integer", "number"), f"_number({x})", bounds)
        strings = []
        if "minLength" in schema or "maxLength" in schema:
            strings += self._length(schema, x, "minLength", "maxLength")
        if "pattern" in schema:
            import re

            import regex

            try:
                re.compile(schema["pattern"])  # what jsonschema accepts
                rx = regex.compile(schema["pattern"])
            except (re.error, regex.error, TypeError):
                raise _Outside from None
            strings.append(f"    if _search({self.const(rx)}, {x}) is None: return False")
        if strings:
            guarded(("string",), f"isinstance({x}, str)", strings)
        arrays = []
        if "items" in schema:
            if not isinstance(schema["items"], (dict, bool)):
                raise _Outside
            item = self.var()
            body = self.node(schema["items"], item)
            if body:
                arrays.append(f"    for {item} in {x}:")
                arrays += ["        " + line for line in body]
        if "minItems" in schema or "maxItems" in schema:
            arrays += self._length(schema, x, "minItems", "maxItems")
        if schema.get("uniqueItems") is True:
            arrays.append(f"    if not _unique({x}): return False")
        elif "uniqueItems" in schema and schema["uniqueItems"] is not False:
            raise _Outside
        if arrays:
            guarded(("array",), f"isinstance({x}, list)", arrays)
        objects = []
        props = schema.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                raise _Outside
            for name, sub in props.items():
                value = self.var()
                body = self.node(sub, value)
                if body:
                    key = self.const(name)
                    objects.append(f"    if {key} in {x}:")
                    objects.append(f"        {value} = {x}[{key}]")
                    objects += ["        " + line for line in body]
        required = schema.get("required")
        if required is not None:
            if not isinstance(required, list):
                raise _Outside
            if required:
                k = self.var()
                objects.append(f"    for {k} in {self.const(tuple(required))}:")
                objects.append(f"        if {k} not in {x}: return False")
        if "additionalProperties" in schema:
            extra = schema["additionalProperties"]
            names_given = self.const(frozenset(props or ()))
            k, value = self.var(), self.var()
            body = self.node(extra, value)
            if body == ["return False"]:
                objects.append(f"    for {k} in {x}:")
                objects.append(f"        if {k} not in {names_given}: return False")
            elif body:
                objects.append(f"    for {k}, {value} in {x}.items():")
                objects.append(f"        if {k} not in {names_given}:")
                objects += ["            " + line for line in body]
        if objects:
            guarded(("object",), f"isinstance({x}, dict)", objects)
        if len(out) > _MAX_LINES:
            raise _Outside
        return out

    def _length(self, schema: dict, x: str, low: str, high: str) -> list[str]:
        out = [f"    if len({x}) < {self.const(schema.get(low, 0))}: return False"]
        if schema.get(high) is not None:
            out.append(f"    if len({x}) > {self.const(schema[high])}: return False")
        return out


def _compile(schema: Any):
    """A predicate equivalent to jsonschema for the plain subset (generated Python), or None
    when the schema is outside it (or too deep for the generated code)."""
    gen = _Generator()
    try:
        body = gen.node(schema, "v")
        source = "def check(v):\n" + "".join(f"    {line}\n" for line in body) + "    return True\n"
        # The text depends only on the schema's shape (its values are in the namespace):
        # schemas of one shape share the compiled code.
        code = _codes.get(source)
        if code is None:
            code = compile(source, "<JSON Schema>", "exec")
            if len(_codes) < 4096:
                _codes[source] = code
        namespace = dict(gen.consts)
        exec(code, namespace)  # noqa: S102 (our own text)
    except (_Outside, SyntaxError, RecursionError, MemoryError):
        return None
    return namespace["check"]


_codes: dict[str, Any] = {}


class CompiledSchema:
    """A schema with its fast predicate (when it has one) and a validator, each built on
    first use (a request declares many tools; a response calls few)."""

    __slots__ = ("schema", "_fast", "_validator")

    def __init__(self, schema: Any, validator=None):
        self.schema = schema
        self._fast = _UNBUILT
        self._validator = validator

    @property
    def fast(self):
        """The generated predicate, or None when jsonschema must answer."""
        if self._fast is _UNBUILT:
            schema = self.schema
            other_draft = (isinstance(schema, dict) and "$schema" in schema
                           and "2020-12" not in str(schema["$schema"]))
            self._fast = None if other_draft else _compile(schema)
        return self._fast

    @property
    def validator(self):
        if self._validator is None:
            self._validator = validator_for(self.schema)
        return self._validator

    def is_valid(self, instance: Any) -> bool:
        fast = self._fast if self._fast is not _UNBUILT else self.fast
        if fast is not None:
            return fast(instance)
        return self.validator.is_valid(instance)


_UNBUILT = object()

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
