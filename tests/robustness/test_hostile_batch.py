"""A batch run's files under .replayci/batches/ are read back by the same command, by `batch
status` and by `batch cancel`: a damaged, hand-edited or hostile one is named with what was
expected (exit 2), never a traceback or exit 3, never a hang, and it is left as it was."""
from __future__ import annotations

import json
import os
import threading

import pytest
from click.testing import CliRunner
from livecli import add_cases, invoke, live_env

from replayci.cli import cli
from replayci.engine.batchfile import BATCHES_DIR

FAST = {"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"}


def held_run(pack, server):
    """A run whose batch the server holds: its run file stays, and its document."""
    add_cases(pack, "weather", ["a"])
    server.batches.hold = True
    res = invoke("openai", server, "--batch", "--json", "--batch-timeout", "0.2", env=FAST)
    assert res.exit_code == 1, res.output
    (path,) = sorted((pack.root / BATCHES_DIR).glob("*.json"))
    return path, json.loads(path.read_text())


def commands(server, run: str) -> list:
    """Each command that reads the run files: the run itself again, status, cancel."""
    return [
        lambda: invoke("openai", server, "--batch", "--json", "--batch-timeout", "0.2", env=FAST),
        lambda: CliRunner().invoke(cli, ["batch", "status", "--no-color"], env=live_env("openai")),
        lambda: CliRunner().invoke(cli, ["batch", "cancel", run], env=live_env("openai")),
    ]


def _edit(doc: dict, **batch) -> str:
    return json.dumps({**doc, "batches": [{**doc["batches"][0], **batch}]})


DAMAGED = {
    "nested far too deep": lambda doc: "[" * 100_000 + "]" * 100_000,
    "an object nested far too deep": lambda doc: '{"a":' * 100_000 + "1" + "}" * 100_000,
    "not UTF-8": lambda doc: b"\xff\xfe{\x00",
    "a batch id that is an object": lambda doc: _edit(doc, id={"x": 1}),
    "a round that is text": lambda doc: _edit(doc, round="1"),
    "custom ids that are a number": lambda doc: _edit(doc, custom_ids=5),
    "custom ids that are not text": lambda doc: _edit(doc, custom_ids=[1, None]),
    "a submission time that is no time": lambda doc: _edit(doc, submitted_at="yesterday"),
    "a submission time that is a number": lambda doc: _edit(doc, submitted_at=5),
    "a target that is a list": lambda doc: _edit(doc, target=["openai"]),
    "a provider that is a number": lambda doc: json.dumps({**doc, "provider": 5}),
    "targets that are text": lambda doc: json.dumps({**doc, "targets": "openai:gpt-4o-mini"}),
    "a creation time that is a number": lambda doc: json.dumps({**doc, "created_at": 7}),
    "a run id that is a list": lambda doc: json.dumps({**doc, "run": [1]}),
    "NaN": lambda doc: _edit(doc, round=float("nan")),
    "a submission time without its zone": lambda doc: _edit(doc, submitted_at="2026-01-01T10:00:00"),
    "a creation time without its zone": lambda doc: json.dumps({**doc, "created_at": "2026-01-01T10:00:00"}),
}


@pytest.mark.parametrize("damage", list(DAMAGED), ids=list(DAMAGED))
def test_a_damaged_run_file_is_named_by_every_command_and_kept(damage, pack, server):
    path, doc = held_run(pack, server)
    text = DAMAGED[damage](doc)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    for command in commands(server, doc["run"]):
        res = command()
        assert res.exit_code == 2, (damage, res.exit_code, res.output)
        assert "Traceback" not in res.output and "internal error" not in res.output
        assert path.name in res.output and "delete it" in res.output, res.output
        assert path.read_bytes() == text


ELSEWHERE = {
    "another base URL": {"base_url": "http://127.0.0.1:9/v1"},
    "another provider": {"provider": "anthropic"},
    "no base URL of its own": {"base_url": None},
}


