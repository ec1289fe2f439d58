"""The formats package imports no SDK and does nothing at import time."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import replayci.formats as formats

PACKAGE = Path(formats.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))
FORBIDDEN = ("openai", "anthropic", "google", "boto3", "botocore", "cohere", "ollama")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_is_self_contained(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    first = tree.body[1] if isinstance(tree.body[0], ast.Expr) else tree.body[0]
    assert isinstance(first, ast.ImportFrom) and first.module == "__future__"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] in FORBIDDEN for a in node.names), ast.dump(node)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            assert (node.module or "").split(".")[0] not in FORBIDDEN, node.module
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno - node.lineno < 80, f"{path.name}:{node.name} is too long"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_level_holds_definitions_only(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)
    for node in tree.body:
        assert isinstance(node, allowed), f"{path.name}:{node.lineno}"
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Constant), f"{path.name}:{node.lineno}: a call at import time"


def test_every_wire_format_has_the_whole_interface():
    needed = ("NAME", "STREAM_END", "detect", "normalize", "detect_stream", "read_stream", "detect_request",
              "to_neutral", "from_neutral")
    for module in formats.WIRE_FORMATS:
        assert all(hasattr(module, name) for name in needed), module.NAME
