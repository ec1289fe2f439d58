"""The one judge: ``judge(item, answer) -> CaseResult``, the only place checks run.

Every source of answers — recordings and fixtures (`recorded.py`), live calls and batches
(`live.py`, `batch.py`), the tools (`replay`, `mutate`, `regrade`), `api.check_response` and
the proxy's check mode — gives the judge one typed answer (`answers.py`) for a case: a response
or a scenario's loop to check, a reason it cannot be reproduced, a skip, or an error. The judge
runs the checks and the judges, applies expect_ok / expected_error and fingerprints the outcome.
"""
from __future__ import annotations

import time
from dataclasses import replace

from ..checks.failure import Failure, Pinned, Status, fingerprint, trajectory_fingerprint, verdict
from ..checks.response import case_score, check
from ..checks.trajectory import check_trajectory
from ..core.errors import CaseError
from ..core.hashing import short_hash
from ..formats import Document
from ..pack.model import Case, Contract
from .answers import Answer, Errored, NotReproducible, Response, Skip, Trajectory
from .cases import Item, slipped_through
from .judging import JudgementMissing, judgement_details, with_judges
from .metrics import case_metrics
from .results import CaseResult, report_response


def judge(item: Item, answer: Answer, started: float | None = None) -> CaseResult:
    """The result of *item* (a case with its pack and contract) given *answer*: checks, judges,
    verdict and fingerprint for a response or a loop; the result a non-reproducible reason, a
    skip or an error stands for otherwise. *started*: when the case began (perf_counter), for
    its duration; by default now."""
    started = time.perf_counter() if started is None else started
    kind = type(answer)
    if kind is Response:
        return _response(item, answer, started)
    if kind is Trajectory:
        return _trajectory(item, answer, started)
    if kind is NotReproducible:
        return non_reproducible(item, answer, started)
    if kind is Skip:
        skip = result(item, Status.SKIPPED, reason=answer.reason, started=started, attempts=answer.attempts)
        return replace(skip, details={**skip.details, **answer.details}) if answer.details else skip
    if kind is Errored:
        return error_result(item, answer.exc, started)
    raise TypeError(f"not an answer: {answer!r}")


def result(item: Item, status: Status, *, classification=None, reason=None, fp=None, failures=(),
           started: float, response=None, **extra) -> CaseResult:
    """The case's result as the judge builds it (what the case says of itself filled in)."""
    case = item.case
    return CaseResult(
        pack=item.pack.pack_id,
        contract=item.contract.id,
        case=case.id,
        status=status,
        classification=classification,
        reason=reason,
        fingerprint=fp,
        failures=tuple(failures),
        duration_ms=(time.perf_counter() - started) * 1000,
        source=case.source,
        category=case.category,
        tags=case.tags,
        expect_ok=case.expect_ok,
        expected_error=case.expected_error,
        draft=item.contract.draft,
        response=response,
        order=item.order,
        **extra,
    )


def non_reproducible(item: Item, answer: NotReproducible, started: float, **extra) -> CaseResult:
    fp = short_hash({"contract": item.contract.id, "non_reproducible": answer.reason, "detail": answer.detail})
    if answer.attempts:
        extra["attempts"] = answer.attempts
    return result(item, Status.NON_REPRODUCIBLE, reason=answer.reason, fp=fp, started=started,
                  details={"message": answer.message, **answer.details}, **extra)


def error_result(item: Item, exc: BaseException, started: float | None = None, **extra) -> CaseResult:
    """A case that could not be evaluated: status error. A check that could not finish (a regex
    over its time limit, a CaseError) says so; anything else is a bug or the environment."""
    started = time.perf_counter() if started is None else started
    if isinstance(exc, CaseError):
        return result(item, Status.ERROR, reason=str(exc), started=started,
                      fp=short_hash({"contract": item.contract.id, "error": "case_error"}), **extra)
    return result(item, Status.ERROR, reason=f"could not evaluate: {type(exc).__name__}: {exc}", started=started,
                  fp=short_hash({"contract": item.contract.id, "error": type(exc).__name__}), **extra)


