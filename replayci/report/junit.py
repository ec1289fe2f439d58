"""JUnit XML: one testsuite per pack, one testcase per case; failure and error kept apart."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..core.files import write_atomic
from ..engine import summary
from .text import location

# Characters XML 1.0 does not allow even escaped (ElementTree writes them as they are, which
# leaves a document no reader parses); surrogates come from file names that are not UTF-8.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """*text* with each character XML cannot hold shown as its escape (\\x01, \\udcff)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _failure_text(c: dict) -> str:
    lines = []
    if c.get("reason"):
        lines.append(str(c["reason"]))
    for f in c.get("failures") or []:
        lines.append(f"{f['kind']}: {f['message']}" + (f"   ({f['source']})" if f.get("source") else ""))
    if c.get("fingerprint"):
        lines.append(f"fingerprint {c['fingerprint']}")
    if "flaky" in (c.get("labels") or ()):
        lines.append(f"flaky: {c.get('passes')}/{c.get('repeat')} runs passed")
    return "\n".join(lines)


def _properties(parent: ET.Element, values: dict) -> None:
    """A <properties> block of the values that are known (JUnit readers show them per test)."""
    known = {k: v for k, v in values.items() if v is not None}
    if known:
        block = ET.SubElement(parent, "properties")
        for name, value in known.items():
            ET.SubElement(block, "property", name=name, value=str(value))


def _case_properties(c: dict) -> dict:
    """Tags, where the response came from; tokens, cost, latency and score; under --repeat the
    pass rate, its Wilson interval, flaky."""
    low_high = c.get("wilson") or (None, None)
    return {"tags": ", ".join(map(str, c.get("tags") or ())) or None, "target": c.get("target"),
            "baseline": c.get("baseline"),
            "response_source": c.get("response_source"), "score": c.get("score"),
            "tokens": c.get("tokens"), "cost_usd": c.get("cost_usd"), "latency_ms": c.get("latency_ms"),
            "repeat": c.get("repeat"), "passes": c.get("passes"), "pass_rate": c.get("case_pass_rate"),
            "wilson_low": low_high[0], "wilson_high": low_high[1],
            "flaky": "true" if "flaky" in (c.get("labels") or ()) else None}


def build(report: dict) -> str:
    """The JUnit document for a JSON report (dict form, so merged reports work too)."""
    suites = ET.Element("testsuites", name="replayci")
    by_pack: dict[str, list[dict]] = {}
    for c in report["cases"]:
        by_pack.setdefault(c["pack"], []).append(c)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for pack, cases in by_pack.items():
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        suite = ET.SubElement(suites, "testsuite", name=pack)
        spent = summary.totals(cases)
        _properties(suite, {"tokens": spent["tokens"], "cost_usd": spent["cost_usd"],
                            "p95_latency_ms": spent["p95_latency_ms"]})
        for c in cases:
            name = c["case"] + (f" @ {c['target']}" if c.get("target") else "")  # one test per target
            tc = ET.SubElement(suite, "testcase", classname=f"{pack}.{c['contract']}", name=name,
                               time=_seconds(c.get("duration_ms") or 0))
            source = location(c)
            if ":" in source:
                tc.set("file", source.rsplit(":", 1)[0])
                tc.set("line", source.rsplit(":", 1)[1])
            _properties(tc, _case_properties(c))
            status = c["status"]
            if status == "fail" or (status == "non_reproducible" and not c.get("allowlisted")):
                counts["failures"] += 1
                kind = c.get("classification") or c.get("reason") or "fail"
                if status == "non_reproducible":
                    kind = f"non_reproducible: {c.get('reason')}"
                el = ET.SubElement(tc, "failure", type=kind,
                                   message=(c.get("reason") or kind) if status == "fail" else kind)
                el.text = _failure_text(c)
            elif status == "error":
                counts["errors"] += 1
                el = ET.SubElement(tc, "error", type="error", message=c.get("reason") or "error")
                el.text = c.get("reason") or ""
            elif status == "skipped" or (status == "non_reproducible" and c.get("allowlisted")):
                counts["skipped"] += 1
                ET.SubElement(tc, "skipped", message=c.get("reason") or "skipped")
        t = sum((c.get("duration_ms") or 0) for c in cases) / 1000
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{t:.3f}")
        totals["time"] += t
    for k, v in totals.items():
        suites.set(k, f"{v:.3f}" if k == "time" else str(v))
    ET.indent(suites)
    document = ET.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _xml_safe(document) + "\n"


def write(report: dict, path: str) -> None:
    """Write the JUnit document of *report* atomically."""
    write_atomic(path, build(report))
