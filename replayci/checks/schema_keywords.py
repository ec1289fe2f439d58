"""The one table of the JSON Schema keywords replayci checks without jsonschema.

Each row carries the keyword's shape in the plain subset (schema_shapes), the code the
generated predicate holds for it (schema_code) and its explanation of a failure
(schema_explain). A keyword with no row is outside: jsonschema checks and explains it. The
plain subset (`plain_schema`) is what a pack's schemas may use without the metaschema check;
the generated predicate covers every row with code; the explanation, every row but those only
jsonschema explains (references and combinations).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from . import schema_code as code
from . import schema_explain as why
from . import schema_shapes as shape
from .schema_explain import SchemaIssue
from .schema_values import Outside


class Keyword(NamedTuple):
    """shape: (value, depth, walk) -> whether the value is plain (None: any value is);
    write: the generated code (None: none, an annotation or subschemas kept for references);
    explain: its issues (None: nothing to explain, an annotation);
    group: the type whose values the code applies to (None: every value)."""

    shape: Callable | None
    write: Callable | None
    explain: Callable | None
    group: str | None = None


_ANNOTATION = Keyword(None, None, None)
_BOUNDS = (("minimum", ">=", lambda v, b: v >= b, "less than the minimum of"),
           ("maximum", "<=", lambda v, b: v <= b, "greater than the maximum of"),
           ("exclusiveMinimum", ">", lambda v, b: v > b, "less than or equal to the minimum of"),
           ("exclusiveMaximum", "<", lambda v, b: v < b, "greater than or equal to the maximum of"))

# In the order the generated code tests them: first what applies to any value, then by group.
KEYWORDS: dict[str, Keyword] = {
    "type": Keyword(shape.type_names, code.write_type, why.type_),
    "enum": Keyword(shape.a_list, code.write_enum, why.enum),
    "const": Keyword(None, code.write_const, why.const),
    "$ref": Keyword(shape.ref, code.write_ref, why.by_jsonschema),
    "allOf": Keyword(shape.subschema_list, code.write_all_of, why.by_jsonschema),
    "anyOf": Keyword(shape.subschema_list, code.write_any_of, why.by_jsonschema),
    "oneOf": Keyword(shape.subschema_list, code.write_one_of, why.by_jsonschema),
    **{name: Keyword(shape.bound, code.write_bound(op), why.bound(test, wording), "number")
       for name, op, test, wording in _BOUNDS},
    "minLength": Keyword(shape.count, code.write_min_length, why.size("string", True), "string"),
    "maxLength": Keyword(shape.count, code.write_max_length, why.size("string", False), "string"),
    "pattern": Keyword(shape.regex, code.write_pattern, why.pattern, "string"),
    "items": Keyword(shape.subschema, code.write_items, why.items, "array"),
    "minItems": Keyword(shape.count, code.write_min_length, why.size("array", True), "array"),
    "maxItems": Keyword(shape.count, code.write_max_length, why.size("array", False), "array"),
    "uniqueItems": Keyword(shape.a_bool, code.write_unique_items, why.unique_items, "array"),
    "properties": Keyword(shape.subschemas, code.write_properties, why.properties, "object"),
    "required": Keyword(shape.names, code.write_required, why.required, "object"),
    "additionalProperties": Keyword(shape.subschema, code.write_additional, why.additional_properties, "object"),
    "$defs": Keyword(shape.subschemas, None, why.by_jsonschema),
    "definitions": Keyword(shape.subschemas, None, why.by_jsonschema),
    "$schema": Keyword(shape.draft, None, None),
    "$id": Keyword(shape.not_plain, None, None),  # references may then be relative to it
    **dict.fromkeys(("description", "title", "default", "examples", "$comment", "format", "deprecated",
                     "readOnly", "writeOnly"), _ANNOTATION),
}

# The table by use, looked up per keyword of every schema checked.
_SHAPES = {name: row.shape for name, row in KEYWORDS.items()}
_EXPLAINERS = {name: row.explain for name, row in KEYWORDS.items()}
_WRITERS = tuple((name, row.write, row.group) for name, row in KEYWORDS.items() if row.write is not None)
_KNOWN = frozenset(KEYWORDS)
_MAX_PLAIN_DEPTH = 32


class _Walk:
    """One look at a whole schema: what a `$ref` points into, and how many more subschemas
    may be looked at (references that fan out are not plain)."""

    __slots__ = ("root", "left")

    def __init__(self, root: Any):
        self.root, self.left = root, code.MAX_NODES

    def plain(self, schema: Any, depth: int) -> bool:
        return plain_schema(schema, depth, self)


def plain_schema(schema: Any, depth: int = 0, walk: _Walk | None = None) -> bool:
    """True for a schema of the plain subset whose keywords all have their proper shapes
    (what the fast checks rely on); anything else gets the metaschema check. A reference
    followed is a level deeper: one that loops ends at the depth limit, not plain."""
    if schema.__class__ is not dict:
        return schema is True or schema is False
    if depth > _MAX_PLAIN_DEPTH:
        return False
    walk = _Walk(schema) if walk is None else walk
    walk.left -= 1
    if walk.left < 0:
        return False
    for key, value in schema.items():
        proper = _SHAPES.get(key, shape.not_plain)
        if proper is not None and not proper(value, depth, walk):
            return False
    return True


def compile_predicate(schema: Any):
    """A predicate equivalent to jsonschema for the keywords of the table (generated Python),
    or None when the schema is outside them (or too deep for the generated code)."""
    gen = code.Generator(_WRITERS, _KNOWN, schema)
    try:
        return code.predicate_of(gen, gen.node(schema, "v"))
    except (Outside, SyntaxError, RecursionError, MemoryError):
        return None


def issues(instance: Any, schema: Any, path: Any = None, schema_path: Any = None):
    """The issues of *instance* against *schema*, in the order the schema lists its keywords,
    each placed below *path* and *schema_path* (the member or index, and the schema's own key,
    that led here); Outside for a keyword only jsonschema explains."""
    if schema is True:
        return
    if schema is False:
        yield why.false_schema(instance)
        return
    if not isinstance(schema, dict):
        raise Outside
    for keyword, value in schema.items():
        explain_ = _EXPLAINERS.get(keyword, why.by_jsonschema)
        if explain_ is None:
            continue
        for issue in explain_(value, instance, schema, issues):
            why.place(issue, keyword, instance, schema)
            if path is not None:
                issue.path.insert(0, path)
            if schema_path is not None:
                issue.schema_path.insert(0, schema_path)
            yield issue


def explain(schema: Any, instance: Any) -> list[SchemaIssue] | None:
    """Why *instance* fails *schema* of the plain subset, most relevant first (as
    first_errors would say); None when the schema is outside what this covers."""
    try:
        return sorted(issues(instance, schema), key=why.relevance)
    except Outside:
        return None
