"""Mutants, their verdicts under their contract, and the report of a mutation run."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...checks.failure import Failure
from ...pack.fixtures import Fixture
from ...pack.model import Contract, Pack

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Mutant:
    """One mutated response: its id (``kind:detail``), what it changed, and the document."""

    kind: str
    name: str
    what: str  # "dropping it", "\"Parit\" instead of \"Paris\"": the change, in words
    hint: str  # what no check constrains, when the mutant survives
    response: dict


@dataclass(frozen=True)
class MutantOutcome:
    """A mutant's verdict under its contract: killed, survived, or error (not evaluable)."""

    case: str
    mutant: Mutant
    status: str  # killed | survived | error
    classification: str | None = None
    failures: tuple[Failure, ...] = ()
    reason: str | None = None


@dataclass
class ContractMutation:
    """The mutants of one contract's passing cases and their outcomes."""

    pack: Pack
    contract: Contract
    outcomes: list[MutantOutcome] = field(default_factory=list)
    bases: dict[str, Fixture] = field(default_factory=dict)  # case id -> fixture mutated
    not_mutated: list[tuple[str, str]] = field(default_factory=list)  # (case, why)

    @property
    def counted(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.status != "error"]

    @property
    def mutants(self) -> int:
        return len(self.counted)

    @property
    def killed(self) -> int:
        return sum(1 for o in self.counted if o.status == "killed")

    @property
    def kill_rate(self) -> float | None:
        """killed / mutants, or None when no passing case could be mutated."""
        return self.killed / self.mutants if self.mutants else None

    @property
    def survivors(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.status == "survived"]

    def to_dict(self) -> dict:
        rate = self.kill_rate
        return {
            "pack": self.pack.pack_id,
            "contract": self.contract.id,
            "mutants": self.mutants,
            "killed": self.killed,
            "kill_rate": round(rate, 4) if rate is not None else None,
            "survivors": [{"case": o.case, "mutant": o.mutant.name, "hint": o.mutant.hint}
                          for o in self.survivors],
        }


@dataclass
class MutationReport:
    contracts: list[ContractMutation]
    packs: list[Pack]
    warnings: list[str] = field(default_factory=list)
    not_mutated: list[tuple[str, str, str]] = field(default_factory=list)  # (pack, contract, why)

    @property
    def mutants(self) -> int:
        return sum(c.mutants for c in self.contracts)

    @property
    def killed(self) -> int:
        return sum(c.killed for c in self.contracts)

    def below(self, min_kill_rate: float) -> list[ContractMutation]:
        """The contracts whose kill rate is under *min_kill_rate* (unmeasured ones never are)."""
        return [c for c in self.contracts
                if c.kill_rate is not None and c.kill_rate < min_kill_rate - 1e-12]

    def to_dict(self) -> dict:
        return {"version": FORMAT_VERSION, "contracts": [c.to_dict() for c in self.contracts]}


@dataclass(frozen=True)
class Written:
    """A negative golden case written (or not) from a killed mutant."""

    contract: str  # the contract file as shown to the user
    case: str
    fixture: str | None  # the fixture file as shown, None when nothing was written
    classification: str | None
    note: str = ""  # why nothing was written
