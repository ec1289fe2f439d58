"""JSON Schema validators, built once per distinct schema (Draft 2020-12 by default)."""
from __future__ import annotations

import re
from typing import Any

from ..core.hashing import canonical_json
from ..core.jsonvalue import is_number as _number
from ..core.jsonvalue import json_equal
from ..core.memo import Memo, fast_paths
from ..core.timelimit import REGEX_TIMEOUT_S, too_slow

_validators: Memo = Memo()


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
    import jsonschema  # ~90 ms: loaded only when a schema needs jsonschema itself
    from jsonschema import validators
    from referencing import Registry

    default = jsonschema.Draft202012Validator
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        raise SchemaError(f"$schema must be a metaschema URI (a string), not {schema['$schema']!r}")
    cls = validators.validator_for(schema, default=default) if isinstance(schema, dict) else default
    cls = _bounded(cls)
    if check:
        check_references(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise SchemaError(f"{exc.message}" + (f" (at /{where})" if where else "")) from None
        except RecursionError:
            raise SchemaError(f"nested too deeply to check (over {MAX_SCHEMA_DEPTH} levels)") from None
    # A registry that retrieves nothing: no schema ever makes replayci open a URL or a file.
    return _validators.put(key, cls(schema, registry=Registry()))


# ---------------------------------------------------------------- references and depth

MAX_SCHEMA_DEPTH = 128  # JSON levels: far beyond any real tool schema, well within the interpreter's stack
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas: a "$ref" there is data
_IN_PLACE = ("not", "if", "then", "else")  # subschemas applied to the same value
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")


def _refs_and_anchors(schema: Any) -> tuple[list[tuple[str, str]], set[str]]:
    """Every (reference, where) in *schema* and its anchor names; deeper than MAX_SCHEMA_DEPTH
    is a SchemaError."""
    refs, anchors = [], set()
    stack = [(schema, 0, "")]
    while stack:
        node, depth, where = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"nested deeper than {MAX_SCHEMA_DEPTH} levels (at {where[:60]}...)")
        if isinstance(node, list):
            stack.extend((v, depth + 1, f"{where}/{i}") for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for k, v in node.items():
            if k in _REF_KEYS and isinstance(v, str):
                refs.append((v, f"{where}/{k}"))
            elif k in ("$anchor", "$dynamicAnchor") and isinstance(v, str):
                anchors.add(v)
            elif k not in _DATA_KEYS:
                stack.append((v, depth + 1, f"{where}/{k}"))
    return refs, anchors


def _target(schema: Any, ref: str) -> Any:
    """The subschema a local JSON-pointer reference names, or _MISSING."""
    import urllib.parse  # why: only schemas with a $ref load it (with ipaddress)

    node = schema
    for part in urllib.parse.unquote(ref[1:]).split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


_MISSING = object()


def _in_place_refs(node: Any) -> list[str]:
    """The references applied to the same value as *node* (without descending into it)."""
    out, todo, seen = [], [node], set()
    while todo:
        n = todo.pop()
        if not isinstance(n, dict) or id(n) in seen:
            continue
        seen.add(id(n))
        out.extend(n[k] for k in _REF_KEYS if isinstance(n.get(k), str))
        todo.extend(n.get(k) for k in _IN_PLACE)
        todo.extend(sub for k in _IN_PLACE_LISTS if isinstance(n.get(k), list) for sub in n[k])
        if isinstance(n.get("dependentSchemas"), dict):
            todo.extend(n["dependentSchemas"].values())
    return out


def _loop_from(schema: Any, start: str) -> bool:
    """True when following *start* leads back to it without ever descending into the value."""
    seen, todo = set(), [start]
    while todo:
        ref = todo.pop()
        node = _target(schema, ref) if ref.startswith("#/") or ref == "#" else _MISSING
        for nxt in _in_place_refs(node) if node is not _MISSING else ():
            if nxt == start:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def check_references(schema: Any) -> None:
    """Refuse (SchemaError) what could not be evaluated safely: a reference that is not local
    to the schema (replayci never fetches one from a URL or a file), a local one that points
    at nothing, a loop of references that never descends into the value, and nesting deeper
    than MAX_SCHEMA_DEPTH."""
    refs, anchors = _refs_and_anchors(schema)
    for ref, where in refs:
        if not ref.startswith("#"):
            raise SchemaError(f"{ref!r} is not a local reference (#/...): replayci never fetches a "
                              f"schema from a URL or a file (at {where})")
        pointer = ref == "#" or ref.startswith("#/")
        if (_target(schema, ref) is _MISSING) if pointer else ref[1:] not in anchors:
            raise SchemaError(f"{ref!r} refers to nothing in this schema (at {where})")
    for ref in {r for r, _ in refs}:
        if _loop_from(schema, ref):
            raise SchemaError(f"{ref!r} refers back to itself without descending into the value")


def search(pattern, text: str):
    """A JSON Schema `pattern` search (a string or a compiled regex) under the regex time
    limit: a catastrophic pattern on a long string makes the case `error` (CaseError), it
    never hangs the run."""
    try:
        if isinstance(pattern, str):
            plain = straight_pattern(pattern)
            if plain is not None:
                return plain.search(text)
            import regex  # loaded only when a schema has a pattern that can backtrack

            return regex.search(pattern, text, timeout=REGEX_TIMEOUT_S)
        if isinstance(pattern, re.Pattern):  # straight_pattern's: no time limit needed
            return pattern.search(text)
        return pattern.search(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        shown = pattern if isinstance(pattern, str) else pattern.pattern
        raise too_slow("JSON Schema pattern", shown, len(text)) from None


# What a straight pattern may hold (re's parsed form): single characters, classes of
# characters and ranges, `.`, digits, the anchors ^ $ \\A \\Z, and counts of these.
_STRAIGHT_ATOMS = {"LITERAL", "NOT_LITERAL", "ANY", "IN"}
_STRAIGHT_IN = {"LITERAL", "RANGE", "NEGATE", "CATEGORY"}
_STRAIGHT_CATEGORIES = {"CATEGORY_DIGIT", "CATEGORY_NOT_DIGIT"}
_STRAIGHT_AT = {"AT_BEGINNING", "AT_END", "AT_BEGINNING_STRING", "AT_END_STRING"}
_straight: Memo = Memo()


def straight_pattern(pattern: str) -> re.Pattern | None:
    """*pattern* compiled by re when its search cannot take long: anchored at the start (^ or
    \\A), with no alternation, group, look-around, back reference, flag or \\w-like class,
    and every repeat one of a single character or class, of a fixed count but for at most one
    (`^[A-Z]{3}$`, `^[A-Z0-9]{10,22}$`, `^\\d{4}-\\d{2}-\\d{2}$`). Its one attempt then
    tries at most 1,000 lengths of a tail of at most 1,000 characters, and re finds what regex
    finds, so such a pattern needs neither regex's time limit nor regex (~13 ms to import).
    None for any other."""
    found = _straight.get(pattern)
    if found is None:
        found = _straight.put(pattern, _straight_compile(pattern) or False)
    return found or None


def _straight_compile(pattern: str) -> re.Pattern | None:
    try:
        try:
            from re import _parser as parser  # why: re's own parse of the pattern (3.11+)
        except ImportError:  # Python 3.10
            import sre_parse as parser
        parsed = parser.parse(pattern)
        items = list(parsed)
        if parsed.state.flags & ~re.UNICODE or not items or str(items[0][0]) != "AT" \
                or str(items[0][1]) not in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
            return None
        kinds = [_straight_item(op, av) for op, av in items]
        length = sum(av[1] if str(op) in ("MAX_REPEAT", "MIN_REPEAT") else 1 for op, av in items)
        if None in kinds or kinds.count("variable") > 1 or length > 1000:
            return None
        return re.compile(pattern)
    except Exception:  # anything re does not parse the same way: regex decides
        return None


def _straight_item(op, av) -> str | None:
    """"fixed" or "variable" (a repeat of a range of counts) for what a straight pattern may
    hold, else None."""
    name = str(op)
    if name == "AT":
        return "fixed" if str(av) in _STRAIGHT_AT else None
    if name in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, item = av
        if high > 1000 or len(item) != 1 or not _straight_atom(*item[0]):
            return None
        return "fixed" if low == high else "variable"
    return "fixed" if _straight_atom(op, av) else None


def _straight_atom(op, av) -> bool:
    name = str(op)
    if name not in _STRAIGHT_ATOMS:
        return False
    if name != "IN":
        return True
    return all(str(o) in _STRAIGHT_IN and (str(o) != "CATEGORY" or str(a) in _STRAIGHT_CATEGORIES)
               for o, a in av)


_bounded_classes: Memo = Memo()


def _bounded(cls):
    """*cls* with `pattern` and `patternProperties` matched by search() (jsonschema uses re,
    which has no time limit) and `uniqueItems` checked in linear time."""
    out = _bounded_classes.get(cls)
    if out is None:
        from jsonschema import ValidationError, validators  # loaded only with a validator

        def pattern(validator, patrn, instance, schema):
            if validator.is_type(instance, "string") and not search(patrn, instance):
                yield ValidationError(f"{instance!r} does not match {patrn!r}")

        def unique_items(validator, unique, instance, schema):
            if unique and validator.is_type(instance, "array") and not _unique(instance):
                yield ValidationError(f"{_cut_repr(instance)} has non-unique elements")

        def pattern_properties(validator, patterns, instance, schema):
            if not validator.is_type(instance, "object"):
                return
            for patrn, subschema in patterns.items():
                for k, v in instance.items():
                    if search(patrn, k):
                        yield from validator.descend(v, subschema, path=k, schema_path=patrn)

        out = _bounded_classes.put(
            cls, validators.extend(cls, {"pattern": pattern, "patternProperties": pattern_properties,
                                    "uniqueItems": unique_items}))
    return out


def first_errors(validator, instance: Any) -> list:
    """Validation errors, most relevant first (jsonschema's own ordering)."""
    from jsonschema.exceptions import relevance  # loaded only when jsonschema explains

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
                             "uniqueItems", "allOf", "anyOf", "oneOf", "$ref", "$defs", "definitions"}


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


_TYPE_CHECKS = {  # the type names and what each accepts (generated code inlines _TYPE_TESTS)
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _integer,
    "number": _number,
}
_BOUNDS = (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))
_MAX_LINES = 4000
_MAX_NODES = 2000  # subschemas written out for one schema, references followed included


