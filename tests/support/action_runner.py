"""Runs a composite GitHub Action (action.yml) in a local shell, the way a runner does.

Each `run:` step is written to a file and run by `bash --noprofile --norc -eo pipefail FILE` (the
runner's bash), in its `working-directory`, with the step's `env`, a fresh GITHUB_OUTPUT file and
the job's GITHUB_STEP_SUMMARY, GITHUB_ENV, GITHUB_PATH, RUNNER_TEMP and GITHUB_ACTIONS=true.
`${{ }}` expressions (inputs, github, runner, steps contexts; ==, !=, &&, ||, !, always(),
success(), failure()) are evaluated as the runner does. A `uses:` step is not run: its `if:` and
`with:` are evaluated and recorded, and its `with:` keys are checked against the inputs the
action it names declares.

    python tests/support/action_runner.py --workdir DIR [--path-first BIN] [NAME=VALUE ...]

runs the repository's action.yml with those inputs and exits with the action's outcome.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]

# The inputs of the actions the composite steps use, as their own action.yml declare them.
KNOWN_ACTIONS = {
    "actions/setup-python": {"python-version", "python-version-file", "cache", "architecture", "check-latest",
                             "token", "cache-dependency-path", "update-environment", "allow-prereleases",
                             "freethreaded", "pip-version", "pip-install"},
    "actions/upload-artifact": {"name", "path", "if-no-files-found", "retention-days", "compression-level",
                                "overwrite", "include-hidden-files"},
}
_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))|(?P<num>-?\d+(?:\.\d+)?)"
                    r"|(?P<fn>always|success|failure|cancelled)\(\)|(?P<lit>true|false|null)\b"
                    r"|(?P<ref>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*))")


@dataclass
class StepRun:
    name: str
    uses: str | None
    ran: bool
    outcome: str  # success | failure | skipped
    with_: dict = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict
    ok: bool

    def step(self, name: str) -> StepRun:
        return next(s for s in self.steps if s.name == name)


class ActionError(ValueError):
    """The action file breaks the rules a runner applies (an unknown input, a `with` key...)."""


def evaluate(expr: str, ctx: dict, status: str = "success"):
    """The value of a GitHub expression (without `${{ }}`) in the contexts `ctx`."""
    pos, parts = 0, []
    while pos < len(expr.rstrip()):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ActionError(f"cannot read the expression {expr!r} at {expr[pos:]!r}")
        pos = m.end()
        kind, text = m.lastgroup, m.group(m.lastgroup)
        if kind == "str":
            parts.append(repr(text[1:-1].replace("''", "'")))
        elif kind == "op":
            parts.append({"&&": " and ", "||": " or ", "!": " not "}.get(text, text))
        elif kind == "fn":
            parts.append(repr({"always": True, "success": status == "success",
                               "failure": status == "failure", "cancelled": False}[text]))
        elif kind == "lit":
            parts.append({"true": "True", "false": "False", "null": "None"}[text])
        elif kind == "num":
            parts.append(text)
        else:
            parts.append(repr(_lookup(text, ctx)))
    return eval("".join(parts), {"__builtins__": {}}, {})  # only literals and operators remain


def _lookup(ref: str, ctx: dict):
    value = ctx
    for name in ref.split("."):
        value = value.get(name, "") if isinstance(value, dict) else ""
    return value


def substitute(text, ctx: dict, status: str = "success"):
    """A string with every `${{ expr }}` replaced by its value, as text."""
    if not isinstance(text, str):
        return text

    def one(m: re.Match) -> str:
        value = evaluate(m.group(1), ctx, status)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", one, text)


def _condition(step: dict, ctx: dict, status: str) -> bool:
    cond = step.get("if")
    if cond is None:
        return status == "success"
    cond = str(cond).strip()
    if cond.startswith("${{") and cond.endswith("}}"):
        cond = cond[3:-2]
    if not re.search(r"\b(always|success|failure|cancelled)\(\)", cond):
        cond = f"success() && ({cond})"  # a runner adds success() to a condition that names none
    return bool(evaluate(cond, ctx, status))


def _read_outputs(path: Path) -> dict:
    outputs, lines = {}, path.read_text("utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


def _check_uses(step: dict) -> None:
    uses = step["uses"]
    m = re.fullmatch(r"([\w.-]+/[\w.-]+)@(v\d+(?:\.\d+)*|[0-9a-f]{40})", uses)
    if not m:
        raise ActionError(f"uses: {uses!r} is not OWNER/REPO@vN (or a commit)")
    known = KNOWN_ACTIONS.get(m.group(1))
    if known is None:
        raise ActionError(f"uses: {uses!r}: an action this runner does not know the inputs of")
    unknown = sorted(set(step.get("with") or {}) - known)
    if unknown:
        raise ActionError(f"uses: {uses!r}: no input named {', '.join(unknown)}")


def _job_env(root: Path, workspace: Path, path_first: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE"):
        (root / name.lower()).touch()
        env[name] = str(root / name.lower())
    (root / "temp").mkdir(exist_ok=True)
    env.update({"GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_TEMP": str(root / "temp"), "RUNNER_OS": "Linux",
                "GITHUB_WORKSPACE": str(workspace), "GITHUB_ACTION_PATH": str(REPO)})
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "")
    return env


def _run_step(step: dict, ctx: dict, env: dict, root: Path, workspace: Path, index: int) -> StepRun:
    output = root / f"output-{index}"
    output.write_text("", "utf-8")
    step_env = {**env, "GITHUB_OUTPUT": str(output)}
    step_env.update({k: substitute(str(v), ctx) for k, v in (step.get("env") or {}).items()})
    script = root / "temp" / f"step-{index}.sh"
    script.write_text(substitute(step["run"], ctx), "utf-8")
    if step["shell"] != "bash":
        raise ActionError(f"step {step.get('name')!r}: shell {step['shell']!r}; this runner runs bash")
    cwd = workspace / substitute(step.get("working-directory", "."), ctx)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd,
                          env=step_env, capture_output=True, text=True, timeout=600)
    outcome = "success" if proc.returncode == 0 else "failure"
    if step.get("id"):
        ctx["steps"][step["id"]] = {"outputs": _read_outputs(output), "outcome": outcome}
    return StepRun(step.get("name", ""), None, True, outcome, stdout=proc.stdout, stderr=proc.stderr,
                   returncode=proc.returncode)


def run_action(inputs: dict, workspace: Path, *, action: Path = REPO / "action.yml",
               path_first: str | None = None, scratch: Path | None = None) -> ActionRun:
    """Run the composite action's steps with these inputs in `workspace`."""
    spec = yaml.safe_load(action.read_text("utf-8"))
    declared = spec.get("inputs") or {}
    unknown = sorted(set(inputs) - set(declared))
    if unknown:
        raise ActionError(f"unexpected input(s) {', '.join(unknown)}; valid inputs are {', '.join(declared)}")
    values = {name: str(inputs.get(name, meta.get("default", ""))) for name, meta in declared.items()}
    root = Path(scratch or tempfile.mkdtemp(prefix="replayci-action-"))
    env = _job_env(root, workspace, path_first)
    ctx = {"inputs": values, "steps": {}, "runner": {"temp": env["RUNNER_TEMP"], "os": "Linux"},
           "github": {"action_path": str(action.parent), "workspace": str(workspace)}}
    status, runs = "success", []
    for index, step in enumerate(spec["runs"]["steps"]):
        name = step.get("name", step.get("uses", ""))
        if "uses" in step:
            _check_uses(step)
        if not _condition(step, ctx, status):
            runs.append(StepRun(name, step.get("uses"), False, "skipped"))
            continue
        if "uses" in step:
            with_ = {k: substitute(str(v), ctx, status) for k, v in (step.get("with") or {}).items()}
            runs.append(StepRun(name, step["uses"], False, "success", with_=with_))
            continue
        result = _run_step(step, ctx, env, root, workspace, index)
        runs.append(result)
        if result.outcome == "failure":
            status = "failure"
    outputs = {k: substitute(str(v.get("value", "")), ctx, status) for k, v in (spec.get("outputs") or {}).items()}
    return ActionRun(runs, outputs, status == "success")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--path-first", help="a directory put first on PATH (the Python set up)")
    parser.add_argument("inputs", nargs="*", help="NAME=VALUE")
    args = parser.parse_args(argv)
    inputs = dict(item.split("=", 1) for item in args.inputs)
    result = run_action(inputs, args.workdir.resolve(), path_first=args.path_first)
    for step in result.steps:
        print(f"== {step.name}: {step.outcome}" + (f" ({step.uses}, not run: {step.with_})" if step.uses else ""))
        sys.stdout.write(step.stdout)
        sys.stderr.write(step.stderr)
    print(f"== outputs: {result.outputs}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
