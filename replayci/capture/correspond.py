"""Which recorded case a live exchange corresponds to.

In turn: (1) the case whose fixture request equals the exchange's under the request key; (2) for
an agent loop, step k of the recorded session whose first request equals the conversation's
first request; (3) among cases of the same API and the same offered tool names, at the same
step, the one whose conversation starts with the same user message, else the most similar one:
the ratio of `difflib.SequenceMatcher` over the first user message and the system prompt, at
least SIMILARITY. Cases no exchange reached yet go first on a tie, then the pack's order. So a
changed system prompt, a reworded instruction or another model still finds its case."""
from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from ..engine.cases import Item
from ..pack.model import Pack
from .contracts import tool_names
from .keys import request_key
from .sessions import first_user_text

SIMILARITY = 0.6  # the least similarity (0 to 1) of rule 3's "most similar" case
_COMPARED = 2000  # characters of the user message and the system prompt that similarity reads


@dataclass
class Shape:
    """What correspondence reads of a request (live or recorded): its API and neutral form."""

    api: str
    request: dict
    ignore: tuple[str, ...] = ()

    @functools.cached_property
    def key(self) -> str:
        return request_key({k: v for k, v in self.request.items() if k not in self.ignore})

    @property
    def head_key(self) -> str:
        """The key of the conversation's first request: the messages before the first answer."""
        messages = self.messages
        cut = next((n for n, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"),
                   len(messages))
        if cut == len(messages):  # a first request is its own head (its key worked out once)
            return self.key
        return Shape(self.api, {**self.request, "messages": messages[:cut]}, self.ignore).key

    @property
    def step(self) -> int:
        """Which model call of its conversation the request is (from 1)."""
        return 1 + sum(1 for m in self.messages if isinstance(m, dict) and m.get("role") == "assistant")

    @property
    def messages(self) -> list:
        """The request's messages (none when a hand-edited fixture holds something else)."""
        messages = self.request.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(sorted(tool_names(self.request)))

    @property
    def words(self) -> str:
        """The first user message and the system prompt: what similarity compares."""
        return first_user_text(self.request)[:_COMPARED] + "\n" + system_text(self.request)[:_COMPARED]


def system_text(request: dict) -> str:
    """A neutral request's system prompt as text ("" when it has none)."""
    parts = []
    messages = request.get("messages")
    for m in messages if isinstance(messages, list) else ():
        if isinstance(m, dict) and m.get("role") == "system":
            content = m.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content, sort_keys=True))
    return "\n".join(parts)


@dataclass
class Recorded:
    """A recorded case a live exchange may correspond to."""

    item: Item
    shape: Shape
    session: bool  # a scenario (its shape is its first request)
    steps: int = 1  # a scenario's recorded model calls
    reached: int = 0  # exchanges that corresponded to it so far
    key: str = ""
    step: int = 1


@dataclass
class Found:
    """The case an exchange corresponds to and by which rule; or, when none, the nearest and why."""

    case: Recorded | None
    rule: str = ""  # key | session | first_user | similar
    nearest: Recorded | None = None
    why: str = ""
    similarity: float = 0.0


@dataclass
class Index:
    """The recorded cases of some packs, for correspondence."""

    singles: list[Recorded] = field(default_factory=list)
    sessions: list[Recorded] = field(default_factory=list)
    # key -> the cases with it, in the pack's order: rule 1 (and 2's first request) by one look-up
    _singles_by_key: dict[str, list[Recorded]] = field(default_factory=dict)
    _sessions_by_key: dict[str, list[Recorded]] = field(default_factory=dict)

    @classmethod
    def of(cls, packs: list[Pack], ignore: tuple[str, ...] = ()) -> Index:
        index = cls()
        for p, pack in enumerate(packs):
            for contract in pack.contracts:
                for c, case in enumerate(contract.cases):
                    recorded = _recorded(Item(pack, contract, case, (p, contract.order, c)), ignore)
                    if recorded is not None:
                        (index.sessions if recorded.session else index.singles).append(recorded)
                        by_key = index._sessions_by_key if recorded.session else index._singles_by_key
                        by_key.setdefault(recorded.key, []).append(recorded)
        return index

    @property
    def every(self) -> list[Recorded]:
        return self.singles + self.sessions

    def single(self, live: Shape, *, similar: bool = True) -> Found:
        """The single case *live* corresponds to (rules 1 and 3; without *similar*, rule 3 takes
        only the same first user message)."""
        exact = self._singles_by_key.get(live.key)
        if exact:
            return Found(_first(exact), "key")
        return _by_words(live, [r for r in self.singles if r.step == live.step], similar)

    def session(self, first: Shape, *, similar: bool = True) -> Found:
        """The recorded session a conversation whose first request is *first* corresponds to."""
        exact = self._sessions_by_key.get(first.key)
        if exact:
            return Found(_first(exact), "session")
        return _by_words(first, self.sessions, similar)


def _first(candidates: list[Recorded]) -> Recorded:
    """Ties: a case no exchange reached yet first, then the pack's order."""
    return min(candidates, key=lambda r: r.reached > 0)


def _by_words(live: Shape, pool: list[Recorded], similar: bool = True) -> Found:
    """Rule 3: same API and tools; the same first user message, else the most similar enough."""
    same = [r for r in pool if r.shape.api in (live.api, "") and r.shape.tools == live.tools]
    if not same:
        near = _nearest(live, pool)
        why = "no recorded case offers the same tools through the same API" if near else "the pack holds no case"
        return Found(None, nearest=near, why=why)
    user = first_user_text(live.request)
    alike = [r for r in same if first_user_text(r.shape.request) == user]
    if alike:
        return Found(_first(alike), "first_user")
    if not similar:
        return Found(None, why="no recorded case starts with the same user message")
    words = live.words
    scored = [(difflib.SequenceMatcher(None, r.shape.words, words, autojunk=False).ratio(), -n, r)
              for n, r in enumerate(same)]
    score, _, best = max(scored, key=lambda t: (t[0], t[2].reached == 0, t[1]))
    if score >= SIMILARITY:
        return Found(best, "similar", similarity=score)
    return Found(None, nearest=best, similarity=score,
                 why=f"its first user message and system prompt are {score:.0%} alike (at least "
                     f"{SIMILARITY:.0%} needed)")


def _nearest(live: Shape, pool: list[Recorded]) -> Recorded | None:
    if not pool:
        return None
    words = live.words
    return max(pool, key=lambda r: difflib.SequenceMatcher(None, r.shape.words, words, autojunk=False).ratio())


def _recorded(item: Item, ignore: tuple[str, ...]) -> Recorded | None:
    """A case as correspondence reads it: its fixture's API and request (None when it has no
    readable fixture)."""
    doc = _fixture(item.case.fixture_path)
    if not isinstance(doc, dict) or not isinstance(doc.get("request"), dict) or not all(
            isinstance(doc["request"].get(k) or [], list) for k in ("messages", "tools")):
        return None  # (a hand-edited fixture the pack's run will name)
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    api = str(meta.get("api") or "")  # (a hand-written fixture names none: any API)
    shape = Shape(api, doc["request"], ignore)
    session = item.contract.scenario or "trajectory" in doc
    steps = len(doc["trajectory"]) if isinstance(doc.get("trajectory"), list) else 1
    return Recorded(item, shape, session, steps, key=shape.key, step=shape.step)


def _fixture(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None

