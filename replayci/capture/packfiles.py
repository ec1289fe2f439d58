"""The files of a pack that capture writes: pack.yaml, the allowlist, YAML in the packs' dialect."""
from __future__ import annotations

import io
import os
import re

import yaml

from ..core.files import write_atomic


def pack_id_for(output_dir: str) -> str:
    """A pack id from a pack directory's name."""
    base = re.sub(r"[^a-z0-9_.-]+", "-", os.path.basename(os.path.normpath(output_dir)).lower())
    base = re.sub(r"^[^a-z0-9]+", "", base)
    return base or "observed"


_FLOAT_12 = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_OCTAL_HEX_12 = re.compile(r"^0(?:o[0-7]+|x[0-9a-fA-F]+)$")


class _Dumper(yaml.SafeDumper):
    """PyYAML's writer, also quoting the strings that YAML 1.2 (how packs are read) takes for
    numbers and YAML 1.1 does not: "1e3", "0o17"."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+.0123456789"))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", _OCTAL_HEX_12, ["0"])

_CDumper: type | None = None
if getattr(yaml, "CSafeDumper", None) is not None:  # PyYAML built with libyaml

    class _CDumper(yaml.CSafeDumper):  # type: ignore[no-redef]
        """The same writer with libyaml's emitter, several times faster; used only for documents
        it writes byte for byte as the Python emitter does (`_same_in_libyaml`)."""

    _CDumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+.0123456789"))
    _CDumper.add_implicit_resolver("tag:yaml.org,2002:int", _OCTAL_HEX_12, ["0"])

# Text both emitters write alike: printable characters of the Basic Multilingual Plane, without
# the ones they treat differently (line and paragraph separators, the byte order mark, control
# characters, tabs and line breaks, which make a quoted scalar folded differently at the width).
_SAME_TEXT = re.compile("[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]*\\Z")
_KEY_LIMIT = 60  # a longer key (or an empty one) may be written as a complex key (`? key`) by one emitter only


def _same_in_libyaml(value: object) -> bool:
    """Whether libyaml's emitter writes *value* as the Python emitter does."""
    kind = type(value)
    if kind is str:
        return _SAME_TEXT.match(value) is not None
    if kind is dict:
        return all(type(k) is str and 0 < len(k) <= _KEY_LIMIT and _SAME_TEXT.match(k) is not None
                   and _same_in_libyaml(v) for k, v in value.items())
    if kind is list:
        return all(_same_in_libyaml(v) for v in value)
    return kind in (int, float, bool, type(None))


def yaml_text(doc: dict, header: str = "") -> str:
    """*doc* as block YAML in its own key order, after *header* (comment lines)."""
    dumper = _CDumper if _CDumper is not None and _same_in_libyaml(doc) else _Dumper
    options = {"sort_keys": False, "allow_unicode": True, "default_flow_style": False, "width": 100}
    try:
        node = _node(doc, {})
    except _NotPlain:
        return header + yaml.dump(doc, Dumper=dumper, **options)
    stream = io.StringIO()
    writer = dumper(stream, **options)
    try:
        writer.open()
        writer.serialize(node)
        writer.close()
    finally:
        writer.dispose()
    return header + stream.getvalue()


class _NotPlain(Exception):
    """A value other than JSON's (a subclass, a tuple): PyYAML's representer writes it."""


_STR, _INT, _BOOL, _NULL, _MAP, _SEQ = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null", "map", "seq"))
_FLOATS = yaml.SafeDumper(io.StringIO())


def _node(value: object, seen: dict[int, yaml.Node]) -> yaml.Node:
    """The node PyYAML's safe representer makes of a JSON value (block style, keys in their
    order; an object or array met again is the same node, which the writer anchors), without
    its per-value dispatch: most of the time of writing a contract."""
    kind = type(value)
    if kind is str:
        return yaml.ScalarNode(_STR, value)
    if kind is dict or kind is list:
        node = seen.get(id(value))
        if node is not None:
            return node
        if kind is dict:
            node = seen[id(value)] = yaml.MappingNode(_MAP, [], flow_style=False)
            node.value.extend((_node(k, seen), _node(v, seen)) for k, v in value.items())  # type: ignore[union-attr]
        else:
            node = seen[id(value)] = yaml.SequenceNode(_SEQ, [], flow_style=False)
            node.value.extend(_node(v, seen) for v in value)  # type: ignore[union-attr]
        return node
    if kind is bool:
        return yaml.ScalarNode(_BOOL, "true" if value else "false")
    if kind is int:
        return yaml.ScalarNode(_INT, str(value))
    if value is None:
        return yaml.ScalarNode(_NULL, "null")
    if kind is float:
        return _FLOATS.represent_float(value)
    raise _NotPlain


def write_pack_files(output_dir: str, pack_id: str, name: str, model: str | None, writer: str) -> list[str]:
    """pack.yaml (replaced) and an empty allowlist (when there is none); the files written."""
    pack_yaml = os.path.join(output_dir, "pack.yaml")
    doc = {"pack_id": pack_id, "name": name, "version": "0.1.0", "schema_version": "v0.1"}
    if model:
        doc["default_model"] = model
    write_atomic(pack_yaml, yaml_text(doc, f"# Written by `{writer}`.\n"))
    written = [pack_yaml]
    allow = os.path.join(output_dir, "nr-allowlist.json")
    if not os.path.exists(allow):
        write_atomic(allow, "[]\n")
        written.append(allow)
    return written
