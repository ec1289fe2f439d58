"""JSON Schema for the checks: one compiled schema per distinct schema, its fast predicate and
explanations for the plain subset (the keyword table of schema_keywords), jsonschema beyond it.

The parts: references and depth (schema_refs), `pattern` under the regex time limit
(schema_patterns), jsonschema's validators (schema_validator), and the keyword table with its
shape checks (schema_shapes), generated code (schema_code) and explanations (schema_explain).
"""
from __future__ import annotations

from typing import Any

from ..core.hashing import canonical_json
from ..core.memo import Memo, fast_paths
from .schema_explain import SchemaIssue, too_deep
from .schema_keywords import compile_predicate, explain, issues, plain_schema
from .schema_patterns import search, straight_pattern
from .schema_refs import MAX_SCHEMA_DEPTH, SchemaError, check_references
from .schema_validator import first_errors, validator_for
from .schema_values import Outside

__all__ = ["MAX_SCHEMA_DEPTH", "CompiledSchema", "SchemaError", "SchemaIssue", "check_references",
           "compile_schema", "explain", "first_errors", "plain_schema", "search", "shared_schema",
           "straight_pattern", "tool_schema", "tool_table", "validator_for"]


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
            self._fast = None if other_draft else compile_predicate(schema)
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
            return False  # a value too deep to check: it fails, with too_deep() as the reason

    def first_error(self, instance: Any):
        """The first reason *instance* fails, in the order the schema lists its keywords
        (jsonschema's first error), or None when it is valid."""
        if self.is_valid(instance):
            return None
        try:
            if self.fast is not None:
                try:
                    return next(issues(instance, self.schema), None)
                except Outside:
                    pass
            return next(iter(self.validator.iter_errors(instance)), None)
        except RecursionError:
            return too_deep()

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
            return [too_deep()]


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
