"""Why an instance fails a plain schema, keyword by keyword, as jsonschema says it.

The same errors as jsonschema (Draft 2020-12) reports (instance path, schema path, keyword,
instance), in the same order, in jsonschema's wording (as of 4.26). Loading jsonschema costs
~90 ms: a run whose only schema work is plain never pays it. Each function here is the
explanation of one row of the keyword table (schema_keywords.KEYWORDS); *descend* explains a
subschema, placing its issues below a member or index.
"""
from __future__ import annotations

from typing import Any

from ..core.jsonvalue import is_number, json_equal
from .schema_patterns import search
from .schema_values import Outside, any_equal, cut_repr, is_type, unique

UNSET = object()


class SchemaIssue:
    """One reason an instance fails a schema (the parts of jsonschema's ValidationError that
    replayci reports)."""

    __slots__ = ("message", "path", "schema_path", "validator", "instance", "schema")

    def __init__(self, message: str, *, validator: Any = UNSET, instance: Any = UNSET,
                 schema: Any = UNSET):
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


def place(issue: SchemaIssue, keyword: str, instance: Any, schema: dict) -> None:
    """Fill in what a keyword's check left unset, and put the keyword first in its schema path."""
    if issue.validator is UNSET:
        issue.validator = keyword
    if issue.instance is UNSET:
        issue.instance = instance
    if issue.schema is UNSET:
        issue.schema = schema
    issue.schema_path.insert(0, keyword)


def by_jsonschema(value, instance, schema, descend):
    """A keyword only jsonschema explains (a reference, a combination of subschemas)."""
    raise Outside


def false_schema(instance: Any) -> SchemaIssue:
    # (as jsonschema: neither the member nor the schema's key that led here is added to this one)
    return SchemaIssue(f"False schema does not allow {instance!r}", validator=None, instance=instance, schema=False)


def type_(types, instance, schema, descend):
    types = [types] if isinstance(types, str) else types
    if not isinstance(types, list):
        raise Outside
    if not any(is_type(instance, t) for t in types):
        yield SchemaIssue(f"{instance!r} is not of type {', '.join(repr(t) for t in types)}")


def enum(enums, instance, schema, descend):
    if not isinstance(enums, list):
        raise Outside
    if not any_equal(instance, enums):
        yield SchemaIssue(f"{instance!r} is not one of {enums!r}")


def const(const, instance, schema, descend):
    if not json_equal(instance, const):
        yield SchemaIssue(f"{const!r} was expected")


def bound(test, wording):
    """The explanation of a numeric bound that *test* (value, bound) holds."""
    def check(limit, instance, schema, descend):
        if is_number(instance) and not test(instance, limit):
            yield SchemaIssue(f"{instance!r} is {wording} {limit!r}")
    return check


def size(kind, low: bool):
    """The explanation of a length limit of a string or an array (*low*: a minimum)."""
    def check(limit, instance, schema, descend):
        if is_type(instance, kind) and (len(instance) < limit if low else len(instance) > limit):
            if low:
                message = "should be non-empty" if limit == 1 else "is too short"
            else:
                message = "is expected to be empty" if limit == 0 else "is too long"
            yield SchemaIssue(f"{instance!r} {message}")
    return check


def pattern(pattern, instance, schema, descend):
    if isinstance(instance, str) and not search(pattern, instance):
        yield SchemaIssue(f"{instance!r} does not match {pattern!r}")


def items(items, instance, schema, descend):
    if not isinstance(instance, list) or not instance:
        return
    if items is False:
        rest = instance if len(instance) != 1 else instance[0]
        yield SchemaIssue(f"Expected at most 0 items but found {len(instance)} extra: {rest!r}")
        return
    for index, item in enumerate(instance):
        yield from descend(item, items, path=index)


def unique_items(unique_, instance, schema, descend):
    if unique_ and isinstance(instance, list) and not unique(instance):
        yield SchemaIssue(f"{cut_repr(instance)} has non-unique elements")


def properties(properties, instance, schema, descend):
    if not isinstance(instance, dict):
        return
    for name, subschema in properties.items():
        if name in instance:
            yield from descend(instance[name], subschema, path=name, schema_path=name)


def required(required, instance, schema, descend):
    if not isinstance(instance, dict):
        return
    for name in required:
        if name not in instance:
            yield SchemaIssue(f"{name!r} is a required property")


def additional_properties(extra, instance, schema, descend):
    if not isinstance(instance, dict):
        return
    known = schema.get("properties", {})
    extras = [name for name in instance if name not in known]
    if isinstance(extra, dict):
        # (jsonschema goes through these in set order, which varies between processes;
        # instance order here)
        for name in extras:
            yield from descend(instance[name], extra, path=name)
    elif not extra and extras:
        names = sorted(extras, key=str)
        verb = "was" if len(names) == 1 else "were"
        yield SchemaIssue(f"Additional properties are not allowed "
                          f"({', '.join(repr(n) for n in names)} {verb} unexpected)")


def relevance(issue: SchemaIssue) -> tuple:
    """jsonschema's relevance key (deeper first, then earlier, then matching the type)."""
    try:
        expected = issue.schema["type"]
    except (KeyError, TypeError):
        matches = False
    else:
        expected = [expected] if isinstance(expected, str) else expected
        matches = any(is_type(issue.instance, t) for t in expected)
    return (-len(issue.path), issue.path, True, False, not matches)


def too_deep() -> SchemaIssue:
    """The reason given for a value nested too deeply to check against its schema."""
    return SchemaIssue("is nested too deeply to check against the schema", validator="depth",
                       instance=None, schema=None)
