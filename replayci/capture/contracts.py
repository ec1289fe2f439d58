"""The draft contracts of captured traffic: one per tool set, its checks inferred as `replayci
observe` infers them and kept to what every captured answer satisfies."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from ..core.hashing import h
from ..formats import NormalizeError, normalize
from ..pack.sources import parse_yaml
from .inference import Observation, infer_contract
from .packfiles import yaml_text

CAPTURED_BY = "replayci proxy"
HEADER = ("# Written by `replayci proxy`: one case per captured exchange whose request offers these tools.\n"
          "# The proxy rewrites this file while this first line and `status: observed` stay; remove either\n"
          "# to keep your edits (new captures are then appended as cases).\n")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MAX_NAME = 60


@dataclass
class Case:
    """One captured exchange as a golden case of its contract."""

    id: str
    input_ref: str
    description: str
    captured_at: str
    upstream: str
    neutral: dict  # the request, neutral form
    response: Any  # the answer as the fixture holds it
    status: int

    @functools.cached_property
    def normalized(self) -> dict | None:
        """The answer's normalized document; None when replayci cannot read it (no case then)."""
        try:
            return normalize(self.response, status=self.status)
        except NormalizeError:
            return None

    @functools.cached_property
    def inferred(self) -> dict | None:
        """observe's contract for this one answer; None for an error answer."""
        doc = self.normalized
        if doc is None or not doc.get("success"):
            return None
        obs = Observation(self.id, self.input_ref, self.neutral, description="-", response=doc)
        out = infer_contract(obs, self.upstream, str(self.neutral.get("model") or ""), "")
        out.pop("golden_cases", None)
        return out

    def entry(self) -> dict:
        """The golden case as the contract lists it: an error answer is a pinned negative case."""
        out: dict[str, Any] = {"id": self.id, "input_ref": self.input_ref, "description": self.description}
        if self.inferred is None:
            out.update({"expect_ok": False, "expected_error": "unexpected_error", "category": "edge_case"})
        else:
            out["category"] = "happy_path"
        return out


def tool_names(neutral: dict) -> list[str]:
    """The names of the tools a (neutral) request offers, sorted, each once."""
    names = set()
    for tool in neutral.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else (tool.get("name") if isinstance(tool, dict) else None)
        if isinstance(name, str) and name:
            names.add(name)
    return sorted(names)


def contract_name(names: list[str]) -> str:
    """The contract of a tool set: `captured_` and the tool names (a digest when too long or ambiguous)."""
    if not names:
        return "captured_no_tools"
    joined = _UNSAFE.sub("_", "__".join(names))
    if len(joined) > _MAX_NAME or any("__" in n for n in names) or joined != "__".join(names):
        joined = f"{joined[:40].rstrip('_.-')}_{h(names)[:8]}"
    return f"captured_{joined}"


def _called(inferred: dict) -> list[str]:
    return list(inferred.get("expect_tools") or ([inferred["tool"]] if "tool" in inferred else []))


def _common_calls(per_case: list[list[dict]]) -> list[dict]:
    """Expected calls every case satisfies: per tool, as many as the case calling it least made,
    the k-th keeping the argument invariants all k-th calls share."""
    first, out = per_case[0], []
    seen: dict[str, int] = {}
    for entry in first:
        name = entry["name"]
        k = seen[name] = seen.get(name, 0) + 1
        nth = [[e for e in calls if e["name"] == name][k - 1:k] for calls in per_case]
        if not all(nth):
            continue
        invariants = [inv for inv in entry.get("argument_invariants") or ()
                      if all(inv in (n[0].get("argument_invariants") or ()) for n in nth)]
        out.append({"name": name, **({"argument_invariants": invariants} if invariants else {})})
    return out


def common_expectations(inferred: list[dict]) -> dict:
    """The checks of observe's inference that hold for every one of the answers."""
    if not inferred:
        return {}
    out: dict[str, Any] = {}
    tools = [t for t in _called(inferred[0]) if all(t in _called(other) for other in inferred[1:])]
    if len(tools) == 1:
        out["tool"] = tools[0]
    elif tools:
        out.update({"tool": "multi_tool_call", "expect_tools": tools})
    calls = _common_calls([i.get("expected_tool_calls") or [] for i in inferred])
    if calls:
        out["expected_tool_calls"] = calls
    outputs = [inv for inv in (inferred[0].get("assertions") or {}).get("output_invariants") or ()
               if all(inv in (i.get("assertions") or {}).get("output_invariants", ()) for i in inferred[1:])]
    if outputs:
        out["assertions"] = {"output_invariants": outputs}
    return out


def render(names: list[str], cases: list[Case]) -> str:
    """The contract file for a tool set's captured cases (in capture order)."""
    cases = sorted((c for c in cases if c.normalized is not None), key=lambda c: (c.captured_at, c.id))
    offered = ", ".join(names) if names else "no tools"
    doc: dict[str, Any] = {
        "description": f"Traffic captured by replayci proxy whose requests offer: {offered}.",
        "status": "observed",
        **common_expectations([c.inferred for c in cases if c.inferred is not None]),
        "golden_cases": [c.entry() for c in cases],
    }
    return yaml_text(doc, HEADER)


def owned(text: str) -> bool:
    """Whether a contract file is still the proxy's to rewrite: its header and draft status kept."""
    if not text.startswith(HEADER.split("\n", 1)[0] + "\n"):
        return False
    try:
        doc = parse_yaml(text, "contract").value  # read as the loader reads it (YAML 1.2 scalars)
    except ConfigError:
        return False
    return isinstance(doc, dict) and doc.get("status") == "observed"


def listed_case_ids(text: str) -> set[str]:
    """The ids of the golden cases a contract file lists (none when it does not parse)."""
    try:
        doc = parse_yaml(text, "contract").value
    except ConfigError:
        return set()
    cases = doc.get("golden_cases") if isinstance(doc, dict) else None
    return {c["id"] for c in cases or () if isinstance(c, dict) and isinstance(c.get("id"), str)}


def entry_fields(case: Case) -> list[tuple[str, str]]:
    """A case as (key, YAML value) pairs for appending to a contract someone else keeps."""
    return [(k, json.dumps(v)) for k, v in case.entry().items()]