def _response(item: Item, answer: Response, started: float) -> CaseResult:
    """Checks, judges, verdict and fingerprint for one response."""
    contract, case, response = item.contract.for_case(item.case), item.case, answer.response
    extra = case_metrics([response])
    if answer.attempts:
        extra["attempts"] = answer.attempts
    judgements = answer.judgements
    try:
        failures = at_case(case, contract, with_judges(contract, answer.request, response,
                                                       check(contract, answer.request, response, answer.tools),
                                                       judgements))
        extra["score"] = case_score(contract, response)
        extra["details"] = {**answer.details, **judgement_details(contract, judgements)}
    except CaseError as exc:
        return error_result(item, exc, started, details=answer.details, **extra)
    except JudgementMissing as exc:
        return non_reproducible(item, NotReproducible("judgement_not_recorded", str(exc), exc.key), started)
    fp = fingerprint(contract.id, case.id, failures, response)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures,
                                             pinned_by(case, fp, response))
    return result(item, status, classification=classification, reason=reason, fp=fp,
                  failures=failures, started=started, response=response, **extra)


def _trajectory(item: Item, answer: Trajectory, started: float) -> CaseResult:
    """Checks, verdict and fingerprint for a scenario's loop."""
    contract, case, loop = item.contract.for_case(item.case), item.case, answer.loop
    extra = case_metrics([s["response"] for s in loop.steps], answer.latency_ms)
    if answer.attempts:
        extra["attempts"] = answer.attempts
    final = loop.steps[-1]["response"] if loop.steps else None
    try:
        # (a loop stopped at a step the contract forbids has no final answer to judge)
        failures = at_case(case, contract, with_judges(contract, answer.request, None if loop.diverged else final,
                                                       check_trajectory(contract, answer.request, loop),
                                                       answer.judgements))
        extra["score"] = case_score(contract, final)
    except CaseError as exc:
        return error_result(item, exc, started, details=answer.details, **extra)
    except JudgementMissing as exc:
        return non_reproducible(item, NotReproducible("judgement_not_recorded", str(exc), exc.key), started)
    fp = trajectory_fingerprint(contract.id, case.id, failures, loop.steps)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures,
                                             pinned_by(case, fp, final))
    from .agent import trajectory_summary  # why: scenarios only; agent loads signal and threading

    details = {**answer.details, **judgement_details(contract, answer.judgements),
               "trajectory": trajectory_summary(loop.steps)}
    if loop.diverged:  # where the loop stopped, so `replayci regrade` judges that step again
        details["diverged_at"] = len(loop.steps)
    # The steps as judged (responses and tool results), so `replayci regrade` can judge them again.
    kept = [report_response(s["response"]) for s in loop.steps]
    if all(r is not None for r in kept):
        details["steps"] = [{**s, "response": r} for s, r in zip(loop.steps, kept, strict=True)]
    return result(item, status, classification=classification, reason=reason, fp=fp,
                  failures=failures, started=started, response=final, details=details, **extra)


def at_case(case: Case, contract: Contract, failures: list[Failure]) -> list[Failure]:
    """*failures* located at the check that failed: a failure whose check has no line of its
    own (the tool called, the stop reason, a tool's declared schema) is at the case's line."""
    if not case.source or not any(f.source == contract.source for f in failures):
        return failures
    return [replace(f, source=case.source) if f.source == contract.source else f
            for f in failures]


def pinned_by(case: Case, fp: str, response: Document | None) -> Pinned:
    """What a negative case pins beyond its classification, with the response it judged."""
    if case.expect_ok:
        return _UNPINNED
    return Pinned(case.expected_failure, case.expected_fingerprint, fp, slipped_through(response))


_UNPINNED = Pinned()
