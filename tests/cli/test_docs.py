"""The README and docs/: a landing page that stays short, links that work on GitHub and on the
site, every page in the site's navigation, and every example checked: the runnable ones run as
written, the others are parsed (JSON, YAML, Python) and their replayci command lines use
options that exist."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import warmed
import yaml
from builders import REPO, TEMPLATES
from jsonschema import Draft202012Validator

from replayci.cli.main import COMMANDS, cli
from replayci.pack import schema_gen

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
SETUP = [  # the README's first lines: CI and contributors run them as written
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && replayci"
    "              # run the example packs offline",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && python -m pytest -q"
    "   # run the tests",
]


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    text: str

    def __repr__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    found, lines, i = [], page.read_text("utf-8").splitlines(), 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)", lines[i])
        if m:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            indent = len(m.group(1))
            found.append(Block(page, i + 1, m.group(2), "\n".join(x[indent:] for x in lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def _of(lang: str) -> list[Block]:
    return [b for b in ALL if b.lang == lang]


def prose(page: Path) -> str:
    """The page as a reader sees it: without code (fenced blocks, indented blocks, inline code) or
    comments."""
    text = re.sub(r"^(\s*)```.*?^\1```", "", page.read_text("utf-8"), flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"(?m)^(?: {4}|\t).*$", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def slugs(page: Path) -> set[str]:
    """The anchors GitHub (and the site, configured alike) gives the page's headings."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"(?m)^#{1,6} (.+)$", re.sub(r"(?ms)^```.*?^```", "", page.read_text("utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        yield slug if n == 0 else f"{slug}-{n}"


def test_the_readme_is_a_landing_page():
    text = (REPO / "README.md").read_text("utf-8")
    lines = text.splitlines()
    assert len(lines) <= 300
    assert lines[:6] == ["# replayci", "", "```bash", *SETUP, "```"]
    headings = re.findall(r"(?m)^## (.+)$", text)
    assert headings == ["A five-minute tour", "What it does", "Documentation"]
    tour = text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    assert [re.sub(r"\*\*\d\. |\*\*", "", s).split(".")[0] for s in re.findall(r"(?m)^\*\*\d\. [^*]+\*\*", tour)] == [
        "Start a project and run it", "Read the contract", "Record your own traffic", "Gate every pull request"]


def check_links(page: Path, root: Path = REPO) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}: no such file"
        assert root in dest.parents, f"{page.name}: {target} leads out of the repository"
        if anchor:
            assert anchor in set(slugs(dest)), f"{page.name}: {target}: no such heading in {dest.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_to_a_file_and_a_heading(page):
    check_links(page)