def _any_equal(value: Any, allowed: list) -> bool:
    return any(json_equal(value, a) for a in allowed)


def _unique_key(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (1 and 1.0 alike, true and 1 not)."""
    if isinstance(value, bool) or value is None:
        return (0, value)
    if isinstance(value, (int, float)):
        return (1, int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, list):
        return (2, tuple(_unique_key(v) for v in value))
    if isinstance(value, dict):
        return (3, frozenset((k, _unique_key(v)) for k, v in value.items()))
    return (4, value)


def _cut_repr(value: Any, limit: int = 200) -> str:
    """repr(value), cut at *limit* characters (a large array is not repeated whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unique(items: list) -> bool:
    """`uniqueItems` in linear time (a pairwise comparison takes minutes on a large array)."""
    return len({_unique_key(v) for v in items}) == len(items)


class _Generator:
    """Python source for a predicate: one `return False` per way a value can fail."""

    def __init__(self, root: Any = None, expanding: tuple[str, ...] = (), root_has_id: bool | None = None,
                 budget: list[int] | None = None):
        self.consts: dict[str, Any] = {"_search": search, "_any_equal": _any_equal, "_unique": _unique,
                                       "_integer": _integer, "_number": _number}
        self.names = 0
        self.root = root  # the whole schema: what a local `$ref` points into
        self.expanding = expanding  # the references being written out, outermost first
        self.root_has_id = root_has_id  # whether "$id" is anywhere in it (None: not looked yet)
        self.budget = budget if budget is not None else [_MAX_NODES]  # subschemas left to write out

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
        self.budget[0] -= 1
        if self.budget[0] < 0:  # references that fan out: jsonschema's (it does not write them out)
            raise _Outside
        t = schema.get("type")
        known_type = t if isinstance(t, str) else None  # what x is once the type check passed
        out = self._type_lines(t, x) + self._enum_lines(schema, x) + self._applied_lines(schema, x)
        # Each group of keywords applies to one type only: under `if <that type>:`, unless the
        # type check above already made sure of it.
        for kinds, test, lines in (
            (("integer", "number"), f"_number({x})", self._bound_lines(schema, x)),
            (("string",), f"isinstance({x}, str)", self._string_lines(schema, x)),
            (("array",), f"isinstance({x}, list)", self._array_lines(schema, x)),
            (("object",), f"isinstance({x}, dict)", self._object_lines(schema, x)),
        ):
            if not lines:
                continue
            if known_type in kinds:
                out.extend(line[4:] for line in lines)
            else:
                out.append(f"if {test}:")
                out.extend(lines)
        if len(out) > _MAX_LINES:
            raise _Outside
        return out

    def _applied_lines(self, schema: dict, x: str) -> list[str]:
        """`$ref` (a local JSON pointer, written out in place), `allOf` (each in place), `anyOf`
        and `oneOf` (a predicate of its own per subschema). `$defs` only holds subschemas."""
        out = []
        if "$ref" in schema:
            ref = schema["$ref"]
            target = _target(self.root, ref) if type(ref) is str and (ref == "#" or ref.startswith("#/")) \
                else _MISSING
            if self.root_has_id is None:
                self.root_has_id = _has_id(self.root)
            if target is _MISSING or ref in self.expanding or self.root_has_id:
                raise _Outside  # elsewhere, recursive, or relative to another base: jsonschema's
            self.expanding += (ref,)
            out += self.node(target, x)
            self.expanding = self.expanding[:-1]
        for key in ("allOf", "anyOf", "oneOf"):
            if key not in schema:
                continue
            subs = schema[key]
            if type(subs) is not list or not subs:
                raise _Outside
            if key == "allOf":
                for sub in subs:
                    out += self.node(sub, x)
                continue
            tests = [f"{self.const(self._predicate(sub))}({x})" for sub in subs]
            if key == "anyOf":
                out.append(f"if not ({' or '.join(tests)}): return False")
            else:
                out.append(f"if ({' + '.join(tests)}) != 1: return False")
        return out

    def _predicate(self, schema: Any):
        """A predicate of its own for a subschema (same root, same references being expanded)."""
        gen = _Generator(self.root, self.expanding, self.root_has_id, self.budget)
        return _predicate_of(gen, gen.node(schema, "v"))

    def _type_lines(self, t: Any, x: str) -> list[str]:
        """`type`: one test of the allowed type names."""
        if t is None:
            return []
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list):
            raise _Outside
        tests = [_TYPE_TESTS[n].format(x=x) if isinstance(n, str) and n in _TYPE_TESTS else "False"
                 for n in names]
        return [f"if not ({' or '.join(tests) or 'False'}): return False"]

    def _enum_lines(self, schema: dict, x: str) -> list[str]:
        """`enum` and `const`: a set lookup when every allowed value is a string."""
        out = []
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
        return out

    def _bound_lines(self, schema: dict, x: str) -> list[str]:
        """The numeric bounds (indented one level: they apply to numbers only)."""
        lines = []
        for key, op in _BOUNDS:
            if key in schema:
                bound = schema[key]
                if not isinstance(bound, (int, float)) or isinstance(bound, bool):
                    raise _Outside
                lines.append(f"    if not {x} {op} {self.const(bound)}: return False")
        return lines

    def _string_lines(self, schema: dict, x: str) -> list[str]:
        """Length and `pattern` (indented one level: they apply to strings only)."""
        lines = []
        if "minLength" in schema or "maxLength" in schema:
            lines += self._length(schema, x, "minLength", "maxLength")
        if "pattern" in schema:
            rx = straight_pattern(schema["pattern"]) if isinstance(schema["pattern"], str) else None
            if rx is None:
                import regex  # loaded only when a schema has a pattern that can backtrack

                try:
                    re.compile(schema["pattern"])  # what jsonschema accepts
                    rx = regex.compile(schema["pattern"])
                except (re.error, regex.error, TypeError):
                    raise _Outside from None
            lines.append(f"    if _search({self.const(rx)}, {x}) is None: return False")
        return lines

    def _array_lines(self, schema: dict, x: str) -> list[str]:
        """`items`, length and `uniqueItems` (indented one level: they apply to arrays only)."""
        lines = []
        if "items" in schema:
            if not isinstance(schema["items"], (dict, bool)):
                raise _Outside
            item = self.var()
            body = self.node(schema["items"], item)
            if body:
                lines.append(f"    for {item} in {x}:")
                lines += ["        " + line for line in body]
        if "minItems" in schema or "maxItems" in schema:
            lines += self._length(schema, x, "minItems", "maxItems")
        if schema.get("uniqueItems") is True:
            lines.append(f"    if not _unique({x}): return False")
        elif "uniqueItems" in schema and schema["uniqueItems"] is not False:
            raise _Outside
        return lines

    def _object_lines(self, schema: dict, x: str) -> list[str]:
        """`properties`, `required` and `additionalProperties` (indented one level: they apply
        to objects only)."""
        lines = []
        props = schema.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                raise _Outside
            for name, sub in props.items():
                value = self.var()
                body = self.node(sub, value)
                if body:
                    key = self.const(name)
                    lines.append(f"    if {key} in {x}:")
                    lines.append(f"        {value} = {x}[{key}]")
                    lines += ["        " + line for line in body]
        required = schema.get("required")
        if required is not None:
            if not isinstance(required, list):
                raise _Outside
            if required:
                k = self.var()
                lines.append(f"    for {k} in {self.const(tuple(required))}:")
                lines.append(f"        if {k} not in {x}: return False")
        if "additionalProperties" in schema:
            lines += self._additional_lines(schema["additionalProperties"], props, x)
        return lines

    def _additional_lines(self, extra: Any, props: Any, x: str) -> list[str]:
        """`additionalProperties`: the members not named in `properties`."""
        names_given = self.const(frozenset(props or ()))
        k, value = self.var(), self.var()
        body = self.node(extra, value)
        if body == ["return False"]:
            return [f"    for {k} in {x}:",
                    f"        if {k} not in {names_given}: return False"]
        if body:
            return [f"    for {k}, {value} in {x}.items():",
                    f"        if {k} not in {names_given}:"] + ["            " + line for line in body]
        return []

    def _length(self, schema: dict, x: str, low: str, high: str) -> list[str]:
        out = [f"    if len({x}) < {self.const(schema.get(low, 0))}: return False"]
        if schema.get(high) is not None:
            out.append(f"    if len({x}) > {self.const(schema[high])}: return False")
        return out


def _compile(schema: Any):
    """A predicate equivalent to jsonschema for the plain subset (generated Python), or None
    when the schema is outside it (or too deep for the generated code)."""
    gen = _Generator(schema)
    try:
        return _predicate_of(gen, gen.node(schema, "v"))
    except (_Outside, SyntaxError, RecursionError, MemoryError):
        return None


def _predicate_of(gen: _Generator, body: list[str]):
    source = "def check(v):\n" + "".join(f"    {line}\n" for line in body) + "    return True\n"
    # The text depends only on the schema's shape (its values are in the namespace):
    # schemas of one shape share the compiled code.
    code = _codes.get(source)
    if code is None:
        code = _codes.put(source, compile(source, "<JSON Schema>", "exec"))
    namespace = dict(gen.consts)
    exec(code, namespace)  # noqa: S102 (our own text)
    return namespace["check"]


def _has_id(schema: Any) -> bool:
    """Whether "$id" is a key anywhere in *schema* (a reference may then be relative to it)."""
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if "$id" in node:
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


_codes: Memo = Memo()


# ---------------------------------------------------------------- plain schemas, checked without jsonschema

_INF = float("inf")
_OTHER = object()
_DRAFT_2020_12 = ("https://json-schema.org/draft/2020-12/schema",
                  "https://json-schema.org/draft/2020-12/schema#")


def _plain_type(value: Any, depth: int, walk: _Walk) -> bool:
    if value.__class__ is str:
        return value in _TYPE_CHECKS
    return value.__class__ is list and all(t.__class__ is str and t in _TYPE_CHECKS for t in value)


def _plain_names(value: Any, depth: int, walk: _Walk) -> bool:
    return value.__class__ is list and all(n.__class__ is str for n in value)


def _plain_count(value: Any, depth: int, walk: _Walk) -> bool:
    return value.__class__ is int and value >= 0


def _plain_bound(value: Any, depth: int, walk: _Walk) -> bool:
    return value.__class__ in (int, float) and value == value and value not in (_INF, -_INF)


def _plain_subschema(value: Any, depth: int, walk: _Walk) -> bool:
    return plain_schema(value, depth + 1, walk)


def _plain_subschemas(value: Any, depth: int, walk: _Walk) -> bool:
    return value.__class__ is dict and all(plain_schema(sub, depth + 1, walk) for sub in value.values())


def _plain_list(value: Any, depth: int, walk: _Walk) -> bool:
    return value.__class__ is list and len(value) > 0 and all(plain_schema(sub, depth + 1, walk) for sub in value)


def _plain_ref(value: Any, depth: int, walk: _Walk) -> bool:
    """A reference to a plain subschema of the same schema by JSON pointer (the generated check
    writes it out in place); one that loops back through itself is left to jsonschema."""
    if value.__class__ is not str or not (value == "#" or value.startswith("#/")):
        return False
    target = _target(walk.root, value)
    return target is not _MISSING and plain_schema(target, depth + 1, walk)


def _plain_regex(value: Any, depth: int, walk: _Walk) -> bool:
    if value.__class__ is not str:
        return False
    try:
        re.compile(value)  # (cached by re)
    except re.error:
        return False
    return True


# The plain subset of JSON Schema (most tool schemas) and the test of the shape each keyword
# must have (None: any value).
_PLAIN_KEYS = {
    **dict.fromkeys(("description", "title", "default", "examples", "$comment", "format",
                     "deprecated", "readOnly", "writeOnly", "const")),
    "$schema": lambda value, depth, walk: value in _DRAFT_2020_12,  # the default draft, named: still plain
    "type": _plain_type, "required": _plain_names, "properties": _plain_subschemas,
    "items": _plain_subschema, "additionalProperties": _plain_subschema,
    "enum": lambda value, depth, walk: value.__class__ is list, "pattern": _plain_regex,
    "uniqueItems": lambda value, depth, walk: value.__class__ is bool,
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), _plain_bound),
    **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems"), _plain_count),
    **dict.fromkeys(("allOf", "anyOf", "oneOf"), _plain_list), "$ref": _plain_ref,
    **dict.fromkeys(("$defs", "definitions"), _plain_subschemas),
}


