"""record: a frozen dataclass without per-class compiled methods, behaving as @dataclass(frozen=True)."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from replayci.core.records import record


def _define(decorate):
    class Point:
        x: int
        label: str = "p"
        tags: tuple = dataclasses.field(default_factory=tuple)
        note: str = dataclasses.field(default="", compare=False, repr=False)

    Point.__qualname__ = "Point"
    return decorate(Point)


RECORD = _define(record)
DATACLASS = _define(dataclasses.dataclass(frozen=True))


@record
class Pair:  # at module level: pickle finds its class by name
    first: int
    second: tuple = ()


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, "a"), {"tags": ("t",)}), ((), {"x": 2, "note": "n"}),
                                          ((1, "a", ("u",), "n"), {})])
def test_same_values_equality_hash_and_repr_as_a_frozen_dataclass(args, kwargs):
    mine, theirs = RECORD(*args, **kwargs), DATACLASS(*args, **kwargs)
    assert [getattr(mine, f.name) for f in dataclasses.fields(mine)] == \
        [getattr(theirs, f.name) for f in dataclasses.fields(theirs)]
    assert repr(mine) == repr(theirs)
    assert mine == RECORD(*args, **kwargs) and hash(mine) == hash(RECORD(*args, **kwargs))
    assert mine == dataclasses.replace(mine, note="other")  # a field left out of comparison
    assert mine != dataclasses.replace(mine, x=99) and mine != theirs


def test_fresh_default_from_each_factory():
    assert RECORD(1).tags == () and RECORD(1, tags=("a",)).tags == ("a",)


def test_writes_refused_as_a_frozen_dataclass_refuses_them():
    p = RECORD(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'label'"):
        del p.label
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.other = 1


def test_replace_pickle_copy_and_match_args():
    p = RECORD(1, "a", ("t",), "n")
    assert dataclasses.replace(p, label="b") == RECORD(1, "b", ("t",))
    assert copy.deepcopy(p) == p and copy.copy(p) == p
    pair = Pair(1, ("a",))
    assert pickle.loads(pickle.dumps(pair)) == pair
    assert RECORD.__match_args__ == DATACLASS.__match_args__ and dataclasses.is_dataclass(p)


@pytest.mark.parametrize("args, kwargs", [((), {}), ((1, "a", (), "n", "extra"), {}), ((1,), {"x": 1}),
                                          ((1,), {"nope": 1})])
def test_wrong_arguments_are_a_type_error(args, kwargs):
    with pytest.raises(TypeError):
        RECORD(*args, **kwargs)


def test_a_subclass_adds_fields():
    @record
    class Labelled(RECORD):
        extra: int = 0

    assert Labelled(1, extra=3) == Labelled(1, "p", (), "", 3) and Labelled(1).extra == 0
    assert repr(Labelled(1)) == "test_a_subclass_adds_fields.<locals>.Labelled(x=1, label='p', tags=(), extra=0)"
