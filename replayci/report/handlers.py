"""The reporters as handlers of a run's events: each report file is written when the run
finishes, from the one JSON report of its result (built once, when a reporter first asks for
it: a run no reporter reads builds none). `reporters(files)` registers them, in the order of
the writer table; the CLI and `replayci.run(handlers=...)` attach the same ones, and `merge`
and `regrade`, which have a report and no run, call the writers directly."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO

from ..engine.events import Event, Handler, RunFinished
from . import github, json_report
from .writers import WRITERS, writer

if TYPE_CHECKING:
    from .spool import CaseSpool


class RunReport(Handler):
    """The JSON report of the run that finished, for the reporters after it (*spool*: the
    spool that wrote its case lines as cases finished; *extra*: keys added to the report)."""

    def __init__(self, *, spool: CaseSpool | None = None, extra: Callable[[], dict | None] | None = None) -> None:
        self.spool, self.extra = spool, extra
        self.finished: RunFinished | None = None
        self._report: dict | None = None
        self._whole = False

    def handle(self, event: Event) -> None:
        if type(event) is RunFinished:
            self.finished, self._report, self._whole = event, None, self.spool is None

    def report(self) -> dict:
        """The report, its cases left empty when the spool holds their lines."""
        if self._report is None:
            finished = self.finished
            if finished is None:
                raise RuntimeError("no run has finished: a reporter reads the report of a finished run")
            self._report = json_report.build(finished.result, finished.settings, cases=self.spool is None)
            self._report.update((self.extra and self.extra()) or {})
        return self._report

    def whole(self) -> dict:
        """The report with its cases (when spooled, the light results give them: the reports
        other than the JSON one need no responses)."""
        report = self.report()
        if not self._whole:
            report["cases"] = [c.to_dict() for c in self.finished.result.cases]
            self._whole = True
        return report

    def write_json(self, path: str) -> None:
        """The JSON report: its case lines from the spool (which then goes) when there is one."""
        if self.spool is None:
            writer("json")(self.report(), path)
            return
        json_report.write(self.report(), path, self.spool.case_lines(self.finished.result.cases))
        self.spool.close()  # its temporary files go now


class ReportFile(Handler):
    """One report file (format *name*, at *path*), written when the run finishes."""

    def __init__(self, name: str, path: str, shared: RunReport) -> None:
        self.name, self.path, self.shared = name, path, shared

    def handle(self, event: Event) -> None:
        if type(event) is not RunFinished:
            return
        if self.name == "json":
            self.shared.write_json(self.path)
        else:
            writer(self.name)(self.shared.whole(), self.path)


class GitHubOutput(Handler):
    """The step summary and annotations, when the run is a GitHub Actions step."""

    def __init__(self, shared: RunReport, *, annotations_to: TextIO) -> None:
        self.shared, self.stream = shared, annotations_to

    def handle(self, event: Event) -> None:
        if type(event) is RunFinished and github.wanted():
            github.publish(self.shared.whole(), annotations_to=self.stream)


def reporters(files: Mapping[str, str | None], *, spool: CaseSpool | None = None,
              extra: Callable[[], dict | None] | None = None) -> list[Handler]:
    """The handlers writing a run's report files (*files*: format -> path, as the `reports:`
    keys and the report flags give them), the shared report first; with *spool* (a handler of
    the same run), the JSON report's case lines come from it."""
    shared = RunReport(spool=spool, extra=extra)
    return [shared, *(ReportFile(name, files[name], shared) for name in WRITERS if files.get(name))]