class _Walk:
    """One look at a whole schema: what a `$ref` points into, and how many more subschemas
    may be looked at (references that fan out are not plain)."""

    __slots__ = ("root", "left")

    def __init__(self, root: Any):
        self.root, self.left = root, _MAX_NODES


def plain_schema(schema: Any, depth: int = 0, walk: _Walk | None = None) -> bool:
    """True for a schema of the plain subset whose keywords all have their proper shapes
    (what the fast checks of schemas.py rely on); anything else gets the metaschema check. A
    reference followed is a level deeper: one that loops ends at the depth limit, not plain."""
    if schema.__class__ is not dict:
        return schema is True or schema is False
    if depth > 32:
        return False
    walk = _Walk(schema) if walk is None else walk
    walk.left -= 1
    if walk.left < 0:
        return False
    for key, value in schema.items():
        proper = _PLAIN_KEYS.get(key, _OTHER)
        if proper is None:
            continue
        if proper is _OTHER or not proper(value, depth, walk):
            return False
    return True


# ---------------------------------------------------------------- explaining a failure
#
# For a schema of the plain subset, why an instance fails is worked out here, the way
# jsonschema (Draft 2020-12) reports it: the same errors (instance path, schema path, keyword,
# instance) in the same order, and messages in jsonschema's wording (as of 4.26). Loading
# jsonschema costs ~90 ms: a run whose only schema work is plain never pays it.

