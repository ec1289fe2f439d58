"""Plain schemas written out as Python: a predicate many times faster than jsonschema.

Most tool schemas use a small, plain subset of JSON Schema. For those, a generated Python
predicate answers "valid?"; jsonschema still runs when the answer is "no", to explain the
failure, and for any schema outside the subset. Each `write_*` function here is the generated
code of one row of the keyword table (schema_keywords.KEYWORDS): the lines (indented from 0)
that return False when the value named *x* fails the keyword. A row's group (a type) puts its
lines under one test of that type, unless the schema's own `type` already made sure of it.
"""
from __future__ import annotations

import re
from typing import Any

from ..core.jsonvalue import is_number
from ..core.memo import Memo
from .schema_patterns import search, straight_pattern
from .schema_refs import MISSING, has_id, target
from .schema_values import TYPES, Outside, any_equal, is_integer, unique

MAX_LINES = 4000
MAX_NODES = 2000  # subschemas written out for one schema, references followed included
# The groups, in the order their lines are written: the types each applies to and its test.
GROUPS = {
    "number": (("integer", "number"), "_number({x})"),
    "string": (("string",), "isinstance({x}, str)"),
    "array": (("array",), "isinstance({x}, list)"),
    "object": (("object",), "isinstance({x}, dict)"),
}


class Generator:
    """Python source for a predicate: one `return False` per way a value can fail. *rows*: the
    (keyword, write function, group) of the keyword table that write code, in writing order;
    *known*: every keyword of the table (a schema with any other is Outside)."""

    def __init__(self, rows: tuple, known: frozenset, root: Any = None, expanding: tuple[str, ...] = (),
                 root_has_id: bool | None = None, budget: list[int] | None = None):
        self.rows, self.known = rows, known
        self.consts: dict[str, Any] = {"_search": search, "_any_equal": any_equal, "_unique": unique,
                                       "_integer": is_integer, "_number": is_number}
        self.names = 0
        self.root = root  # the whole schema: what a local `$ref` points into
        self.expanding = expanding  # the references being written out, outermost first
        self.root_has_id = root_has_id  # whether "$id" is anywhere in it (None: not looked yet)
        self.budget = budget if budget is not None else [MAX_NODES]  # subschemas left to write out

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
        if not isinstance(schema, dict) or not schema.keys() <= self.known:
            raise Outside
        self.budget[0] -= 1
        if self.budget[0] < 0:  # references that fan out: jsonschema's (it does not write them out)
            raise Outside
        t = schema.get("type")
        known_type = t if isinstance(t, str) else None  # what x is once the type check passed
        out: list[str] = []
        grouped: dict[str, list[str]] = {}
        for keyword, write, group in self.rows:
            if keyword in schema:
                lines = write(self, schema[keyword], schema, x)
                if group is None:
                    out += lines
                elif lines:
                    grouped.setdefault(group, []).extend(lines)
        for group, (kinds, test) in GROUPS.items():
            lines = grouped.get(group)
            if not lines:
                continue
            if known_type in kinds:
                out.extend(lines)
            else:
                out.append(f"if {test.format(x=x)}:")
                out.extend("    " + line for line in lines)
        if len(out) > MAX_LINES:
            raise Outside
        return out

    def predicate(self, schema: Any):
        """A predicate of its own for a subschema (same root, same references being expanded)."""
        gen = Generator(self.rows, self.known, self.root, self.expanding, self.root_has_id, self.budget)
        return predicate_of(gen, gen.node(schema, "v"))


def predicate_of(gen: Generator, body: list[str]):
    source = "def check(v):\n" + "".join(f"    {line}\n" for line in body) + "    return True\n"
    # The text depends only on the schema's shape (its values are in the namespace):
    # schemas of one shape share the compiled code.
    code = _codes.get(source)
    if code is None:
        code = _codes.put(source, compile(source, "<JSON Schema>", "exec"))
    namespace = dict(gen.consts)
    exec(code, namespace)  # noqa: S102 (our own text)
    return namespace["check"]


_codes: Memo = Memo()


def write_type(gen: Generator, t: Any, schema: dict, x: str) -> list[str]:
    """`type`: one test of the allowed type names."""
    if t is None:
        return []
    names = [t] if isinstance(t, str) else t
    if not isinstance(names, list):
        raise Outside
    tests = [TYPES[n].code.format(x=x) if isinstance(n, str) and n in TYPES else "False" for n in names]
    return [f"if not ({' or '.join(tests) or 'False'}): return False"]


def write_enum(gen: Generator, allowed: Any, schema: dict, x: str) -> list[str]:
    """`enum`: a set lookup when every allowed value is a string."""
    if not isinstance(allowed, list):
        raise Outside
    if allowed and all(type(a) is str for a in allowed):
        return [f"if not (type({x}) is str and {x} in {gen.const(frozenset(allowed))}): return False"]
    return [f"if not _any_equal({x}, {gen.const(allowed)}): return False"]


def write_const(gen: Generator, value: Any, schema: dict, x: str) -> list[str]:
    """`const`: an enum of one value."""
    return write_enum(gen, [value], schema, x)