def test_a_broken_link_or_heading_is_noticed(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## The `--repeat N` flag\n\n[b](b.md) [c](a.md#nothing)\n")
    assert set(slugs(tmp_path / "a.md")) == {"a", "the---repeat-n-flag"}
    with pytest.raises(AssertionError, match="b.md: no such file"):
        check_links(tmp_path / "a.md", tmp_path)
    (tmp_path / "b.md").write_text("# B\n")
    with pytest.raises(AssertionError, match="a.md#nothing: no such heading"):
        check_links(tmp_path / "a.md", tmp_path)
    (tmp_path / "a.md").write_text("# A\n\n[up](../x.md) [code](`b.md`)\n")
    (tmp_path.parent / "x.md").write_text("# X\n")
    with pytest.raises(AssertionError, match="leads out of the repository"):
        check_links(tmp_path / "a.md", tmp_path)


def _mkdocs() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    return yaml.load((REPO / "mkdocs.yml").read_text("utf-8"), Loader=Loader)


def _nav_pages(nav) -> list[str]:
    out = []
    for entry in nav:
        for value in entry.values():
            out.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return out


def test_every_page_is_in_the_navigation_and_the_index():
    config = _mkdocs()
    nav = _nav_pages(config["nav"])
    assert len(nav) == len(set(nav))
    assert sorted(nav) == sorted(p.name for p in DOCS.glob("*.md"))
    assert config["strict"] is True and config["theme"]["name"] == "material"
    assert config["validation"]["nav"]["omitted_files"] == "warn" and config["validation"]["links"]["anchors"] == "warn"
    index = prose(DOCS / "README.md")
    for name in nav:
        assert name == "README.md" or f"]({name})" in index, f"docs/README.md does not link {name}"


def test_json_examples_parse():
    """As written, or as the members of an object shown alone; `...` stands for parts left out."""
    assert len(_of("json")) >= 15
    for block in _of("json"):
        text = re.sub(r",\s*\.\.\.(?=\s*[}\]])", "", block.text.replace("[...]", "[]").replace("{...}", "{}"))
        try:
            json.loads(text)
        except ValueError:
            json.loads("{" + text + "}")  # the members of an object, shown alone


def _yaml(block: Block):
    """The block's YAML; an indented `...` line stands for entries left out."""
    return yaml.safe_load(re.sub(r"(?m)^[ \t]+\.\.\.[ \t]*\n", "", block.text))


def test_yaml_examples_parse_and_complete_files_are_valid():
    contract = Draft202012Validator(schema_gen.build("contract"))
    checked = 0
    for block in _of("yaml"):
        data = _yaml(block)
        if isinstance(data, dict) and "golden_cases" in data:
            errors = [e.message for e in contract.iter_errors(data)]
            assert not errors, (block, errors)
            checked += 1
    assert checked >= 5


def _actions(node):
    if isinstance(node, dict):
        if str(node.get("uses", "")).startswith("replayci/replayci@"):
            yield node
        for value in node.values():
            yield from _actions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _actions(value)


def test_workflows_give_the_action_only_inputs_it_has():
    inputs = set(yaml.safe_load((REPO / "action.yml").read_text("utf-8"))["inputs"])
    uses = [(b, step) for b in _of("yaml") for step in _actions(_yaml(b))]
    assert len(uses) >= 3
    for block, step in uses:
        assert set(step.get("with") or {}) <= inputs, (block, step)
        assert re.fullmatch(r"replayci/replayci@v\d+\.\d+\.\d+", step["uses"]), block


def test_python_examples_compile():
    assert len(_of("python")) >= 3
    for block in _of("python"):
        compile(block.text, repr(block), "exec")


def _options(name: str) -> set[str]:
    command = cli.get_command(click.Context(cli), name)
    return {opt for p in command.params if isinstance(p, click.Option) for opt in (*p.opts, *p.secondary_opts)} | {
        "-h", "--help"}


def _command_lines(block: Block):
    for line in block.text.replace("\\\n", " ").splitlines():
        if block.lang == "console" and not line.startswith("$ "):
            continue  # a transcript: what follows a prompt is a command, the rest its output
        line = re.sub(r"^\$ ", "", line.strip())
        for segment in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError:
                words = segment.split()
            while words and re.match(r"^\w+=", words[0]):
                words = words[1:]
            if words and words[0] == "replayci":
                yield words[1:]




def test_command_lines_use_options_that_exist():
    checked = 0
    for block in _of("bash") + _of("console"):
        for args in _command_lines(block):
            if args[:1] == ["--version"]:
                continue
            assert not args or args[0].startswith("-") or args[0] in COMMANDS, f"{block}: no command {args[0]}"
            name = args[0] if args and args[0] in COMMANDS else "run"
            words = args[1:] if args and args[0] in COMMANDS else args
            words = words[:words.index("--")] if "--" in words else words
            known = _options(name)
            for word in words:
                if re.match(r"^--?[a-zA-Z]", word):
                    assert word.split("=", 1)[0] in known, f"{block}: replayci {name} has no option {word}"
            checked += 1
    assert checked >= 30


def _synopses(block: Block):
    """(command, text) of each `replayci ...` line of a plain block (a synopsis, a transcript), and
    of the `  [...]` lines continuing it; the text stops at `--` and at a description."""
    command = None
    for line in block.text.splitlines():
        m = re.match(r"^(?:\$ )?replayci(?: (\[run\]|[a-z]+)\b)?(.*)$", line)
        if m:
            name = (m.group(1) or "run").strip("[]")
            command = name if name in COMMANDS or name == "run" else None
            text = m.group(2)
        elif command and re.match(r"^\s+\[", line):
            text = line
        else:
            command = None
            continue
        if command:
            yield command, re.split(r" -- | {3,}", text.strip())[0]


def test_synopses_use_options_that_exist():
    checked = 0
    for block in _of(""):
        for command, text in _synopses(block):
            for word in re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", text):
                assert word in _options(command), f"{block}: replayci {command} has no option {word}"
                checked += 1
    assert checked >= 30


def test_an_option_that_does_not_exist_is_noticed():
    global ALL
    saved = ALL
    try:
        ALL = [Block(REPO / "README.md", 1, "bash", "replayci --provder openai\n")]
        with pytest.raises(AssertionError, match="replayci run has no option --provder"):
            test_command_lines_use_options_that_exist()
        ALL = [Block(REPO / "README.md", 1, "bash", "replayci valdate\n")]
        with pytest.raises(AssertionError, match="no command valdate"):
            test_command_lines_use_options_that_exist()
        ALL = [Block(REPO / "README.md", 1, "", "replayci [run] [--pack DIR]\n         [--jobz N]\n")]
        with pytest.raises(AssertionError, match="replayci run has no option --jobz"):
            test_synopses_use_options_that_exist()
    finally:
        ALL = saved


def _run_block(block: Block, cwd: Path) -> str:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "NO_COLOR": "1", "HOME": str(cwd)}
    out = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (block, out.stdout, out.stderr)
    return out.stdout


