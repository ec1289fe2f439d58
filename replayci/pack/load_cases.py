"""Golden cases: each case mapping, its fixture file (inside the pack), its own assertions and
its expected calls."""
from __future__ import annotations

import os
import stat
from typing import Any

from ..core.errors import did_you_mean
from ..core.paths import display_path, inside
from . import vocabulary as spec
from .load_invariants import compile_invariants
from .load_problems import Built, mapping_problems
from .model import Case, ExpectedCall
from .sources import Located

# A case id names its recording file; most file systems allow 255 bytes a name, and the
# contract's name and the extension come on top.
MAX_CASE_ID_BYTES = 200


def _folder_inside(root: str, folder: str, cache: dict) -> bool:
    """inside() for a directory, answered once per directory and load."""
    key = ("inside", root, folder)
    found = cache.get(key)
    if found is None:
        found = cache[key] = inside(root, folder, cache)
    return found


def _file_kind(path: str) -> str | None:
    """"file" for a regular file, "link" for a symlink to one, None for anything else (one
    lstat for the common case)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode) and os.path.isfile(path):
        return "link"
    return None


def _fixture_folder(pack: dict, base: str, head: str) -> tuple[str, bool]:
    """(the folder *head* names below *base*, normalized; whether it leaves the pack), once per
    folder and load: os.path.normpath(os.path.join(base, head + "/" + name)) is this folder
    joined with any plain file name."""
    key = ("fixture folder", base, head)
    found = pack["real"].get(key)
    if found is None:
        folder = os.path.normpath(os.path.join(base, head))
        leaves = ".." in head.split("/") or not _folder_inside(pack["dir"], folder, pack["real"])
        found = pack["real"][key] = (folder, leaves)
    return found


def _display_in(folder: str, name: str, cache: dict) -> str:
    key = ("display", folder)
    shown = cache.get(key)
    if shown is None:
        shown = cache[key] = display_path(folder)
    return os.path.join(shown, name) if shown != "." else name


def _listing(folder: str, cache: dict) -> dict[str, str | None]:
    """The names in *folder*: "file" for a regular file, "?" for a symlink, None for anything
    else (from the directory entries: no stat per fixture)."""
    key = ("listing", folder)
    names = cache.get(key)
    if names is None:
        names = {}
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    names[entry.name] = "file" if entry.is_file(follow_symlinks=False) else \
                        "?" if entry.is_symlink() else None
        except OSError:
            names = {}
        cache[key] = names
    return names


def build_case(doc: Located, path: tuple, raw: Any, pack: dict, seen: dict) -> Built[Case]:
    """One golden case, or its problems; *seen* maps the case ids met so far to their lines."""
    problems = mapping_problems(doc, path, raw, spec.CASE_KEYS, spec.CASE_REQUIRED)
    if not isinstance(raw, dict):
        return Built(None, tuple(problems))
    cid, ref = raw.get("id"), raw.get("input_ref")
    if not isinstance(cid, str) or not isinstance(ref, str):
        return Built(None, tuple(problems))
    if cid in seen:
        problems.append(doc.problem(path + ("id",), f"duplicate case id '{cid}' (first at line {seen[cid]})"))
        return Built(None, tuple(problems))
    if len(cid.encode("utf-8", "surrogatepass")) > MAX_CASE_ID_BYTES:
        problems.append(doc.problem(path + ("id",), f"case id is {len(cid.encode('utf-8', 'surrogatepass'))} "
                                    f"bytes long; at most {MAX_CASE_ID_BYTES} (recordings are files named after it)"))
        return Built(None, tuple(problems))
    seen[cid] = doc.at(path + ("id",))[0]
    expect_ok = raw.get("expect_ok", True)
    expected_error = raw.get("expected_error")
    for key in ("expected_error", "expected_failure", "expected_fingerprint"):
        if raw.get(key) is not None and expect_ok is True:
            problems.append(doc.problem(path + (key,), f"{key} is for expect_ok: false cases"))
    found = _fixture_file(doc, path + ("input_ref",), ref, pack)
    problems += found.problems
    if found.value is None:
        return Built(None, tuple(problems))
    fixture, folder, name = found.value
    modes = raw.get("provider_modes")
    assertions = _case_assertions(doc, path + ("assertions",), raw.get("assertions"))
    matchers = _failure_matchers(doc, path + ("expected_failure",), raw.get("expected_failure"))
    return Built(Case(
        **assertions.value,
        id=cid,
        input_ref=ref,
        fixture_path=fixture,
        fixture_display=_display_in(folder, name, pack["real"]),
        expect_ok=bool(expect_ok),
        expected_error=expected_error,
        expected_failure=matchers.value,
        expected_fingerprint=raw.get("expected_fingerprint"),
        provider_modes=tuple(modes) if isinstance(modes, list) else None,
        category=raw.get("category"),
        tags=tuple(raw["tags"]) if isinstance(raw.get("tags"), list) else (),
        description=raw.get("description"),
        source=doc.source(path),
    ), (*problems, *assertions.problems, *matchers.problems))


def _failure_matchers(doc: Located, path: tuple, value: Any) -> Built[tuple[dict, ...]]:
    """A negative case's expected_failure: one matcher or a list, each naming some check."""
    if value is None:
        return Built(())
    listed = value if isinstance(value, list) else [value]
    where = (lambda i: path + (i,)) if isinstance(value, list) else (lambda i: path)
    out, problems = [], []
    for i, m in enumerate(listed):
        problems += mapping_problems(doc, where(i), m, spec.FAILURE_MATCHER_KEYS)
        if isinstance(m, dict):
            if not m:
                problems.append(doc.problem(where(i), "expected one of " + ", ".join(spec.FAILURE_MATCHER_KEYS)))
            out.append(m)
    return Built(tuple(out), tuple(problems))