_UNSET = object()


class SchemaIssue:
    """One reason an instance fails a schema (the parts of jsonschema's ValidationError that
    replayci reports)."""

    __slots__ = ("message", "path", "schema_path", "validator", "instance", "schema")

    def __init__(self, message: str, *, validator: Any = _UNSET, instance: Any = _UNSET,
                 schema: Any = _UNSET):
        self.message = message
        self.path: list = []
        self.schema_path: list = []
        self.validator, self.instance, self.schema = validator, instance, schema

    @property
    def absolute_path(self) -> tuple:
        return tuple(self.path)

    @property
    def absolute_schema_path(self) -> tuple:
        return tuple(self.schema_path)

    def __repr__(self) -> str:
        return f"SchemaIssue({self.message!r}, path={self.path}, schema_path={self.schema_path})"


def _is(value: Any, name: Any) -> bool:
    test = _TYPE_CHECKS.get(name) if isinstance(name, str) else None
    if test is None:
        raise _Outside  # an unknown type name: jsonschema decides (and refuses it)
    return test(value)



def _descend(instance: Any, schema: Any, path: Any = None, schema_path: Any = None):
    """The issues of *instance* against *schema*, each placed below *path* and *schema_path*
    (the member or index, and the schema's own key, that led here)."""
    if schema is True:
        return
    if schema is False:
        # (as jsonschema: neither *path* nor *schema_path* is added to this one)
        yield SchemaIssue(f"False schema does not allow {instance!r}", validator=None,
                          instance=instance, schema=schema)
        return
    if not isinstance(schema, dict):
        raise _Outside
    for keyword, value in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            if keyword not in _ANNOTATIONS:
                raise _Outside
            continue
        for issue in check(value, instance, schema):
            _place(issue, keyword, instance, schema)
            if path is not None:
                issue.path.insert(0, path)
            if schema_path is not None:
                issue.schema_path.insert(0, schema_path)
            yield issue


