"""The HTML report: one self-contained page (no network) built from JSON report dicts.

Everything a model or a fixture wrote is untrusted. The page never puts it into markup
unescaped: the server-side parts are rendered by Jinja with autoescape on, and the cases
travel as JSON inside a ``<script type="application/json">`` block (with ``<``, ``>``, ``&``
and the JavaScript line separators written as ``\\uXXXX``) that the page's script reads and
renders through ``textContent`` only. A Content-Security-Policy pinned to the hash of the
page's one script forbids any other script, any network request and ``innerHTML``-style sinks.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..core.files import write_atomic
from .html_charts import charts_view
from .html_history import build_history, history_payload, order_runs
from .html_views import (
    baseline_view,
    columns,
    comparison_view,
    failures_view,
    filters_view,
    run_view,
    summary_view,
    title,
)

TEMPLATE = "report.html.j2"
# The page shows the first cases while the browser still reads the rest (a big report is
# megabytes of JSON): the first block comes before the script, the others after it.
FIRST_CHUNK = 300
CHUNK = 2000
_JSON_ESCAPES = (
    ("&", "\\u0026"),
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def render_html(reports: list[dict]) -> str:
    """One self-contained HTML page for one report, or a history for several (any order)."""
    if not reports:
        raise ValueError("render_html needs at least one report")
    runs = order_runs(reports)
    latest = runs[-1]
    cases = list(latest.get("cases") or [])
    history = build_history(runs) if len(runs) > 1 else None
    payload = {
        "total": len(cases),
        "cases": cases[:FIRST_CHUNK],
        "columns": columns(cases),
        "history": history_payload(history, cases),
    }
    chunks = [
        Markup(script_json(cases[k : k + CHUNK])) for k in range(FIRST_CHUNK, len(cases), CHUNK)
    ]
    context = {
        "title": title(latest),
        "run": run_view(latest),
        "summary": summary_view(latest),
        "failures": failures_view(cases),
        "charts": charts_view(latest),
        "filters": filters_view(cases, history),
        "columns": payload["columns"],
        "history": history,
        "comparison": comparison_view(latest),
        "baseline": baseline_view(latest),
        "data_json": Markup(script_json(payload)),
        "case_chunks": chunks,
    }
    return _environment().get_template(TEMPLATE).render(**context)


def write_report(report: dict, path: str | os.PathLike[str]) -> None:
    """One run's page (the report writers' signature)."""
    write_html([report], path)


def write_html(reports: list[dict], path: str | os.PathLike[str]) -> None:
    """Render and write atomically."""
    write_atomic(os.fspath(path), render_html(reports))


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: no `<`, `>`, `&`, U+2028 or U+2029."""
    options = {"ensure_ascii": False, "separators": (",", ":"), "default": str}
    try:
        text = json.dumps(value, allow_nan=False, **options)
    except ValueError:  # NaN or infinity (json.load accepts them; JSON.parse does not)
        text = json.dumps(_finite(value), **options)
    for raw, escaped in _JSON_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def _finite(value: Any) -> Any:
    """The value with NaN and infinities as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["csp_hash"] = _csp_hash
    return env
