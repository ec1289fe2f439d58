"""Frozen records whose methods are shared, not compiled for each class at start-up."""
from __future__ import annotations

import dataclasses
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar

T = TypeVar("T", bound=type)
_MISSING = dataclasses.MISSING


def record(cls: T) -> T:
    """*cls* as @dataclass(frozen=True) makes it: the same fields, __init__ arguments, ==, hash
    and repr, FrozenInstanceError on writes; fields() and replace() work."""
    # dataclass compiles six methods for each class (~0.6 ms a class at every start-up); these
    # are closures over the field list (~0.1 ms). Their __init__ is under a microsecond slower
    # than a compiled one: for classes made no more than once a case.
    undocumented = not cls.__doc__
    if undocumented:  # else dataclass reads object.__init__'s text signature for one (~4 ms the first time)
        cls.__doc__ = "-"
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    if undocumented:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    known = frozenset(names)
    defaults = {f.name: f.default for f in fields if f.default is not _MISSING}
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not _MISSING}
    compared = _values([f.name for f in fields if f.compare])
    shown = tuple(f.name for f in fields if f.repr)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__qualname__}() takes {len(names)} arguments but {len(args)} were given")
        given = dict(zip(names, args, strict=False))  # fewer arguments than fields: the rest by name or default
        for name, value in kwargs.items():
            if name not in known or name in given:
                raise TypeError(f"{cls.__qualname__}() got an unexpected or repeated argument {name!r}")
            given[name] = value
        put = object.__setattr__
        for name in names:
            if name in given:
                put(self, name, given[name])
            elif name in defaults:
                put(self, name, defaults[name])
            elif name in factories:
                put(self, name, factories[name]())
            else:
                raise TypeError(f"{cls.__qualname__}() missing required argument {name!r}")

    def __eq__(self, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(compared(self))

    @recursive_repr()
    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    for method in (__init__, __eq__, __hash__, __repr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    cls.__setattr__ = _no_assignment
    cls.__delattr__ = _no_deletion
    return cls


def _values(names: list[str]):
    """A function giving the tuple of an object's *names* attributes."""
    if len(names) > 1:
        return attrgetter(*names)
    return lambda obj: tuple(getattr(obj, n) for n in names)


def _no_assignment(self, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _no_deletion(self, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
