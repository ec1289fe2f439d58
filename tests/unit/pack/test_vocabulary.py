"""The key tables' value checks: JSON types as the tables name them."""
from __future__ import annotations

import pytest

from replayci.pack import vocabulary as spec


@pytest.mark.parametrize("kinds, value, fits", [
    ("integer", 3, True), ("integer", True, False), ("integer", 1.0, False),
    ("number", 1.5, True), ("number", 2, True), ("number", False, False),
    (["boolean", "integer"], True, True), (["boolean", "integer"], 7, True), ("boolean", 1, False),
    ("string", "x", True), ("string", None, False), (["string", "null"], None, True),
    ("array", [], True), ("array", (), False), ("object", {}, True), ("null", 0, False),
])
def test_a_value_fits_the_types_its_entry_names(kinds, value, fits):
    entry = {"type": kinds, "x-expected": "it"}
    assert (spec.check_value(entry, value) is None) == fits
    with_items = {**entry, "items": {"type": "string"}}  # the predicate of several checks, not the type alone
    assert (spec.check_value(with_items, value) is None) == fits