def _shown_output(block: Block) -> list[str]:
    """The lines of the plain block that follows `block` (what the page says it prints)."""
    following = [b for b in ALL if b.page == block.page and b.line > block.line]
    assert following and following[0].lang == "", block
    return _stable(following[0].text)


def _stable(text: str) -> list[str]:
    return [re.sub(r" · [\d.]+ s$", "", line.rstrip()) for line in text.splitlines() if line.strip()]


def test_the_tour_and_getting_started_run_as_written(tmp_path):
    """Every shell block of the README's tour and of docs/getting-started.md that needs no key and
    installs nothing runs, in order, in a new directory; the output the page shows is printed."""
    runnable = [b for b in _of("bash") if b.page.name in ("README.md", "getting-started.md")
                and "pip install" not in b.text and "API_KEY" not in b.text and "--provider openai" not in b.text]
    assert [(b.page.name, b.text.split()[:2]) for b in runnable] == [
        ("README.md", ["replayci", "init"]), ("getting-started.md", ["replayci", "init"]),
        ("getting-started.md", ["replayci", "validate"]), ("getting-started.md", ["sed", "-i.bak"])]
    for page in ("README.md", "getting-started.md"):
        project = tmp_path / page
        project.mkdir()
        for block in (b for b in runnable if b.page.name == page):
            out = _run_block(block, project)
            if block.text.startswith("replayci init"):
                assert _stable(out)[-len(_shown_output(block)):] == _shown_output(block)
            if block.text.startswith("sed"):
                assert "invariant_violation" in out and out.rstrip().endswith("exit 1")
        contract = project / "packs" / "starter" / "contracts" / "get_weather.yaml"
        assert contract.read_bytes() == (TEMPLATES / "starter" / "contracts" / "get_weather.yaml").read_bytes()


def test_the_readme_contract_runs_against_the_starter_fixtures(tmp_path):
    text = (REPO / "README.md").read_text("utf-8")
    (block,) = [b for b in _of("yaml") if b.page.name == "README.md" and b.text.startswith("tool:")]
    shutil.copytree(TEMPLATES / "starter", tmp_path / "packs" / "starter")
    (tmp_path / "packs" / "starter" / "contracts" / "get_weather.yaml").write_text(block.text, "utf-8")
    out = subprocess.run([*warmed.cli(), "--json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [(c["case"], c["status"]) for c in json.loads(out.stdout)["cases"]] == [
        ("tool_call_success", "pass"), ("wrong_tool", "pass")]
    assert "golden_cases" in text


def test_the_changelog_keeps_a_changelog_form():
    from replayci import __version__

    text = (REPO / "CHANGELOG.md").read_text("utf-8")
    releases = re.findall(r"(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text)
    assert releases[0] == ("Unreleased", "") and all(date for _, date in releases[1:])
    assert releases[1][0] == __version__  # the latest release is the package's version
    assert [d for _, d in releases[1:]] == sorted((d for _, d in releases[1:]), reverse=True)
    kinds = set(re.findall(r"(?m)^### (.+)$", text))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
    for name, _ in releases:
        assert re.search(rf"(?m)^\[{re.escape(name)}\]: https://", text), f"no link for [{name}]"
