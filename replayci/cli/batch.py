"""`replayci batch status|cancel`: the batch runs waiting at a provider (.replayci/batches/)."""
from __future__ import annotations

import os

import click

from .. import config
from ..core.errors import did_you_mean
from ..engine.batchfile import BATCHES_DIR, pending_runs, run_states
from .main import guarded, no_color_accepted


@click.group()
@no_color_accepted
def batch() -> None:
    """Batch runs submitted with `run --batch` and not finished: show or cancel them."""


@batch.command()
@no_color_accepted
@guarded
def status() -> None:
    """Each pending batch run and where its batches stand at the provider."""
    _show(_runs(()), cancel=False)


@batch.command()
@click.argument("ids", nargs=-1, metavar="[RUN|BATCH]...")
@no_color_accepted
@guarded
def cancel(ids: tuple[str, ...]) -> None:
    """Cancel the batches of the runs named (a run id or one of its batch ids; none: every pending run).

    The run file stays: the same `run --batch` command then reports the cancelled requests."""
    _show(_runs(ids), cancel=True)


def _runs(ids: tuple[str, ...]) -> list[tuple[str, dict]]:
    root = config.resolve({}).project_root
    runs = list(pending_runs(root))
    if not runs:
        click.echo(f"no batch runs pending ({os.path.join(BATCHES_DIR, '')} holds none)")
        return []
    if not ids:
        return runs
    known = {doc["run"]: (path, doc) for path, doc in runs}
    known.update({b["id"]: (path, doc) for path, doc in runs for b in doc["batches"]})
    for i in ids:
        if i not in known:
            raise click.UsageError(f"no pending batch run or batch {i!r}" + did_you_mean(i, known))
    return list({known[i][0]: known[i] for i in ids}.values())


def _show(runs: list[tuple[str, dict]], *, cancel: bool) -> None:
    for path, doc in runs:
        targets = ", ".join(doc.get("targets") or ()) or doc.get("provider")
        click.echo(f"run {doc['run']} · {targets} · submitted {doc.get('created_at')} · {os.path.relpath(path)}")
        for entry, state in run_states(doc, cancel=cancel):
            head = f"  {entry['id']}  round {entry['round']}  "
            if isinstance(state, str):
                click.echo(f"{head}{'not cancelled' if cancel else 'unknown'}: {state}")
                continue
            click.echo(f"{head}{state.status}  {state.done}/{state.total} done, {state.failed} failed")
