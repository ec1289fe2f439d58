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
    if v is not None:
        return v
    import jsonschema
    from jsonschema import validators

    default = jsonschema.Draft202012Validator
    cls = validators.validator_for(schema, default=default) if isinstance(schema, dict) else default
    if check:
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise SchemaError(f"{exc.message}" + (f" (at /{where})" if where else "")) from None
    v = cls(schema)
    _validators[key] = v
    return v


def first_errors(validator, instance: Any) -> list:
    """Validation errors, most relevant first (jsonschema's own ordering)."""
    from jsonschema.exceptions import relevance

    return sorted(validator.iter_errors(instance), key=relevance)