def _place(issue: SchemaIssue, keyword: str, instance: Any, schema: dict) -> None:
    """Fill in what a keyword's check left unset, and put the keyword first in its schema path."""
    if issue.validator is _UNSET:
        issue.validator = keyword
    if issue.instance is _UNSET:
        issue.instance = instance
    if issue.schema is _UNSET:
        issue.schema = schema
    issue.schema_path.insert(0, keyword)


def _k_type(types, instance, schema):
    types = [types] if isinstance(types, str) else types
    if not isinstance(types, list):
        raise _Outside
    if not any(_is(instance, t) for t in types):
        yield SchemaIssue(f"{instance!r} is not of type {', '.join(repr(t) for t in types)}")


def _k_enum(enums, instance, schema):
    if not isinstance(enums, list):
        raise _Outside
    if not _any_equal(instance, enums):
        yield SchemaIssue(f"{instance!r} is not one of {enums!r}")


def _k_const(const, instance, schema):
    if not json_equal(instance, const):
        yield SchemaIssue(f"{const!r} was expected")


def _bound(test, wording):
    def check(bound, instance, schema):
        if _number(instance) and not test(instance, bound):
            yield SchemaIssue(f"{instance!r} is {wording} {bound!r}")
    return check


def _size(kind, low: bool):
    def check(limit, instance, schema):
        if _is(instance, kind) and (len(instance) < limit if low else len(instance) > limit):
            if low:
                message = "should be non-empty" if limit == 1 else "is too short"
            else:
                message = "is expected to be empty" if limit == 0 else "is too long"
            yield SchemaIssue(f"{instance!r} {message}")
    return check