def write_ref(gen: Generator, ref: Any, schema: dict, x: str) -> list[str]:
    """`$ref`: a local JSON pointer, written out in place."""
    found = target(gen.root, ref) if type(ref) is str and (ref == "#" or ref.startswith("#/")) else MISSING
    if gen.root_has_id is None:
        gen.root_has_id = has_id(gen.root)
    if found is MISSING or ref in gen.expanding or gen.root_has_id:
        raise Outside  # elsewhere, recursive, or relative to another base: jsonschema's
    gen.expanding += (ref,)
    lines = gen.node(found, x)
    gen.expanding = gen.expanding[:-1]
    return lines


def _subschemas(subs: Any) -> list:
    if type(subs) is not list or not subs:
        raise Outside
    return subs


def write_all_of(gen: Generator, subs: Any, schema: dict, x: str) -> list[str]:
    """`allOf`: each subschema in place."""
    return [line for sub in _subschemas(subs) for line in gen.node(sub, x)]


def write_any_of(gen: Generator, subs: Any, schema: dict, x: str) -> list[str]:
    """`anyOf`: a predicate of its own per subschema, one of which must hold."""
    tests = [f"{gen.const(gen.predicate(sub))}({x})" for sub in _subschemas(subs)]
    return [f"if not ({' or '.join(tests)}): return False"]


def write_one_of(gen: Generator, subs: Any, schema: dict, x: str) -> list[str]:
    """`oneOf`: a predicate of its own per subschema, exactly one of which must hold."""
    tests = [f"{gen.const(gen.predicate(sub))}({x})" for sub in _subschemas(subs)]
    return [f"if ({' + '.join(tests)}) != 1: return False"]


def write_bound(op: str):
    """The numeric bound compared by *op* (`minimum`: >=)."""
    def write(gen: Generator, limit: Any, schema: dict, x: str) -> list[str]:
        if not isinstance(limit, (int, float)) or isinstance(limit, bool):
            raise Outside
        return [f"if not {x} {op} {gen.const(limit)}: return False"]
    return write


def write_min_length(gen: Generator, limit: Any, schema: dict, x: str) -> list[str]:
    """`minLength`, `minItems`."""
    return [f"if len({x}) < {gen.const(limit)}: return False"]


def write_max_length(gen: Generator, limit: Any, schema: dict, x: str) -> list[str]:
    """`maxLength`, `maxItems` (null: no limit)."""
    return [] if limit is None else [f"if len({x}) > {gen.const(limit)}: return False"]


def write_pattern(gen: Generator, pattern: Any, schema: dict, x: str) -> list[str]:
    """`pattern`: re for a straight pattern, else regex under the time limit."""
    rx = straight_pattern(pattern) if isinstance(pattern, str) else None
    if rx is None:
        import regex  # loaded only when a schema has a pattern that can backtrack

        try:
            re.compile(pattern)  # what jsonschema accepts
            rx = regex.compile(pattern)
        except (re.error, regex.error, TypeError):
            raise Outside from None
    return [f"if _search({gen.const(rx)}, {x}) is None: return False"]


def write_items(gen: Generator, items: Any, schema: dict, x: str) -> list[str]:
    """`items`: every element."""
    if not isinstance(items, (dict, bool)):
        raise Outside
    item = gen.var()
    body = gen.node(items, item)
    return [f"for {item} in {x}:"] + ["    " + line for line in body] if body else []


def write_unique_items(gen: Generator, flag: Any, schema: dict, x: str) -> list[str]:
    """`uniqueItems` in linear time."""
    if flag is True:
        return [f"if not _unique({x}): return False"]
    if flag is not False:
        raise Outside
    return []


def write_properties(gen: Generator, props: Any, schema: dict, x: str) -> list[str]:
    """`properties`: each member present."""
    if props is None:
        return []
    if not isinstance(props, dict):
        raise Outside
    lines = []
    for name, sub in props.items():
        value = gen.var()
        body = gen.node(sub, value)
        if body:
            key = gen.const(name)
            lines += [f"if {key} in {x}:", f"    {value} = {x}[{key}]"] + ["    " + line for line in body]
    return lines


def write_required(gen: Generator, required: Any, schema: dict, x: str) -> list[str]:
    """`required`: every name present."""
    if required is None:
        return []
    if not isinstance(required, list):
        raise Outside
    if not required:
        return []
    k = gen.var()
    return [f"for {k} in {gen.const(tuple(required))}:", f"    if {k} not in {x}: return False"]


def write_additional(gen: Generator, extra: Any, schema: dict, x: str) -> list[str]:
    """`additionalProperties`: the members not named in `properties`."""
    names_given = gen.const(frozenset(schema.get("properties") or ()))
    k, value = gen.var(), gen.var()
    body = gen.node(extra, value)
    if body == ["return False"]:
        return [f"for {k} in {x}:", f"    if {k} not in {names_given}: return False"]
    if body:
        return [f"for {k}, {value} in {x}.items():", f"    if {k} not in {names_given}:"] + \
            ["        " + line for line in body]
    return []
