"""Reading YAML and JSON safely, keeping where every value came from.

YAML is built from the C parser's event stream (no recursion, so a 100,000-deep file is
refused rather than crashing the interpreter), with duplicate keys, alias expansion, depth
and size bounded. JSON takes the C decoder's fast path; positions are worked out only when
a problem must be reported. The parts: reading files and `Located` (source_text), YAML
(source_yaml), JSON (source_json) and the request.tools texts seen before (source_tools).
"""
from __future__ import annotations

from .source_json import load_json, locate_json, parse_json
from .source_text import (
    DEFAULT_MAX_JSON_BYTES,
    MAX_DEPTH,
    MAX_EXPANDED_BYTES,
    MAX_NODES,
    MAX_YAML_BYTES,
    Located,
    Path,
    format_path,
    read_text,
)
from .source_tools import _tools_seen, parse_request_json
from .source_yaml import load_yaml, parse_yaml

__all__ = ["DEFAULT_MAX_JSON_BYTES", "MAX_DEPTH", "MAX_EXPANDED_BYTES", "MAX_NODES", "MAX_YAML_BYTES", "Located",
           "Path", "_tools_seen", "format_path", "load_json", "load_yaml", "locate_json", "parse_json",
           "parse_request_json", "parse_yaml", "read_text"]