def _k_pattern(pattern, instance, schema):
    if isinstance(instance, str) and not search(pattern, instance):
        yield SchemaIssue(f"{instance!r} does not match {pattern!r}")


def _k_items(items, instance, schema):
    if not isinstance(instance, list) or not instance:
        return
    if items is False:
        rest = instance if len(instance) != 1 else instance[0]
        yield SchemaIssue(f"Expected at most 0 items but found {len(instance)} extra: {rest!r}")
        return
    for index, item in enumerate(instance):
        yield from _descend(item, items, path=index)


def _k_unique(unique, instance, schema):
    if unique and isinstance(instance, list) and not _unique(instance):
        yield SchemaIssue(f"{_cut_repr(instance)} has non-unique elements")


def _k_properties(properties, instance, schema):
    if not isinstance(instance, dict):
        return
    for name, subschema in properties.items():
        if name in instance:
            yield from _descend(instance[name], subschema, path=name, schema_path=name)


def _k_required(required, instance, schema):
    if not isinstance(instance, dict):
        return
    for name in required:
        if name not in instance:
            yield SchemaIssue(f"{name!r} is a required property")


def _k_additional(extra, instance, schema):
    if not isinstance(instance, dict):
        return
    known = schema.get("properties", {})
    extras = [name for name in instance if name not in known]
    if isinstance(extra, dict):
        # (jsonschema goes through these in set order, which varies between processes;
        # instance order here)
        for name in extras:
            yield from _descend(instance[name], extra, path=name)
    elif not extra and extras:
        names = sorted(extras, key=str)
        verb = "was" if len(names) == 1 else "were"
        yield SchemaIssue(f"Additional properties are not allowed "
                          f"({', '.join(repr(n) for n in names)} {verb} unexpected)")


