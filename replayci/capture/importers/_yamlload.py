"""A cassette's YAML read as PyYAML's C safe loader reads it, with less of its per-node Python:
scalar tags resolved by one table lookup, and plain mappings, sequences and strings built by one
small walk (every other tag, a merge key or an unhashable key is the safe constructor's own
work). Imported only when a YAML cassette is read."""
from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_STR, _SEQ, _MAP = yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Other(Exception):
    """A node the walk leaves to the safe constructor."""


class Loader(_Base):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's parser when PyYAML has it), the same documents, faster."""

    def resolve(self, kind, value, implicit):
        if self.yaml_path_resolvers or None in self.yaml_implicit_resolvers:  # (none on the safe loader)
            return super().resolve(kind, value, implicit)
        if kind is ScalarNode:
            if implicit[0]:
                for tag, regexp in self.yaml_implicit_resolvers.get(value[0] if value else "", ()):
                    if regexp.match(value):
                        return tag
            return _STR
        return _SEQ if kind is SequenceNode else _MAP

    def construct_document(self, node):
        try:
            return _build(node, {}, self.construct_object)
        except (_Other, RecursionError):
            self.constructed_objects, self.recursive_objects = {}, {}
            return super().construct_document(node)


def _build(node: Any, built: dict[int, Any], construct: Any) -> Any:
    """The value of *node*: strings, lists and dicts here (a node met again, by an alias, is the
    same object, as the constructor gives), every other scalar by the safe constructor."""
    kind = node.__class__
    if kind is ScalarNode:
        return node.value if node.tag == _STR else construct(node, deep=True)
    got = built.get(id(node))
    if got is not None:
        return got
    if kind is MappingNode and node.tag == _MAP:
        data: dict = {}
        built[id(node)] = data
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                raise _Other
            key = _build(key_node, built, construct)
            if key.__class__ is dict or key.__class__ is list:
                raise _Other  # unhashable: the constructor's own error
            data[key] = _build(value_node, built, construct)
        return data
    if kind is SequenceNode and node.tag == _SEQ:
        items: list = []
        built[id(node)] = items
        items.extend(_build(item, built, construct) for item in node.value)
        return items
    raise _Other
