"""The public face of the package: names that keep working, and the example of docs/python-api.md as written."""
from __future__ import annotations

import re
import subprocess
import sys

from builders import REPO


def _docs_example() -> str:
    text = (REPO / "docs" / "python-api.md").read_text("utf-8")
    return next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "replayci.run(" in b)


def test_the_docs_example_runs_as_written():
    out = subprocess.run([sys.executable, "-c", _docs_example()], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("True 1.0 ["), lines
    assert lines[1:] == ["pass", "['Paris']"]


def test_public_names_work_in_any_order_and_twice():
    code = """
import replayci
doc = {"a": [1, 2]}
assert replayci.query("$.a[*]", doc) == [1, 2]
pack = replayci.load_pack("packs/starter")
result = replayci.run(["packs/starter"], provider="recorded")
assert replayci.query("$.a[0]", doc) == [1]
assert replayci.run(["packs/starter"], provider="recorded").ok == result.ok
assert replayci.load_pack("packs/starter").pack_id == pack.pack_id
import replayci.checks.jsonpath, replayci.engine.runner, replayci.api
assert callable(replayci.query) and callable(replayci.run) and callable(replayci.load_pack)
for name in ("load_pack", "run", "check_response", "query", "CaseResult", "RunResult", "Failure",
             "ConfigError", "__version__"):
    assert name in dir(replayci), name
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_an_unknown_run_option_is_a_type_error_with_a_suggestion(starter):
    import pytest

    import replayci

    with pytest.raises(TypeError) as err:
        replayci.run(["packs/starter"], filter=("x",))
    assert "unexpected keyword argument 'filter'" in str(err.value)
    assert "did you mean 'filters'?" in str(err.value)
    assert replayci.run(["packs/starter"], filters=("get_weather/*",)).ok