_KEYWORDS = {
    "type": _k_type, "enum": _k_enum, "const": _k_const,
    "minimum": _bound(lambda v, b: v >= b, "less than the minimum of"),
    "maximum": _bound(lambda v, b: v <= b, "greater than the maximum of"),
    "exclusiveMinimum": _bound(lambda v, b: v > b, "less than or equal to the minimum of"),
    "exclusiveMaximum": _bound(lambda v, b: v < b, "greater than or equal to the maximum of"),
    "minLength": _size("string", True), "maxLength": _size("string", False),
    "minItems": _size("array", True), "maxItems": _size("array", False),
    "pattern": _k_pattern, "items": _k_items, "uniqueItems": _k_unique,
    "properties": _k_properties, "required": _k_required, "additionalProperties": _k_additional,
}


def _relevance(issue: SchemaIssue) -> tuple:
    """jsonschema's relevance key (deeper first, then earlier, then matching the type)."""
    try:
        expected = issue.schema["type"]
    except (KeyError, TypeError):
        matches = False
    else:
        expected = [expected] if isinstance(expected, str) else expected
        matches = any(_is(issue.instance, t) for t in expected)
    return (-len(issue.path), issue.path, True, False, not matches)


def explain(schema: Any, instance: Any) -> list[SchemaIssue] | None:
    """Why *instance* fails *schema* of the plain subset, most relevant first (as
    first_errors would say); None when the schema is outside what this covers."""
    try:
        return sorted(_descend(instance, schema), key=_relevance)
    except _Outside:
        return None


