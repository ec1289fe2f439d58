"""A batch run's file under `.replayci/batches/`: which batches it submitted, for which
requests, written before it waits for them, so that the same command after an interruption
polls them again and never submits them twice; the pending runs `replayci batch` lists, and
their batches' states at the providers."""
from __future__ import annotations

import datetime
import json
import os
import stat
from collections.abc import Iterator
from typing import Any

from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..core.hashing import h
from ..core.jsonvalue import strict_loads
from ..core.paths import display_path
from ..providers import api_key_for
from ..providers.batch import BatchClient, BatchState, batch_client, supports_batch

BATCHES_DIR = os.path.join(".replayci", "batches")
FILE_VERSION = 1


def target_label(provider: str, model: str) -> str:
    """A run's target as batch ids and files name it: provider:model."""
    return f"{provider}:{model}"


def custom_id(pack: str, contract: str, case: str, *, repeat: int, target: str, step: int = 0) -> str:
    """The id of one request in a batch: the same case, repeat, target (and scenario step) has
    the same id in every run (letters, digits and '-': what both batch APIs take)."""
    key = {"pack": pack, "contract": contract, "case": case, "repeat": repeat, "target": target}
    if step:
        key["step"] = step
    return f"rc-{h(key)}"


def run_id(targets: list[dict], requests: list[tuple[str, dict]]) -> str:
    """The run a list of targets (each {provider, base_url, target}) and a set of first requests
    (custom id, body) make: the same command, on the same packs, gives the same id (another
    target list, or a changed request, is another run)."""
    return h({"targets": targets, "requests": sorted((cid, h(body)) for cid, body in requests)})


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class RunFile:
    """`.replayci/batches/RUN.json`: the run's batches, each with its round and request ids."""

    def __init__(self, root: str, run: str, *, provider: str | None, base_url: str | None, targets: list[str]) -> None:
        self.path = os.path.join(root, BATCHES_DIR, f"{run}.json")
        self.doc: dict[str, Any] = {"version": FILE_VERSION, "run": run, "provider": provider,
                                    "base_url": base_url, "targets": targets, "created_at": _now(),
                                    "batches": []}
        self.resumed = False
        existing = read_run(self.path)
        if existing is not None:
            self.doc, self.resumed = existing, True

    def submitted(self, round_no: int) -> dict[str, str]:
        """custom id -> batch id, for the requests of round *round_no* already submitted."""
        return {cid: b["id"] for b in self.doc["batches"] if b["round"] == round_no for cid in b["custom_ids"]}

    def add(self, batch_id: str, round_no: int, custom_ids: list[str], *, provider: str, base_url: str | None,
            target: str) -> None:
        """Note a batch just submitted, with where it went (on disk before anyone waits for it)."""
        self.doc["batches"].append({"id": batch_id, "round": round_no, "submitted_at": _now(),
                                    "provider": provider, "base_url": base_url, "target": target,
                                    "custom_ids": custom_ids})
        write_atomic(self.path, json.dumps(self.doc, indent=2, sort_keys=True) + "\n")

    def check_endpoints(self, endpoints: set[tuple[str | None, str | None]]) -> None:
        """A ConfigError naming the file when a batch it notes went to a (provider, base URL) that
        is none of *endpoints*, the ones this run sends to (a hand-edited file)."""
        for b in self.doc["batches"]:
            went = (b.get("provider", self.doc.get("provider")), b.get("base_url", self.doc.get("base_url")))
            if went not in endpoints:
                where = " or ".join(f"{p} at {u or 'its default URL'}" for p, u in sorted(endpoints, key=str))
                raise ConfigError(f"{display_path(self.path)}: batch {b['id']} went to {went[0]} at "
                                  f"{went[1] or 'its default URL'}, but this run sends to {where}; run `replayci "
                                  "batch status` to see it, or delete it to submit the run again")

    def started(self) -> datetime.datetime | None:
        """When the run's first batch was submitted."""
        stamps = [b["submitted_at"] for b in self.doc["batches"]]
        return datetime.datetime.fromisoformat(min(stamps)) if stamps else None

    def remove(self) -> None:
        """The run is over: nothing is left to resume."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def read_run(path: str) -> dict | None:
    """A run file's document; None when there is none; a ConfigError, naming the file and
    what was expected, when it is not one (it is left as it is)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read forever
            raise ConfigError(f"{display_path(path)}: not a regular file; delete it to submit the run again")
        with open(path, "rb") as fh:
            data = fh.read(MAX_RUN_FILE_BYTES + 1)
        if len(data) > MAX_RUN_FILE_BYTES:
            raise ValueError(f"larger than {MAX_RUN_FILE_BYTES:,} bytes")
        doc = strict_loads(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ConfigError(f"{display_path(path)}: not a batch run file ({why}); delete it to submit the run "
                          "again") from None
    why = _not_a_run(doc)
    if why is not None:
        raise ConfigError(f"{display_path(path)}: not a batch run file of version {FILE_VERSION}: {why} (expected "
                          "{version, run, provider, targets, created_at, batches: [{id, round, custom_ids, "
                          "submitted_at, provider, base_url, target}]}); delete it to submit the run again")
    return doc


# A run file lists request ids (about 30 bytes each): far below this for any batch run.
MAX_RUN_FILE_BYTES = 256 * 1024 * 1024


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _time(value: Any) -> bool:
    """A time with its zone (the run's age is counted from it against the clock in UTC)."""
    try:
        return isinstance(value, str) and datetime.datetime.fromisoformat(value).utcoffset() is not None
    except ValueError:
        return False


def _not_a_run(doc: Any) -> str | None:
    """What makes *doc* no run file this version writes, or None."""
    if not isinstance(doc, dict):
        return "not an object"
    top = {"version": doc.get("version") == FILE_VERSION and type(doc.get("version")) is int,
           "run": _text(doc.get("run")),
           "provider": doc.get("provider") is None or _text(doc.get("provider")),
           "base_url": doc.get("base_url") is None or isinstance(doc.get("base_url"), str),
           "targets": isinstance(doc.get("targets"), list) and all(_text(t) for t in doc["targets"]),
           "created_at": _time(doc.get("created_at")),
           "batches": isinstance(doc.get("batches"), list)}
    bad = next((k for k, ok in top.items() if not ok), None)
    if bad is not None:
        return f"'{bad}' is missing or of the wrong type"
    for i, b in enumerate(doc["batches"]):
        if not isinstance(b, dict):
            return f"batches[{i}] is not an object"
        fields = {"id": _text(b.get("id")),
                  "round": type(b.get("round")) is int and b["round"] >= 0,
                  "custom_ids": isinstance(b.get("custom_ids"), list) and all(_text(c) for c in b["custom_ids"]),
                  "submitted_at": _time(b.get("submitted_at")),
                  "provider": _text(b.get("provider")),
                  "base_url": b.get("base_url") is None or isinstance(b.get("base_url"), str),
                  "target": _text(b.get("target"))}
        bad = next((k for k, ok in fields.items() if not ok), None)
        if bad is not None:
            return f"batches[{i}].{bad} is missing or of the wrong type"
    return None


def pending_runs(root: str) -> Iterator[tuple[str, dict]]:
    """Every run file of the project (its path and document), oldest first."""
    folder = os.path.join(root, BATCHES_DIR)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except FileNotFoundError:
        return
    docs = []
    for name in names:
        path = os.path.join(folder, name)
        doc = read_run(path)
        if doc is not None:
            docs.append((path, doc))
    yield from sorted(docs, key=lambda pd: (pd[1]["created_at"], pd[1]["run"]))


def run_states(doc: dict, *, environ=None, cancel: bool = False) -> list[tuple[dict, BatchState | str]]:
    """Each batch of a run file's document with its state at the provider it went to
    (cancelled first when *cancel*), or why it could not be asked (no key, the provider refused)."""
    environ = os.environ if environ is None else environ
    clients: dict[tuple, BatchClient | str] = {}
    out: list[tuple[dict, BatchState | str]] = []
    try:
        for b in doc["batches"]:
            endpoint = (b.get("provider", doc.get("provider")), b.get("base_url", doc.get("base_url")))
            if endpoint not in clients:
                clients[endpoint] = _status_client(*endpoint, environ)
            client = clients[endpoint]
            if isinstance(client, str):
                out.append((b, client))
                continue
            try:
                out.append((b, client.cancel(b["id"]) if cancel else client.poll(b["id"])))
            except Exception as exc:  # noqa: BLE001 - the provider's answer, shown for this batch
                out.append((b, client.classify(exc).message))
    finally:
        for client in clients.values():
            if not isinstance(client, str):
                client.close()
    return out


def _status_client(provider, base_url: str | None, environ) -> BatchClient | str:
    """The batch client `replayci batch` asks about a batch of *provider*, or why there is none."""
    if not isinstance(provider, str) or not supports_batch(provider):
        return f"unknown provider {provider!r}"
    key = api_key_for(provider, environ)
    if not key:
        from ..providers import missing_key_message  # the status commands only

        return missing_key_message(provider)
    return batch_client(provider, api_key=key, base_url=base_url)