def _case_assertions(doc: Located, path: tuple, raw: Any) -> Built[dict]:
    """A golden case's own invariants and expected calls (its contract's are added at run)."""
    if not isinstance(raw, dict):
        return Built({})  # none, or reported by the case's mapping check
    built = {"output_invariants": compile_invariants(doc, path + ("output_invariants",), raw.get("output_invariants")),
             "input_invariants": compile_invariants(doc, path + ("input_invariants",), raw.get("input_invariants")),
             "expected_tool_calls": expected_calls(doc, raw.get("expected_tool_calls"), doc.value.get("tool"),
                                                   path + ("expected_tool_calls",))}
    return Built({k: b.value for k, b in built.items()}, tuple(p for b in built.values() for p in b.problems))


def _fixture_file(doc: Located, where: tuple, ref: str, pack: dict) -> Built[tuple[str, str, str]]:
    """(path, folder, file name) of the fixture a case's input_ref names, or None when it is
    missing or leaves the pack (with its problem, unless its directory was reported already)."""
    if os.path.isabs(ref) or ref.startswith(("/", "\\")):
        return Built.refused(doc, where, f"input_ref {ref!r} must be relative to the golden directory")
    # `negative/...` refs go to the negative directory.
    if ref.startswith("negative/") or ref.startswith("negative\\"):
        base, rel = pack["negative_golden_dir"], ref.split("/", 1)[1] if "/" in ref else ref.split("\\", 1)[1]
    else:
        base, rel = pack["golden_dir"], ref
    if base in pack.get("bad_dirs", ()):
        return Built(None)
    real = pack["real"]
    head, _, name = rel.rpartition("/")
    if "\\" in ref or name in ("", ".", ".."):  # rare: the whole path normalized
        fixture = os.path.normpath(os.path.join(base, rel))
        folder, name = os.path.split(fixture)
        leaves = ".." in ref.replace("\\", "/").split("/") or not _folder_inside(pack["dir"], folder or ".", real)
    else:  # a file name in a folder: the folder's answers are shared by the fixtures in it
        folder, leaves = _fixture_folder(pack, base, head)
        fixture = os.path.join(folder, name)
    if leaves:
        return Built.refused(doc, where, f"input_ref {ref!r} leaves the pack directory")
    kind = _listing(folder, real).get(name)
    if kind == "?":  # a symlink: to a regular file?
        kind = _file_kind(fixture)
    if kind is None:
        hint = ""
        if os.path.isdir(folder):
            hint = did_you_mean(name, os.listdir(folder))
        return Built.refused(doc, where, f"fixture {display_path(fixture)} does not exist{hint}")
    if kind == "link" and not inside(pack["dir"], fixture, real):
        return Built.refused(doc, where, f"input_ref {ref!r} is a link that leaves the pack")
    return Built((fixture, folder, name))


def expected_calls(doc: Located, entries: Any, tool: Any,
                   where: tuple = ("expected_tool_calls",)) -> Built[tuple[ExpectedCall, ...]]:
    """The expected_tool_calls at *where*, each with its compiled argument invariants, and the
    problems of the others."""
    if not isinstance(entries, list):
        return Built(())
    calls, problems = [], []
    for i, entry in enumerate(entries):
        p = where + (i,)
        problems += mapping_problems(doc, p, entry, spec.EXPECTED_CALL_KEYS, ("name",))
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        invs = compile_invariants(doc, p + ("argument_invariants",), entry.get("argument_invariants"))
        problems += invs.problems
        calls.append(ExpectedCall(entry["name"], invs.value, doc.source(p)))
    if tool not in (None, "multi_tool_call"):
        for c in calls:
            if c.name != tool:
                problems.append(doc.problem(where, f"expected call '{c.name}' differs from tool '{tool}'; "
                                            "use tool: multi_tool_call for several tools"))
                break
    return Built(tuple(calls), tuple(problems))
