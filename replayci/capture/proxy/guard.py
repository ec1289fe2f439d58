"""Recording over existing contracts: each capture is judged against the case it corresponds to
(the same request, else the same first user message at the same step: a new question, however
alike, is a new case) before it is written. One that breaks its case is reported and not written; nor is any other step
of its agent session (a session is written whole or not at all). One that passes replaces its
case's fixture, also when its request changed (no second fixture beside the old one)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...engine.results import CaseResult
from ...pack.model import Pack
from .. import gate, sessions
from ..correspond import Index, Shape


class Guard:
    """The judge in front of the proxy's writes."""

    def __init__(self, packs: list[Pack], golden_dir: str, ignore: tuple[str, ...] = (), *,
                 accept: bool = False) -> None:
        self.packs = packs
        self.accept = accept  # --update: every capture written, over the case it corresponds to
        self.index = Index.of(packs, ignore)
        self.golden_dir = os.path.abspath(golden_dir)
        self.ignore = ignore
        self.broken: list[CaseResult] = []  # the answers that broke their cases, as the run report shows them
        self.held_back = 0  # exchanges not written because they, or their session, broke a case
        self._held: list[Any] = []  # store.Ready, in arrival order
        self._results: dict[int, CaseResult] = {}

    def hold(self, ready: Any) -> None:
        """Judge one capture now (its session is judged when the proxy stops); keep it until then."""
        self._held.append(ready)
        normalized = ready.case.normalized
        if normalized is None:
            return
        found = self.index.single(Shape(ready.capture.route.api, ready.case.neutral, self.ignore), similar=False)
        if found.case is None:
            return
        item = found.case.item
        result = gate.judge_answer(item, ready.case.neutral, normalized, origin="record",
                                   recorded=found.case.shape.request)
        if not self.accept:
            self._results[id(ready)] = result
        if (self.accept or not gate.breaks(result)) and found.rule != "key":
            self._relocate(ready, item.case.fixture_path, item.case.id)

    def _relocate(self, ready: Any, path: str, case_id: str) -> None:
        """Write a passing capture over the fixture of the case it corresponds to."""
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.dirname(folder) != self.golden_dir:
            return  # not one of capture's own fixtures: a new case, as it would be
        ready.path = path
        ready.contract = os.path.basename(folder)
        ready.case.id = case_id
        ready.case.input_ref = f"{ready.contract}/{case_id}.json"

    def settle(self, commit: Callable[[Any], None]) -> None:
        """Judge the sessions among the held captures, then write what broke nothing."""
        held, self._held = self._held, []
        doomed: set[int] = set()
        readable = [r for r in held if r.case.normalized is not None]
        calls = [sessions.Call(r.case.neutral, r.case.normalized, r.capture.route.api) for r in readable]
        for found in sessions.group(calls):
            members = [readable[m] for m in found.members]
            if self._session_breaks(members, [calls[m] for m in found.members]) or any(
                    gate.breaks(self._results[id(r)]) for r in members if id(r) in self._results):
                doomed.update(id(r) for r in members)
        for ready in held:
            result = self._results.get(id(ready))
            if result is not None and gate.breaks(result):
                self.broken.append(result)
            if (result is not None and gate.breaks(result)) or id(ready) in doomed:
                self.held_back += 1
                continue
            commit(ready)

    def session_fixture(self, api: str, first: dict) -> str | None:
        """The fixture of the recorded session a captured one (its first request *first*)
        corresponds to, when it is one of capture's own: the new session is written over it."""
        found = self.index.session(Shape(api, first, self.ignore), similar=False)
        if found.case is None:
            return None
        path = os.path.abspath(found.case.item.case.fixture_path)
        return path if os.path.dirname(os.path.dirname(path)) == self.golden_dir else None

    def _session_breaks(self, members: list[Any], calls: list[sessions.Call]) -> bool:
        if self.accept:
            return False
        first = members[0]
        found = self.index.session(Shape(first.capture.route.api, first.case.neutral, self.ignore), similar=False)
        if found.case is None:
            return False
        result = gate.judge_loop(found.case.item, calls, origin="record", recorded=found.case.shape.request)
        if gate.breaks(result):
            self.broken.append(result)
            return True
        return False
