"""The package's layout rules: layers by stage, imports only pointing down, no cycles, short
functions, few top-level modules."""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import NamedTuple

import collector

PACKAGE = Path(__file__).resolve().parents[2] / "replayci"

# Lowest first: a module may import its own layer (without cycles) and the layers below it.
LAYERS = ("core", "formats", "checks", "pack", "config", "providers", "engine", "report", "api", "capture",
          "tools", "cli", "pytest_plugin", "__main__", "")
MAX_FUNCTION_LINES = 80
MAX_TOP_LEVEL_MODULES = 12


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


class _Import(NamedTuple):
    lineno: int
    end_lineno: int
    level: int | None  # None for `import x`, the dots' count for `from . import x`
    module: str | None
    names: tuple[str, ...]


class _Function(NamedTuple):
    name: str
    lineno: int
    start: int  # its first decorator's line, else its own
    end_lineno: int
    body_imports: tuple[_Import, ...]  # the import statements directly in its body


class _Parsed(NamedTuple):
    """What the layout rules look at in one module, from one parse and one walk."""

    lines: list[str]
    functions: tuple[_Function, ...]
    imports: tuple[_Import, ...]
    type_checking: frozenset[int]  # lines under `if TYPE_CHECKING:`


def _import(node: ast.Import | ast.ImportFrom) -> _Import:
    level = node.level if isinstance(node, ast.ImportFrom) else None
    module = node.module if isinstance(node, ast.ImportFrom) else None
    return _Import(node.lineno, node.end_lineno, level, module, tuple(a.name for a in node.names))


def _statements(tree: ast.Module):
    """Every statement in the tree, nested ones too. Functions, imports and `if`s are statements, and
    statements sit only in these statement lists: the walk skips the expressions, most of the tree."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, ()):
                stack.extend(child.body if isinstance(child, (ast.excepthandler, ast.match_case)) else (child,))


def _parse(path: Path) -> _Parsed:
    lines = path.read_text("utf-8").splitlines()
    functions, imports, type_checking = [], [], set()
    for node in _statements(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            body = tuple(_import(n) for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom)))
            functions.append(_Function(node.name, node.lineno, start, node.end_lineno, body))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(_import(node))
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                type_checking.update(range(child.lineno, child.end_lineno + 1))
    return _Parsed(lines, tuple(functions), tuple(imports), frozenset(type_checking))


@functools.cache
def _parsed() -> dict[Path, _Parsed]:
    """Every module of the package parsed once per test process and shared by the rules below; the
    trees are dropped once read (kept, they would slow every later garbage collection)."""
    with collector.paused():  # (hundreds of thousands of nodes, none of them garbage)
        return {path: _parse(path) for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[tuple[str, int]]:
    """(imported replayci module, line) for every import in the file, inside functions too."""
    parsed = _parsed()[path]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in parsed.imports:
        if node.lineno in parsed.type_checking:
            continue
        if node.level is not None:
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            for alias in node.names:
                full = f"{target}.{alias}"
                found.add((full if full in modules else target, node.lineno))
        else:
            found.update((alias, node.lineno) for alias in node.names)
    return {(t, line) for t, line in found if t in modules and t != name}


def _layer(name: str) -> int:
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return LAYERS.index(top) if top in LAYERS else LAYERS.index("")


@functools.cache
def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_imports_only_point_down():
    upward = [f"{name} -> {target} (line {line})" for name, targets in _graph().items()
              for target, line in targets
              if _layer(target) > _layer(name) and target != "replayci"]
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = {name: {t for t, _ in targets} for name, targets in _graph().items()}
    graph = {name: {t for t in targets if t != "replayci"} for name, targets in graph.items()}
    # a package's __init__ importing its own submodules is its public face, not a cycle
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)


def test_no_function_is_longer_than_the_limit():
    long = []
    for path, parsed in _parsed().items():
        for node in parsed.functions:
            if node.end_lineno - node.start + 1 > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert not long, "\n".join(long)


def test_few_modules_sit_directly_in_the_package():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_document_users_lack_is_cited():
    import re

    cited = [f"{p.relative_to(PACKAGE.parent)}:{n}" for p in PACKAGE.rglob("*.py")
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
             if re.search(r"\bSPEC(\.md)?\b(?!_)|\bissue #?\d+", line)]
    assert not cited, cited


def test_every_import_inside_a_function_says_why():
    """Imports inside functions are for start-up speed only, and each block says so."""
    silent = []
    for path, parsed in _parsed().items():
        lines = parsed.lines
        for fn in parsed.functions:
            blocks: list[list[_Import]] = []
            for node in fn.body_imports:
                if blocks and node.lineno == blocks[-1][-1].end_lineno + 1:
                    blocks[-1].append(node)
                else:
                    blocks.append([node])
            for block in blocks:
                text = lines[block[0].lineno - 2: block[-1].end_lineno]
                if not any("#" in line for line in text):
                    silent.append(f"{path.relative_to(PACKAGE.parent)}:{block[0].lineno}")
    assert not silent, "\n".join(silent)


def test_no_test_prints_past_pytests_capture():
    """The README's `python -m pytest -q` shows dots and failures only: a test's figures go to
    its captured output (shown with -s or when it fails) or to a benchmark under bench/."""
    tests = PACKAGE.parent / "tests"
    escapes = ("capsys.disabled(", "capfd.disabled(", "sys.__stdout__", "sys.__stderr__")
    # support/warm.py sets up a forked command's own standard streams, as the interpreter does: no test output.
    found = [f"{path.relative_to(tests.parent)}:{n}" for path in sorted(tests.rglob("*.py")) if path.name != "warm.py"
             for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if any(e in line for e in escapes) and "escapes = " not in line]
    assert found == []


def test_no_file_holds_an_unresolved_merge():
    """A conflict left in a document or a module is caught here, not by a reader."""
    import subprocess  # only here: git lists the project's own files, whatever lies beside them

    root = PACKAGE.parent
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=False)
    paths = ([root / name for name in listed.stdout.splitlines()] if listed.returncode == 0
             else [*root.glob("*.md"), *root.rglob("replayci/**/*.py"), *root.rglob("docs/**/*.md")])
    found = []
    for path in paths:
        if path.suffix not in {".py", ".md", ".yml", ".yaml", ".toml", ".j2", ".txt", ".cfg"} or not path.is_file():
            continue
        for n, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "=======":
                found.append(f"{path.relative_to(root)}:{n}")
    assert not found, found
