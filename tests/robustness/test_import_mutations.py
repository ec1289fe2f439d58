"""What import writes, replayci runs: recordings of ../shared/data (traffic-dev's cassettes and HAR
files, traces-dev's trace exports and eval logs) mutated — a list or an object made null, a key
deleted, a value of another type, list items dropped, repeated or reordered, text emptied —
fed through `replayci import`; every pack written passes `validate` and its recorded run has no
`error`. The default run mutates a few dozen recordings; `-m slow` thousands."""
from __future__ import annotations

import copy
import gzip
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from replayci.api import run as run_packs
from replayci.cli import cli
from replayci.core.memo import clear_caches


def _shared() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "traffic-dev").is_dir():
            return parent / "shared" / "data"
    return None


DATA = _shared()
pytestmark = pytest.mark.skipif(DATA is None, reason="the shared data sets are not here")
_YAML_LOAD = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_DUMP = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _sources() -> list[Path]:
    """Every recording of the two data sets, in a stable order."""
    traffic = DATA / "traffic-dev"
    files = sorted(p for p in traffic.rglob("*") if p.suffix in (".yaml", ".yml", ".json", ".har")
                   and p.name != "MANIFEST.json")
    traces = sorted(p for p in (DATA / "traces-dev").glob("*.json") if not p.name.endswith(".source.json"))
    return files + traces


# ----------------------------------------------------------------------------- mutations of a JSON tree


def _nodes(tree: Any, path: tuple = ()) -> list[tuple]:
    """The path of every node of *tree* (the root included)."""
    out = [path]
    if isinstance(tree, dict):
        for key, value in tree.items():
            out += _nodes(value, (*path, key))
    elif isinstance(tree, list):
        for n, value in enumerate(tree):
            out += _nodes(value, (*path, n))
    return out


def _get(tree: Any, path: tuple) -> Any:
    for step in path:
        tree = tree[step]
    return tree


OTHERS = [None, "", "x", 0, -1, 1.5, True, [], {}, [None], {"type": None}, "[]", "{}"]