class CompiledSchema:
    """A schema with its fast predicate (when it has one) and a validator, each built on
    first use (a request declares many tools; a response calls few)."""

    __slots__ = ("schema", "_fast", "_validator", "_problem")

    def __init__(self, schema: Any, validator=None):
        self.schema = schema
        self._fast = _UNBUILT
        self._validator = validator
        self._problem = _UNBUILT

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

    def problem(self) -> str | None:
        """Why the schema is not a valid JSON Schema, None when it is (a plain schema passes
        at once; others get the metaschema check), worked out once."""
        if self._problem is _UNBUILT:
            why = None
            if not plain_schema(self.schema):
                try:
                    self._validator = validator_for(self.schema, check=True)
                except SchemaError as exc:
                    why = str(exc)
            self._problem = why
        return self._problem

    def is_valid(self, instance: Any) -> bool:
        fast = self._fast if self._fast is not _UNBUILT else self.fast
        try:
            return fast(instance) if fast is not None else self.validator.is_valid(instance)
        except RecursionError:
            return False  # a value too deep to check: it fails, with _too_deep() as the reason

    def first_error(self, instance: Any):
        """The first reason *instance* fails, in the order the schema lists its keywords
        (jsonschema's first error), or None when it is valid."""
        if self.is_valid(instance):
            return None
        try:
            if self.fast is not None:
                try:
                    return next(_descend(instance, self.schema), None)
                except _Outside:
                    pass
            return next(iter(self.validator.iter_errors(instance)), None)
        except RecursionError:
            return _too_deep()

    def errors(self, instance: Any) -> list:
        """Why *instance* fails, most relevant first: worked out here for the plain subset,
        by jsonschema otherwise."""
        try:
            if self.fast is not None:
                found = explain(self.schema, instance)
                if found is not None:
                    return found
            return first_errors(self.validator, instance)
        except RecursionError:
            return [_too_deep()]


def _too_deep() -> SchemaIssue:
    """The reason given for a value nested too deeply to check against its schema."""
    return SchemaIssue("is nested too deeply to check against the schema", validator="depth",
                       instance=None, schema=None)


_UNBUILT = object()


def compile_schema(schema: Any, *, check: bool = False) -> CompiledSchema:
    """A CompiledSchema for *schema*. With *check*, a schema that is not plain gets
    jsonschema's metaschema check (SchemaError when it is not a valid JSON Schema)."""
    validator = None
    if check and not plain_schema(schema):
        validator = validator_for(schema, check=True)
    return CompiledSchema(schema, validator)


_shared: Memo = Memo()  # canonical JSON of a schema -> its CompiledSchema


def shared_schema(schema: Any, text: str | None = None) -> CompiledSchema:
    """The CompiledSchema of *schema*, one per distinct schema value (*text*: its canonical
    JSON, when known): fixtures whose tools differ elsewhere (a description, another tool)
    share each tool's predicate and check."""
    if not fast_paths():
        return CompiledSchema(schema)
    if text is None:
        try:
            text = canonical_json(schema)
        except (TypeError, ValueError):
            return CompiledSchema(schema)
    found = _shared.get(text)
    if found is None:
        found = _shared.put(text, CompiledSchema(schema))
    return found


def tool_schema(tools_key: str, i: int, schema: Any) -> CompiledSchema:
    """shared_schema of *schema*, the parameter schema of tool *i* in the tools list keyed
    *tools_key* (a ToolsKey knows each schema's canonical JSON already)."""
    texts = getattr(tools_key, "schemas", ())
    return shared_schema(schema, texts[i] if i < len(texts) else None)


_tables: Memo = Memo()  # tools key -> {name: CompiledSchema}


def tool_table(tools_key: str, tools: Any) -> dict[str, CompiledSchema]:
    """The compiled parameter schemas of a request's tools, by name; one per distinct tools list."""
    table = _tables.get(tools_key)
    if table is None:
        table = {}
        for i, tool in enumerate(tools if isinstance(tools, list) else ()):
            if not isinstance(tool, dict):
                continue
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            name = fn.get("name")
            schema = fn.get("parameters", fn.get("input_schema"))
            if schema is None:  # declared without parameters (OpenAI and Gemini allow it): checked by name
                schema = True
            if isinstance(name, str) and isinstance(schema, (dict, bool)):
                table[name] = tool_schema(tools_key, i, schema)
        _tables.put(tools_key, table)
    return table
