"""pytest plugin: `pytest --replayci[=PACK]` makes each golden case a test item.

Items are named pack/contract/case, so `-k`, `-x` and `--junitxml` work on them; failures
read exactly as in the CLI.
"""
from __future__ import annotations

import fnmatch
import os

import pytest

from .core.provider_table import PROVIDERS

_NO_PACK = "<config>"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replayci", "replayci contract packs")
    group.addoption("--replayci", action="append", nargs="?", const=_NO_PACK, default=None,
                    metavar="PACK", dest="replayci",
                    help="Run replayci golden cases as tests: the packs of .replayci.yml, or PACK "
                         "(a directory), or one case as pack/contract/case, its node id (globs "
                         "allowed; pack/contract::case works too). Repeatable.")
    group.addoption("--replayci-provider", default=None, metavar="PROVIDER",
                    help=" | ".join(PROVIDERS) + " (default: recorded)")


class ReplayciError(Exception):
    """A case that could not be evaluated: reported by pytest as an error."""


class _Session:
    """Packs loaded once per pytest session; each item runs its own case."""

    def __init__(self, config: pytest.Config):
        # Loaded only when --replayci is given: the plugin is in every pytest session of a
        # project that installed replayci, and must cost those sessions nothing.
        from .api import load_settings_packs
        from .config import resolve

        here = config.invocation_params.dir
        given = [p for p in config.getoption("replayci") if p != _NO_PACK]
        self.cases = [p.removeprefix("::").replace("::", "/") for p in given if _is_case_id(p, here)]
        packs = tuple(p for p in given if not _is_case_id(p, here))
        self.settings = resolve({"packs": packs, "provider": config.getoption("replayci_provider")}, cwd=str(here))
        self.packs = load_settings_packs(self.settings)

    def wanted(self, key: tuple[str, str, str]) -> bool:
        """Whether the case is selected (every case when no case id was given)."""
        return not self.cases or any(fnmatch.fnmatchcase("/".join(key), c) for c in self.cases)

    def run(self, pack_id: str, contract: str, case: str):
        from .engine.runner import run  # only with --replayci (see _Session)

        pack = next(p for p in self.packs if p.pack_id == pack_id)
        settings = self.settings.with_(case_ids=frozenset({(pack_id, contract, case)}))
        cases = run(settings, packs=[pack])[1].cases
        # (a comparison runs the case once per target: the item is the first that did not pass)
        return next((c for c in cases if c.status != "pass"), cases[0])


def node_id(key: tuple[str, str, str]) -> str:
    """A case's pytest node id: pack/contract/case, the id replayci gives it everywhere."""
    return "/".join(key)


def _is_case_id(value: str, here) -> bool:
    """pack/contract/case (or its node id pack/contract::case) rather than a pack directory."""
    if "::" in value:
        return True
    return value.count("/") == 2 and not os.path.isdir(os.path.join(str(here), value))


class ReplayciItem(pytest.Item):
    def __init__(self, *, session_data: _Session, key: tuple[str, str, str], source: str, **kw):
        super().__init__(**kw)
        self.data = session_data
        self.key = key
        self.source = source
        self.result = None

    def setup(self) -> None:
        _junit_names(self)
        # Evaluated in setup so that an `error` (could not evaluate) shows as a pytest error.
        self.result = self.data.run(*self.key)
        if self.result.status == "error":
            raise ReplayciError(self.result.reason)

    def runtest(self) -> None:
        r = self.result
        if r.draft and r.status != "pass":
            pytest.xfail(f"draft contract (status: observed): {r.classification or r.reason}")
        if r.status == "skipped" or (r.status == "non_reproducible" and r.allowlisted):
            pytest.skip(r.reason or "skipped")
        if r.status != "pass":
            raise _CaseFailed(r)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (_CaseFailed, ReplayciError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        file, _, line = self.source.rpartition(":")
        return file, int(line) - 1 if line.isdigit() else None, "/".join(self.key)


def _junit_names(item: ReplayciItem) -> None:
    """--junitxml names a case as replayci's own JUnit does (classname pack.contract, name
    case), as pytest's record_xml_attribute would; without --junitxml, nothing."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # a pytest that moved it: pytest's own names (pack.contract.case) stay
        return
    xml = item.config.stash.get(xml_key, None)
    if xml is not None:
        reporter = xml.node_reporter(item.nodeid)
        reporter.add_attribute("classname", f"{item.key[0]}.{item.key[1]}")
        reporter.add_attribute("name", item.key[2])


class _CaseFailed(Exception):
    def __init__(self, result):
        from .report.terminal import case_lines  # only with --replayci (see _Session)

        super().__init__("\n".join(line.strip() for line in case_lines([result])))


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so those apply to our items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if not config.getoption("replayci"):
        return
    from .core.errors import ConfigError  # only with --replayci (see _Session)

    try:
        data = _Session(config)
    except ConfigError as exc:
        problems = "\n".join(f"  {p}" for p in exc.problems)
        raise pytest.UsageError(f"replayci: the packs have problems:\n{problems}") from None
    new = []
    for pack in data.packs:
        for contract in pack.contracts:
            for case in contract.cases:
                key = (pack.pack_id, contract.id, case.id)
                if not data.wanted(key):
                    continue
                new.append(ReplayciItem.from_parent(session, name="/".join(key), nodeid=node_id(key),
                                                    session_data=data, key=key, source=case.source))
    items.extend(new)
    # Counted as collected ("N tests collected" with --co), as a collector's items are.
    config.hook.pytest_collectreport(report=pytest.CollectReport("replayci", "passed", None, new))
