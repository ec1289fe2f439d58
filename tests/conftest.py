"""Shared fixtures: packs written to temporary directories, the way users write them."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

# Support modules (builders, the fake provider server, ...) import by name from every test.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from builders import TEMPLATES, PackBuilder  # noqa: E402
from warmed import app_python  # noqa: E402
from warmed import share as share_warm_servers  # noqa: E402
from warmed import stop as stop_warm_servers  # noqa: E402

# The fake provider server's fixtures (server, shared_server), for every test module.
pytest_plugins = ("livecli",)


# No test may reach a real provider: live tests pass base_url explicitly, and these make a
# stray call fail fast instead of hanging.
for _var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT",
             "GOOGLE_GENAI_USE_VERTEXAI", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "AWS_PROFILE", "REPLAYCI_PROVIDER_KEY", "REPLAYCI_PROVIDER",
             "REPLAYCI_MODEL", "REPLAYCI_BASE_URL", "REPLAYCI_JOBS", "REPLAYCI_REPLAY", "REPLAYCI_TOOL_REPLAY",
             "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "NO_COLOR", "FORCE_COLOR"):
    os.environ.pop(_var, None)
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
os.environ["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
os.environ["GOOGLE_GEMINI_BASE_URL"] = "http://127.0.0.1:9"
# boto3 finds no credentials, asks no instance metadata service and reaches no AWS endpoint.
os.environ.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent/aws-config",
                   "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
                   "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "us-east-1"})
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
# Hundreds of tests run the real CLI in a subprocess: each compiles the modules it imports unless
# their bytecode is cached, and an environment that forbids writing it (PYTHONDONTWRITEBYTECODE)
# would have every one of them compile replayci again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Likewise this process: pytest caches each test module's rewritten asserts only where bytecode may
# be written, and rewrites them all again in every worker otherwise.
sys.dont_write_bytecode = False


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project directory, made the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pack(project):
    return PackBuilder(project)


@pytest.fixture
def starter(project):
    """A project made from the starter template (what `replayci init` writes)."""
    shutil.copytree(TEMPLATES / "starter", project / "packs" / "starter")
    shutil.copy(TEMPLATES / "replayci.yml", project / ".replayci.yml")
    return project


@pytest.fixture
def recorded_run() -> dict:
    """A JSON report of the example packs' recorded run."""
    from html_support import load_report

    return load_report("recorded_run.json")


@pytest.fixture
def failing_run() -> dict:
    """A JSON report of a run with one fixture broken."""
    from html_support import load_report

    return load_report("failing_run.json")


@pytest.fixture(scope="session")
def warm_python():
    """The command prefix that runs a script as `python SCRIPT` would, in a fork of a process that
    has imported the provider SDKs already (tests/support/warm.py): applications under the proxy
    start in milliseconds instead of seconds."""
    return app_python()


def pytest_configure(config):
    """Under pytest-xdist the test processes share the warm Pythons' servers: each imports its
    modules once for the session, not once per process."""
    if not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no":
        share_warm_servers()


def pytest_sessionfinish(session):
    """The warm Pythons' servers stop with the session (their commands' CPU time counted)."""
    stop_warm_servers()


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one test process more than the cores. Many tests wait on a server, a command
    or a fork of the warm Python; a third process on two cores fills those waits (the default
    suite on 2 cores: 240 s with two processes, 226 s with three)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this platform
        cores = os.cpu_count() or 1
    return cores + 1
