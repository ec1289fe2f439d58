"""Contract mutation testing: what would each contract catch?

Every passing ``expect_ok: true`` case's normalized response is mutated deterministically
(the tool call dropped, renamed, its arguments broken, dropped, retyped or changed within
the schema, a call added, the calls reordered, the provider failing). Each mutant is
evaluated by the same contract with the engine's own ``judge``: *killed* when a
check fails, *survived* when the contract still passes it. Survivors say what no check
constrains; killed mutants can be written back as negative golden cases.
"""
from __future__ import annotations

from ...capture.yamledit import append_golden_cases
from .kinds import KINDS, mutants_of
from .model import MutationReport
from .negatives import write_negatives
from .render import render, render_written
from .run import mutate, mutate_packs

__all__ = ["KINDS", "MutationReport", "append_golden_cases", "mutants_of", "mutate", "mutate_packs", "render",
           "render_written", "write_negatives"]
