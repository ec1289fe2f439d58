"""A cassette's YAML read as PyYAML's C safe loader reads it, with less of its per-node Python:
scalar tags resolved by one table lookup, and plain mappings, sequences and strings built by one
small walk (every other tag, a merge key or an unhashable key is the safe constructor's own
work). Imported only when a YAML cassette is read."""
from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_STR, _SEQ, _MAP = yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
# An anchor: `&name` at the start or after a space, a bracket, a brace or a comma (searched for
# from its "&": a literal the regex engine finds fast).
_ANCHOR = {str: re.compile(r"&(?<=[\s\[{,]&)[^\s\[\]{},]")}
_ANCHOR[bytes] = re.compile(_ANCHOR[str].pattern.encode())
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Other(Exception):
    """A node the walk leaves to the safe constructor."""


# Nodes a document may stand for once its aliases are expanded: a cassette of that many is
# far beyond any recording, and walking more would take minutes (an "alias bomb").
MAX_EXPANDED_NODES = 1_000_000


class AliasBomb(yaml.MarkedYAMLError):
    """A document whose aliases expand past MAX_EXPANDED_NODES, or refer to a node they are in."""


class Loader(_Base):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's parser when PyYAML has it), the same documents, faster; a
    document whose aliases expand past MAX_EXPANDED_NODES is refused (AliasBomb)."""

    def __init__(self, stream):
        super().__init__(stream)
        # Without an anchor there is no alias to expand: most cassettes have none.
        self.anchored = not isinstance(stream, (str, bytes)) or stream[:1] in ("&", b"&") \
            or _ANCHOR[type(stream)].search(stream) is not None

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
        if self.anchored:
            _check_expansion(node)
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


def _check_expansion(root: Any) -> None:
    """AliasBomb when the document under *root* stands for more than MAX_EXPANDED_NODES nodes
    once every alias is expanded, or an alias refers to a node it is inside; each distinct node
    is looked at once (its expanded size kept), however often it is referred to."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > MAX_EXPANDED_NODES:
                raise AliasBomb(None, None, f"its aliases expand past {MAX_EXPANDED_NODES:,} nodes (an alias bomb)",
                                node.start_mark)
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise AliasBomb(None, None, "an alias refers to a node it is inside", node.start_mark)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: Any) -> list:
    if node.__class__ is ScalarNode:
        return []
    if node.__class__ is MappingNode:
        return [n for pair in node.value for n in pair]
    return node.value
