"""The files of a pack that capture writes: pack.yaml, the allowlist, YAML in the packs' dialect."""
from __future__ import annotations

import os
import re

import yaml

from ..core.files import write_atomic


def pack_id_for(output_dir: str) -> str:
    """A pack id from a pack directory's name."""
    base = re.sub(r"[^a-z0-9_.-]+", "-", os.path.basename(os.path.normpath(output_dir)).lower())
    base = re.sub(r"^[^a-z0-9]+", "", base)
    return base or "observed"


class _Dumper(yaml.SafeDumper):
    """PyYAML's writer, also quoting the strings that YAML 1.2 (how packs are read) takes for
    numbers and YAML 1.1 does not: "1e3", "0o17"."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float",
                              re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
                              list("-+.0123456789"))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^0(?:o[0-7]+|x[0-9a-fA-F]+)$"), ["0"])


def yaml_text(doc: dict, header: str = "") -> str:
    """*doc* as block YAML in its own key order, after *header* (comment lines)."""
    return header + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                              default_flow_style=False, width=100)


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
