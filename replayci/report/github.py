"""GitHub Actions: the Markdown summary on the step summary page, ::error annotations in the log."""
from __future__ import annotations

import os
from typing import TextIO

from .text import location


def wanted() -> bool:
    """Whether the run is in GitHub Actions (or has a step summary file to append to)."""
    return bool(os.environ.get("GITHUB_STEP_SUMMARY")) or os.environ.get("GITHUB_ACTIONS") == "true"


def publish(report: dict, *, annotations_to: TextIO) -> None:
    """Append the summary to $GITHUB_STEP_SUMMARY; in Actions, write an annotation per failure."""
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        from . import markdown  # why: only for a step summary; every run asks wanted()

        try:
            with open(summary_file, "a", encoding="utf-8") as fh:
                fh.write(markdown.build(report))
        except OSError as exc:  # say which setting points at it: the path alone puzzles in a CI log
            raise OSError(exc.errno, exc.strerror, f"{summary_file} (GITHUB_STEP_SUMMARY)") from None
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in annotations(report):
            annotations_to.write(line + "\n")


def _escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def annotations(report: dict) -> list[str]:
    """`::error file=...,line=...,title=...::message` for every failure (GitHub Actions)."""
    out = []
    for c in report["cases"]:
        failing = c["status"] in ("fail", "error") or (c["status"] == "non_reproducible"
                                                         and not c.get("allowlisted"))
        if not failing or c.get("draft"):
            continue
        file, _, line = location(c).rpartition(":")
        title = c.get("classification") or c.get("reason") or c["status"]
        if c["status"] == "non_reproducible":
            title = f"non_reproducible: {c.get('reason')}"
        message = f"{c['pack']}/{c['contract']}/{c['case']}: "
        if c["status"] == "fail" and c.get("failures"):
            message += c["failures"][0]["message"]
        else:
            message += c.get("message") or c.get("reason") or c["status"]
        message += f" [{c.get('fingerprint')}]"
        out.append(f"::error file={_escape(file, prop=True)},line={line or 1},"
                   f"title={_escape(str(title), prop=True)}::{_escape(message)}")
    return out
