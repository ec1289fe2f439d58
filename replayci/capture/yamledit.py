"""Appending entries to a contract's golden_cases list at the text level: comments, quoting
and layout of everything else stay byte for byte."""
from __future__ import annotations

import yaml

_OPEN = ("MappingStartEvent", "SequenceStartEvent")
_CLOSE = ("MappingEndEvent", "SequenceEndEvent")
_LEAF = ("ScalarEvent", "AliasEvent")


class InsertError(Exception):
    """The golden_cases list could not be extended at the text level."""


def append_golden_cases(text: str, entries: list[list[tuple[str, str]]], display: str) -> str:
    """*text* with *entries* appended to its golden_cases list; every other byte unchanged.

    The new entries follow the list's own style: block (its dash and key indentation, blank
    lines between entries when it has them) or flow (``[{...}, {...}]``).
    """
    if text.startswith("\ufeff"):  # a byte-order mark (an editor's): the parser's marks do not count it
        return "\ufeff" + append_golden_cases(text[1:], entries, display)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        events = list(yaml.parse(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise InsertError(f"{display} does not parse: {exc}") from None
    first = _list_start(events)
    items, end_mark = _items(events, first + 1) if first is not None else ([], None)
    if first is None or end_mark is None:
        raise InsertError(f"{display}: no golden_cases list at the top level")
    if events[first].flow_style:
        return _insert_flow(text, items, end_mark.index, entries)
    if not items:
        raise InsertError(f"{display}: golden_cases is an empty block list")
    return _insert_block(text, items, entries, display)


def _list_start(events: list) -> int | None:
    """The index of the event that opens the top-level golden_cases list, if there is one."""
    depth = 0
    in_root_key = True  # the next root-level scalar is a key
    pending_key = None
    for n, ev in enumerate(events):
        cls = type(ev).__name__
        if cls in _OPEN:
            depth += 1
            if depth == 2 and pending_key == "golden_cases" and cls == "SequenceStartEvent":
                return n
            if depth == 2:
                pending_key, in_root_key = None, True
        elif cls in _CLOSE:
            depth -= 1
        elif depth == 1 and cls in _LEAF:
            pending_key = ev.value if in_root_key and cls == "ScalarEvent" else None
            in_root_key = not in_root_key
    return None


def _items(events: list, first: int) -> tuple[list[list[int]], yaml.Mark | None]:
    """Per entry of the list opened before events[first]: [start index, end index of its last
    content]; and where the list closes (None when it never does)."""
    flow: list[bool] = []  # flow_style of the open collections inside the list
    items: list[list[int]] = []
    for ev in events[first:]:
        cls = type(ev).__name__
        if cls in _OPEN:
            if not flow:
                items.append([ev.start_mark.index, ev.end_mark.index])
            flow.append(bool(ev.flow_style))
        elif cls in _CLOSE:
            if not flow:
                return items, ev.start_mark
            if flow.pop() and items:
                items[-1][1] = max(items[-1][1], ev.end_mark.index)
        elif cls in _LEAF:
            if not flow:
                items.append([ev.start_mark.index, ev.end_mark.index])
            else:
                items[-1][1] = max(items[-1][1], ev.end_mark.index)
    return items, None


def _insert_flow(text: str, items: list[list[int]], end: int, entries: list[list[tuple[str, str]]]) -> str:
    """*entries* as flow mappings after the last item of a flow list (or inside an empty one)."""
    rendered = ["{" + ", ".join(f"{k}: {v}" for k, v in entry) + "}" for entry in entries]
    if items:
        pos = items[-1][1]
        insert = "".join(", " + r for r in rendered)
    else:
        pos = end  # the closing bracket of []
        insert = ", ".join(rendered)
    return text[:pos] + insert + text[pos:]


def _insert_block(text: str, items: list[list[int]], entries: list[list[tuple[str, str]]], display: str) -> str:
    """*entries* after the last line of a block list's last item, indented like it."""
    def line_start(index: int) -> int:
        return text.rfind("\n", 0, index) + 1

    newline = "\r\n" if "\r\n" in text else "\n"
    last_start, last_end = items[-1]
    key_col = last_start - line_start(last_start)
    dash_col = text.rfind("-", line_start(last_start), last_start) - line_start(last_start)
    if dash_col < 0:
        raise InsertError(f"{display}: cannot find the '-' of the last golden case")
    # Blank lines between entries? Look above the second entry, past its comments.
    blank = False
    if len(items) > 1:
        ls = line_start(items[1][0])
        prev_lines = text[items[0][1]:ls].split("\n")[1:-1]
        blank = any(not ln.strip() for ln in prev_lines)
    # After the last line of the last entry (block scalars end past their trailing newlines).
    p = last_end
    while p > 0 and text[p - 1] in " \t\r\n":
        p -= 1
    nl = text.find("\n", p)
    pos = len(text) if nl == -1 else nl + 1
    prefix = newline if nl == -1 else ""
    chunks = []
    for entry in entries:
        lines = []
        for j, (k, v) in enumerate(entry):
            indent = " " * dash_col + "- " + " " * (key_col - dash_col - 2) if j == 0 else " " * key_col
            lines.append(f"{indent}{k}: {v}")
        chunks.append((newline if blank else "") + newline.join(lines) + newline)
    return text[:pos] + prefix + "".join(chunks) + text[pos:]
