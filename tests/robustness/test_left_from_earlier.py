"""Promises left from earlier rounds, through the real CLI and SDKs: a gzip-encoded Anthropic
answer on a live run, a Bedrock error body typed by nothing but its status, and reports written
in a folder whose name is not UTF-8 (a pack whose own path is not UTF-8 is refused, naming it)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
import warmed
from fakeserver import Fault, RecordedRequest, Reply
from livecli import add_cases, invoke, report_of

from replayci.formats import normalize


def test_a_gzipped_anthropic_answer_on_a_live_run_is_judged(pack, server):
    add_cases(pack, "w", ["a"])
    seen = RecordedRequest("POST", "/v1/messages", {}, {"model": "m", "messages": []}, b"", 0.0)
    body = Reply.tool_call("get_weather", {"location": "Paris"}).render(seen).body
    server.set_default(Fault(status_code=200, raw_body=gzip.compress(body), headers=(("content-encoding", "gzip"),)))
    res = invoke("anthropic", server, "--json", "--record")
    assert res.exit_code == 0, res.output
    (case,) = report_of(res)["cases"]
    assert case["status"] == "pass", case
    again = invoke("recorded", None, "--json", key=False)  # the recording written reads back
    assert again.exit_code == 0 and report_of(again)["cases"][0]["status"] == "pass", again.output


@pytest.mark.parametrize("status", [400, 403, 429, 500, 503])
def test_a_bedrock_error_body_without_its_header_reads_by_its_status(status, pack, server):
    """`{"message": ...}` and a status, no x-amzn-ErrorType: an error of that status with that
    message, read from a recording and live through boto3 alike; never `error`."""
    message = "Too many tokens, please wait before trying again."
    doc = normalize({"message": message}, status=status)
    assert doc["success"] is False and doc["error"]["status"] == status and doc["error"]["message"] == message
    add_cases(pack, "w", ["a"])
    server.set_default(Fault(status_code=status, raw_body=json.dumps({"message": message}).encode()))
    res = invoke("bedrock", server, "--json")
    (case,) = report_of(res)["cases"]
    assert res.exit_code == 1 and (case["status"], case["classification"]) == ("fail", "unexpected_error"), case
    assert case["response"]["error"]["status"] == status and message in case["response"]["error"]["message"]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
def test_reports_are_written_in_a_folder_whose_name_is_not_utf8(tmp_path, starter):
    """Run from a project folder whose name is not UTF-8, and with report paths through one:
    the reports are written, and name the pack by its path from the project."""
    root = os.fsencode(str(tmp_path)) + b"/pro\xffject"
    shutil.copytree(starter / "packs", os.fsdecode(root + b"/packs"))
    shutil.copy(starter / ".replayci.yml", os.fsdecode(root))
    out = os.fsencode(str(tmp_path)) + b"/o\xffut"
    done = subprocess.run([*warmed.cli(), "--report-json", "r.json", "--html", "r.html",
                           "--junit", out + b"/r.xml"], cwd=root, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(open(root + b"/r.json", "rb").read())
    assert report["summary"]["pass"] == 6 and report["cases"][0]["pack"] == "starter"
    assert os.path.getsize(root + b"/r.html") and os.path.getsize(out + b"/r.xml")
