"""`replayci init`: a config and a starter pack that passes at once; never overwrites."""
from __future__ import annotations

import os
import shutil
from importlib import resources

from ..core.errors import ConfigError, Problem


def _template_files() -> list[tuple[str, object]]:
    """(relative target path, template resource) for every file init writes."""
    root = resources.files("replayci.tools") / "templates"
    out = [(".replayci.yml", root / "replayci.yml")]

    def walk(node, rel: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            target = f"{rel}/{child.name}"
            if child.is_dir():
                walk(child, target)
            else:
                out.append((target, child))

    walk(root / "starter", "packs/starter")
    return out


def init_project(directory: str) -> list[str]:
    """Write the starter files under *directory*; refuse if any of them exists."""
    files = _template_files()
    existing = [rel for rel, _ in files if os.path.lexists(os.path.join(directory, rel))]
    if existing:
        raise ConfigError([Problem(os.path.join(directory, rel), None, None,
                                   "already exists; replayci init never overwrites") for rel in existing])
    written = []
    for rel, resource in files:
        target = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        with resources.as_file(resource) as src:
            shutil.copyfile(src, target)
        written.append(os.path.normpath(target))
    return written
