"""Problems found in packs, configs and flags, reported together with their location."""
from __future__ import annotations

from collections.abc import Iterable

from .records import record


@record
class Problem:
    """One thing wrong with a user's file: where, which key, and what was expected."""

    file: str
    line: int | None
    column: int | None
    message: str
    key: str = ""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f"{self.key}: " if self.key else ""
        return f"{where}: {key}{self.message}"


class ConfigError(Exception):
    """A pack, config or flag is wrong; carries every problem found. Exit code 2."""

    def __init__(self, problems: Iterable[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem("replayci", None, None, problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(dict.fromkeys(problems))  # one line per distinct problem
        super().__init__("\n".join(str(p) for p in self.problems))


class CaseError(Exception):
    """A single case could not be evaluated (the outcome `error`, not a verdict)."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``; did you mean 'x'?`` suffix, or '' when nothing is close."""
    import difflib  # why: asked only when something is misspelt, so a clean start skips it

    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def one_of(choices: Iterable[str]) -> str:
    """'a', 'b' or 'c'."""
    items = [f"'{c}'" for c in choices]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]