@pytest.mark.parametrize("edit", list(ELSEWHERE), ids=list(ELSEWHERE))
def test_a_batch_noted_as_sent_elsewhere_is_named_not_a_crash(edit, pack, server):
    """A run file edited to say a batch went to an endpoint this run does not send to: the run
    names the file and the batch (exit 2); status and cancel ask that endpoint or say why not."""
    path, doc = held_run(pack, server)
    text = _edit(doc, **ELSEWHERE[edit])
    path.write_text(text)
    run, status, cancel = commands(server, doc["run"])
    res = run()
    assert res.exit_code == 2, (edit, res.exit_code, res.output)
    assert path.name in res.output and doc["batches"][0]["id"] in res.output and "delete it" in res.output
    for command in (status, cancel):
        res = command()
        assert res.exit_code in (0, 1, 2) and "Traceback" not in res.output and "internal error" not in res.output
    assert path.read_text() == text


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_run_file_that_is_no_file_is_named_not_waited_on(kind, pack, server):
    path, doc = held_run(pack, server)
    path.unlink()
    if kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    done = threading.Event()
    threading.Thread(target=_unblock, args=(path, done), daemon=True).start()
    try:
        for command in commands(server, doc["run"]):
            res = command()
            assert res.exit_code == 2, (kind, res.exit_code, res.output)
            assert path.name in res.output and "not a regular file" in res.output, res.output
    finally:
        done.set()
    assert path.is_dir() if kind == "folder" else path.is_fifo()


def _unblock(path, done: threading.Event) -> None:
    """A reader that opened the FIFO (the rule broken) gets end of file after a while instead of
    hanging the suite."""
    while not done.wait(3):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


# ----------------------------------------------------------------------------- result lines

JUNK = {
    "a line that is not JSON": b"{not json\n",
    "a line nested far too deep": b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "a line that is a list": b"[1, 2]\n",
    "a line that is null": b"null\n",
    "blank lines": b"\n   \n\t\n",
    "a line of wrong types": json.dumps({"custom_id": ["x"], "response": "ok", "result": "ok", "error": 5}).encode()
    + b"\n",
    "an error whose code is a list": json.dumps({"custom_id": "rc-x", "error": {"code": ["x"], "message": {}},
                                                 "result": {"type": ["errored"], "error": []}}).encode() + b"\n",
    "a line with NaN": b'{"custom_id": "rc-y", "response": {"status_code": NaN, "body": NaN}}\n',
    "a line that is not UTF-8": b'{"custom_id": "\xff\xfe"}\n',
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("junk", list(JUNK), ids=list(JUNK))
def test_a_damaged_result_line_costs_nothing_but_itself(junk, provider, pack, server):
    """A results file is what a provider says: a line that cannot be read is passed over, and
    every request with a readable line gets its answer."""
    add_cases(pack, "weather", ["a", "b"])
    server.batches.mangle = lambda lines: [JUNK[junk], *lines, JUNK[junk]]
    res = invoke(provider, server, "--batch", "--json", env=FAST)
    assert res.exit_code == 0, (junk, res.exit_code, res.output)
    assert {c["case"]: c["status"] for c in json.loads(res.stdout)["cases"]} == {"a": "pass", "b": "pass"}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_line_cut_short_fails_its_own_request_only(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.batches.mangle = lambda lines: [*lines[:-1], lines[-1][: len(lines[-1]) // 2]]
    res = invoke(provider, server, "--batch", "--json", "--batch-timeout", "5", env=FAST)
    assert res.exit_code == 1, res.output
    statuses = sorted(c["status"] for c in json.loads(res.stdout)["cases"])
    assert statuses == ["fail", "pass"], res.stdout
    (failed,) = [c for c in json.loads(res.stdout)["cases"] if c["status"] == "fail"]
    assert failed["classification"] == "unexpected_error"
