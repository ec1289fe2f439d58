"""What a rewrite changed in a pack's contracts, per contract: cases added and removed, and the
pins that changed from what to what (what `--update` prints)."""
from __future__ import annotations

import os
import re

from .contracts import listed_case_ids

_PIN = re.compile(r"^\s*(?:-\s*)?(?:path|equals|tool|name|length_eq|regex|type|mode|tools|max_tool_calls)\b")
_SHOWN = 10  # pin changes shown per contract


def snapshot(contracts_dir: str) -> dict[str, str]:
    """Every contract file's text under *contracts_dir*, by name."""
    out = {}
    try:
        names = sorted(os.listdir(contracts_dir))
    except OSError:
        return out
    for name in names:
        if name.endswith((".yaml", ".yml")):
            try:
                with open(os.path.join(contracts_dir, name), encoding="utf-8") as fh:
                    out[name] = fh.read()
            except OSError:
                continue
    return out


def describe(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One block of lines per contract that changed."""
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            lines.append(f"  {name}: new, {len(listed_case_ids(new or ''))} case(s)")
            continue
        if new is None:
            lines.append(f"  {name}: removed")
            continue
        was, now = sorted(listed_case_ids(old)), sorted(listed_case_ids(new))
        added, removed = [c for c in now if c not in was], [c for c in was if c not in now]
        lines.append(f"  {name}: {len(added)} case(s) added, {len(removed)} removed")
        lines += [f"    + {c}" for c in added] + [f"    - {c}" for c in removed]
        lines += _pins(old, new)
    return lines


def _pins(old: str, new: str) -> list[str]:
    """The pin lines that changed, as `from -> to` (each side the lines it lost or gained)."""
    import difflib  # why: --update only

    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old.splitlines(), new.splitlines()).get_opcodes():
        if tag == "equal":
            continue
        gone = [ln.strip() for ln in old.splitlines()[i1:i2] if _PIN.match(ln)]
        came = [ln.strip() for ln in new.splitlines()[j1:j2] if _PIN.match(ln)]
        if gone or came:
            out.append(f"    pin: {' | '.join(gone) or '(none)'}  ->  {' | '.join(came) or '(none)'}")
    return out[:_SHOWN] + ([f"    ... and {len(out) - _SHOWN} more"] if len(out) > _SHOWN else [])
