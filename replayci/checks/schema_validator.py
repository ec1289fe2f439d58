"""jsonschema's validators, built once per distinct schema (Draft 2020-12 by default), with
`pattern` under the regex time limit and `uniqueItems` in linear time."""
from __future__ import annotations

from typing import Any

from ..core.hashing import canonical_json
from ..core.memo import Memo
from .schema_patterns import search
from .schema_refs import MAX_SCHEMA_DEPTH, SchemaError, check_references
from .schema_values import cut_repr, unique

_validators: Memo = Memo()


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

        def unique_items(validator, unique_, instance, schema):
            if unique_ and validator.is_type(instance, "array") and not unique(instance):
                yield ValidationError(f"{cut_repr(instance)} has non-unique elements")

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