def _mutate_once(tree: Any, rng: random.Random) -> Any:
    """*tree* with one node changed; a list or an object made null is chosen most often."""
    paths = [p for p in _nodes(tree) if p]
    if not paths:
        return tree
    containers = [p for p in paths if isinstance(_get(tree, p), (dict, list))]
    path = rng.choice(containers if containers and rng.random() < 0.35 else paths)
    parent, last = _get(tree, path[:-1]), path[-1]
    value = parent[last]
    kind = rng.randrange(7)
    if kind == 0 or (kind == 1 and isinstance(value, (dict, list))):
        parent[last] = None
    elif kind == 1 and isinstance(parent, dict):
        del parent[last]
    elif kind == 2 and isinstance(value, list) and value:
        value.pop(rng.randrange(len(value)))
    elif kind == 3 and isinstance(value, list) and value:
        value.insert(rng.randrange(len(value) + 1), copy.deepcopy(rng.choice(value)))
    elif kind == 4 and isinstance(value, list) and len(value) > 1:
        rng.shuffle(value)
    elif kind == 5 and isinstance(value, str):
        parent[last] = rng.choice(["", value[: len(value) // 2], value + value])
    else:
        parent[last] = copy.deepcopy(rng.choice(OTHERS))
    return tree


def _mutated_json(text: str, rng: random.Random, times: int) -> str | None:
    """A JSON body's text mutated *times*; None when it is no JSON (a stream, say)."""
    try:
        tree = json.loads(text)
    except ValueError:
        return None
    for _ in range(times):
        tree = _mutate_once(tree, rng)
    return json.dumps(tree)


def _mutated_body(body: Any, rng: random.Random) -> Any:
    """A cassette body (text, bytes, {string: ...}) with its JSON mutated, in the same form."""
    if isinstance(body, dict) and isinstance(body.get("string"), (str, bytes)):
        return {**body, "string": _mutated_body(body["string"], rng)}
    if isinstance(body, bytes):
        try:
            got = _mutated_json(body.decode("utf-8"), rng, rng.randint(1, 3))
        except UnicodeDecodeError:
            return body
        return body if got is None else got.encode()
    if isinstance(body, str):
        got = _mutated_json(body, rng, rng.randint(1, 3))
        return body if got is None else got
    return body


def _mutated_cassette(doc: Any, rng: random.Random) -> Any:
    for interaction in doc.get("interactions") or () if isinstance(doc, dict) else ():
        if not isinstance(interaction, dict):
            continue
        for part in ("request", "response"):
            side = interaction.get(part)
            if isinstance(side, dict) and "parsed_body" in side and rng.random() < 0.7:
                side["parsed_body"] = _mutate_once(side["parsed_body"], rng)
            elif isinstance(side, dict) and "body" in side and rng.random() < 0.7:
                side["body"] = _mutated_body(side["body"], rng)
    if rng.random() < 0.1:  # the recording's own structure, now and then
        doc = _mutate_once(doc, rng)
    return doc


def _mutated_har(doc: Any, rng: random.Random) -> Any:
    entries = (doc.get("log") or {}).get("entries") if isinstance(doc, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        for part, key in (("request", "postData"), ("response", "content")):
            holder = (entry.get(part) or {}).get(key) if isinstance(entry, dict) else None
            if isinstance(holder, dict) and isinstance(holder.get("text"), str) and rng.random() < 0.7:
                holder["text"] = _mutated_body(holder["text"], rng)
    if rng.random() < 0.1:
        doc = _mutate_once(doc, rng)
    return doc


def _mutated_trace(doc: Any, rng: random.Random) -> Any:
    """A trace export with its attribute values mutated (JSON strings inside them too)."""
    for _ in range(rng.randint(1, 4)):
        paths = [p for p in _nodes(doc) if p]
        strings = [p for p in paths if isinstance(_get(doc, p), str) and _get(doc, p)[:1] in "[{"]
        if strings and rng.random() < 0.5:
            path = rng.choice(strings)
            got = _mutated_json(_get(doc, path), rng, rng.randint(1, 2))
            if got is not None:
                _get(doc, path[:-1])[path[-1]] = got
                continue
        doc = _mutate_once(doc, rng)
    return doc


def _write_mutant(source: Path, target: Path, rng: random.Random) -> None:
    """*source* mutated into *target* (same name, same form)."""
    data = source.read_bytes()
    if source.suffix == ".gz":
        data = gzip.decompress(data)
    text = data.decode("utf-8")
    traces = source.parent.name == "traces-dev"
    if source.suffix in (".yaml", ".yml"):
        doc = _mutated_cassette(yaml.load(text, Loader=_YAML_LOAD), rng)  # noqa: S506 - the safe loader
        out = yaml.dump(doc, Dumper=_YAML_DUMP, allow_unicode=True).encode()
    else:
        doc = json.loads(text)
        mutate = _mutated_trace if traces else _mutated_har if source.suffix == ".har" else _mutated_cassette
        out = json.dumps(mutate(doc, rng)).encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(out)


# ----------------------------------------------------------------------------- the round


def _round(tmp: Path, sources: list[Path], seed: int) -> list[str]:
    """Mutants of *sources* imported into one pack, validated and run: what went wrong."""
    rng = random.Random(seed)
    src = tmp / f"src{seed}"
    for n, source in enumerate(sources):
        _write_mutant(source, src / f"{n:05d}-{source.parent.name}-{source.name}", rng)
    pack = tmp / f"pack{seed}"
    res = CliRunner().invoke(cli, ["import", str(src), "--pack", str(pack)], catch_exceptions=True)
    if res.exit_code != 0:
        return [f"import exited {res.exit_code}: {res.output[-2000:]}{res.exception!r}"]
    if not pack.exists():
        return []
    res = CliRunner().invoke(cli, ["validate", "--pack", str(pack)], catch_exceptions=True)
    if res.exit_code != 0:
        return [f"validate exited {res.exit_code}: {res.output[-3000:]}{res.exception!r}"]
    clear_caches()
    result = run_packs([str(pack)], provider="recorded", processes=1)
    return [f"{c.contract}/{c.case}: error: {c.reason}" for c in result.cases if c.status == "error"]


def _rounds(tmp: Path, count: int, per_round: int, seed: int) -> None:
    sources = _sources()
    assert len(sources) > 800  # 717 recordings and 161 trace samples
    rng = random.Random(seed)
    problems, done = [], 0
    while done < count:
        chosen = rng.sample(sources, min(per_round, count - done))
        problems += _round(tmp, chosen, rng.randrange(1 << 30))
        done += len(chosen)
    assert not problems, "\n".join(problems[:20])


def test_a_few_dozen_mutated_recordings_import_into_packs_that_validate_and_run(tmp_path):
    _rounds(tmp_path, 60, 30, seed=int(os.environ.get("REPLAYCI_MUTATION_SEED", "41")))


@pytest.mark.slow
def test_thousands_of_mutated_recordings_import_into_packs_that_validate_and_run(tmp_path):
    _rounds(tmp_path, 3000, 250, seed=int(os.environ.get("REPLAYCI_MUTATION_SEED", "4141")))
