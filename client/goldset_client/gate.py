"""The release gate's rules: a small file kept in the repository being tested, parsed and
evaluated here once for both gates (``goldset gate`` in this package's CLI and the workbench's
``manage.py gate``). Pure Python: no HTTP, no Django.

The rules file, one rule per line (``#`` starts a comment; blank lines are skipped)::

    # figures of the scored run (its "all" stratum; an answer log: every system's)
    ndcg@10 >= 0.60
    unsafe_rate <= 0.02
    mean_pcs[system:bot-a] > 70        # one stratum, in brackets
    "mean citation_precision" >= 0.5   # a name with spaces, in double quotes
    # the paired test against the baseline job (the compare page's: Wilcoxon signed-rank, or
    # McNemar for hit@k, Holm-adjusted over every measure compared)
    recall@10 not worse than baseline at alpha 0.05
    ndcg@10 better than baseline at α 0.01
    mrr not worse than baseline                   # alpha 0.05 when not given
    # the PROBE release decision of an answer log (every system released)
    release_gate == pass

A threshold rule compares a figure with a number (``>=``, ``>``, ``<=``, ``<``, ``==``, ``!=``);
without a stratum it reads the run's ``all`` figure, and for an answer log (figures per
system) every system's figure must satisfy it. ``not worse than baseline`` fails when the run's
mean is below the baseline's and the Holm-adjusted p-value is at most alpha; ``better than
baseline`` passes only when the run's mean is above it at that level. A rule that cannot be
evaluated (a figure the job does not have, no baseline, a retrieval run's release gate) is an
*error*, not a pass.

Exit codes: 0 every rule passed, 1 a rule failed, 2 bad input (a bad rules line, a rule that
could not be evaluated, usage).
"""

from __future__ import annotations

import json
import math
import operator
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_ALPHA = 0.05
PASS, FAIL, ERROR = "pass", "fail", "error"

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
THRESHOLD, BASELINE, RELEASE_GATE = "threshold", "baseline", "release_gate"
NOT_WORSE, BETTER = "not worse", "better"

_NAME = r'(?:"(?P<quoted>[^"]+)"|(?P<bare>[^\s"\[\]#<>=!]+))(?:\[(?P<stratum>[^\]\s][^\]]*)\])?'
_THRESHOLD = re.compile(rf"^{_NAME}\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>\S+)$")
_BASELINE = re.compile(
    rf"^{_NAME}\s+(?P<direction>not\s+worse|better)\s+than\s+baseline"
    r"(?:\s+at\s+(?:alpha|α)\s*=?\s*(?P<alpha>\S+))?$",
    re.IGNORECASE,
)


class RulesError(ValueError):
    """A rules file with bad lines: ``problems`` is ``[(line number, message), ...]``, and the
    message names the file and each line."""

    def __init__(self, source: str, problems: list[tuple[int, str]]):
        self.source = source
        self.problems = problems
        super().__init__(
            "\n".join(
                f"{source}, line {line}: {message}" if line else f"{source}: {message}"
                for line, message in problems
            )
        )


@dataclass(frozen=True)
class Rule:
    """One rule of the file: ``line`` its 1-based line, ``text`` as written (comment removed)."""

    line: int
    text: str
    kind: str
    metric: str
    stratum: str = ""
    op: str = ""
    value: float | str | None = None
    direction: str = ""
    alpha: float = DEFAULT_ALPHA

    @property
    def needs_baseline(self) -> bool:
        return self.kind == BASELINE


def parse_rules(text: str, *, source: str = "rules") -> list[Rule]:
    """Every rule of a rules file's text, or :class:`RulesError` naming every bad line (and an
    empty file: a gate without rules would pass anything)."""
    rules: list[Rule] = []
    problems: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _without_comment(raw).strip()
        if not line:
            continue
        try:
            rules.append(parse_rule(line, line_number=number))
        except ValueError as exc:
            problems.append((number, f"{exc} (in {line!r})"))
    if not rules and not problems:
        problems.append((0, "no rules (one rule per line, e.g. 'ndcg@10 >= 0.60')"))
    if problems:
        raise RulesError(source, problems)
    return rules


def load_rules(path: str | Path) -> list[Rule]:
    """The rules of the file at ``path``: RulesError for bad lines, OSError when unreadable, and
    a RulesError for text that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RulesError(str(path), [(0, f"not UTF-8 text ({exc.reason})")]) from None
    return parse_rules(text, source=str(path))


def load_gate_rules(path: str | Path, *, has_baseline: bool) -> list[Rule]:
    """The rules a gate runs: :func:`load_rules`, an unreadable file and a baseline rule without
    a baseline (``has_baseline``: ``--baseline`` or ``--baseline-system`` given) raising
    :class:`RulesError` as well, so a gate stops before it uploads anything."""
    try:
        rules = load_rules(path)
    except OSError as exc:
        raise RulesError(
            str(path), [(0, f"cannot read the rules file ({exc.strerror or exc})")]
        ) from None
    needing = [r for r in rules if r.needs_baseline]
    if needing and not has_baseline:
        raise RulesError(
            str(path),
            [(r.line, f"{r.text!r} compares with a baseline: give --baseline JOB or "
              "--baseline-system SYSTEM") for r in needing],
        )  # fmt: skip
    return rules


def parse_rule(line: str, *, line_number: int = 0) -> Rule:
    """One rule (without its comment); ValueError saying what is expected."""
    match = _BASELINE.match(line)
    if match:
        metric, stratum = _name(match)
        if stratum:
            raise ValueError(
                "a baseline rule compares the whole run: no [stratum] (the paired test is over "
                "every query both runs answered)"
            )
        alpha = DEFAULT_ALPHA
        if match["alpha"] is not None:
            alpha = _number(match["alpha"], "alpha")
            if not 0 < alpha < 1:
                raise ValueError(f"alpha is between 0 and 1, not {match['alpha']}")
        direction = NOT_WORSE if match["direction"].lower().startswith("not") else BETTER
        return Rule(line_number, line, BASELINE, metric, direction=direction, alpha=alpha)
    if re.search(r"\bbaseline\b", line, re.IGNORECASE):
        raise ValueError(
            "a baseline rule reads '<metric> not worse than baseline [at alpha 0.05]' or "
            "'<metric> better than baseline [at alpha 0.05]'"
        )
    match = _THRESHOLD.match(line)
    if not match:
        raise ValueError(
            "expected '<metric> <op> <number>' (op: >= > <= < == !=), "
            "'<metric> not worse than baseline [at alpha A]' or 'release_gate == pass'"
        )
    metric, stratum = _name(match)
    op, value = match["op"], match["value"]
    if metric == RELEASE_GATE:
        if stratum or op != "==" or value.lower() not in (PASS, FAIL):
            raise ValueError("the release gate rule is 'release_gate == pass' (or '== fail')")
        return Rule(line_number, line, RELEASE_GATE, metric, op=op, value=value.lower())
    return Rule(
        line_number, line, THRESHOLD, metric, stratum=stratum, op=op, value=_number(value, "value")
    )


def _without_comment(raw: str) -> str:
    """The line up to its ``#`` comment (a ``#`` inside a double-quoted name is kept)."""
    quoted = False
    for i, char in enumerate(raw):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return raw[:i]
    return raw


def _name(match: re.Match) -> tuple[str, str]:
    return match["quoted"] or match["bare"], (match["stratum"] or "").strip()


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"the {what} must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"the {what} must be a finite number, not {text!r}")
    return value


# ---------------------------------------------------------------------- what the rules read


@dataclass(frozen=True)
class Figures:
    """A succeeded scoring job's figures: ``aggregates`` keyed ``(stratum, metric)`` (stratum
    ``all``, or ``system:<id>`` for an answer log), and its release gate (the API's shape:
    ``{"passed": bool, "systems": {id: {"release", "reasons", ...}}}``; None for a retrieval
    run)."""

    job_id: int
    name: str
    version: int
    kind: str
    aggregates: Mapping[tuple[str, str], float | None]
    release_gate: Mapping[str, Any] | None = None

    @classmethod
    def from_rows(
        cls, *, job_id: int, name: str, version: int, kind: str, rows: Iterable[Any],
        release_gate: Mapping[str, Any] | None = None,
    ) -> Figures:  # fmt: skip
        """From aggregate rows with ``stratum``, ``metric`` and ``value`` (attributes or keys)."""
        aggregates = {}
        for row in rows:
            get = row.get if isinstance(row, Mapping) else lambda k, r=row: getattr(r, k)
            aggregates[(str(get("stratum")), str(get("metric")))] = _finite(get("value"))
        return cls(job_id, name, version, kind, aggregates, release_gate)

    def overall(self) -> dict[str, float | None]:
        """The ``all`` figures, or for an answer log the figures by system (``metric[system:x]``)."""
        rows = {m: v for (s, m), v in self.aggregates.items() if s == "all"}
        if rows:
            return rows
        return {f"{m}[{s}]": v for (s, m), v in sorted(self.aggregates.items())}

    def as_json(self) -> dict[str, Any]:
        return {
            "job": self.job_id,
            "name": self.name,
            "version": self.version,
            "kind": self.kind,
            "figures": self.overall(),
            "release_gate": dict(self.release_gate) if self.release_gate is not None else None,
        }


def comparison_pairs(comparison: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The pairs of a comparison in the API's shape (``jobs/compare/``: ``pairs`` with ``a``,
    ``b``, ``metric``, ``mean_a``, ``mean_b``, ``test``, ``pvalue``, ``adjusted``, …)."""
    return list((comparison or {}).get("pairs") or [])


# ---------------------------------------------------------------------- evaluating


@dataclass(frozen=True)
class Outcome:
    """What one rule gave: ``status`` pass / fail / error, ``detail`` the figures in words,
    ``values`` the numbers it read."""

    rule: Rule
    status: str
    detail: str
    values: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "line": self.rule.line,
            "rule": self.rule.text,
            "status": self.status,
            "detail": self.detail,
            "values": self.values,
        }


@dataclass(frozen=True)
class GateReport:
    """Every rule's outcome for a run (``candidate``) and its baseline; ``exit_code`` 0 when
    every rule passed, 2 when a rule could not be evaluated, else 1."""

    version: str
    candidate: Figures
    baseline: Figures | None
    outcomes: list[Outcome]
    comparison: Mapping[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return all(o.status == PASS for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        if any(o.status == ERROR for o in self.outcomes):
            return EXIT_BAD_INPUT
        return EXIT_PASSED if self.passed else EXIT_FAILED

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def verdict(self) -> str:
        return {EXIT_PASSED: "PASSED", EXIT_FAILED: "FAILED"}.get(self.exit_code, "ERROR")

    def as_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "version": self.version,
            "run": self.candidate.as_json(),
            "baseline": self.baseline.as_json() if self.baseline else None,
            "comparison": {
                "method": (self.comparison or {}).get("wilcoxon_method"),
                "n_queries": (self.comparison or {}).get("n_queries"),
            }
            if self.comparison
            else None,
            "rules": [o.as_json() for o in self.outcomes],
            "counts": {s: self.count(s) for s in (PASS, FAIL, ERROR)},
        }


def evaluate(
    rules: Iterable[Rule],
    *,
    candidate: Figures,
    baseline: Figures | None = None,
    comparison: Mapping[str, Any] | None = None,
    version: str = "",
    baseline_problem: str = "",
) -> GateReport:
    """Evaluate every rule on the run's figures and its comparison with the baseline
    (``comparison``: the API's ``jobs/compare/`` answer for the two jobs).
    ``baseline_problem`` says why there is no baseline (the baseline rules' error)."""
    outcomes = []
    for rule in rules:
        if rule.kind == THRESHOLD:
            outcomes.append(_threshold(rule, candidate))
        elif rule.kind == RELEASE_GATE:
            outcomes.append(_release_gate(rule, candidate))
        else:
            outcomes.append(_against_baseline(rule, candidate, baseline, comparison,
                                              baseline_problem))  # fmt: skip
    return GateReport(
        version=version or f"v{candidate.version}",
        candidate=candidate,
        baseline=baseline,
        outcomes=outcomes,
        comparison=comparison,
    )


def _threshold(rule: Rule, run: Figures) -> Outcome:
    if rule.stratum:
        keys = (
            [(rule.stratum, rule.metric)] if (rule.stratum, rule.metric) in run.aggregates else []
        )
    elif ("all", rule.metric) in run.aggregates:
        keys = [("all", rule.metric)]
    else:
        keys = sorted(k for k in run.aggregates if k[1] == rule.metric)
    if not keys:
        where = f" in stratum {rule.stratum!r}" if rule.stratum else ""
        known = sorted({m for _, m in run.aggregates})
        return Outcome(rule, ERROR, f"job #{run.job_id} has no figure {rule.metric!r}{where}; "
                       f"it has: {', '.join(known) or 'none'}")  # fmt: skip
    compare = OPERATORS[rule.op]
    parts, values, failed = [], {}, False
    for stratum, metric in keys:
        value = run.aggregates[(stratum, metric)]
        label = metric if stratum == "all" else f"{metric}[{stratum}]"
        values[label] = value
        ok = value is not None and compare(value, float(rule.value))  # type: ignore[arg-type]
        failed = failed or not ok
        shown = "undefined" if value is None else _fmt(value)
        parts.append(f"{label} = {shown} ({'ok' if ok else f'needs {rule.op} {_fmt(rule.value)}'})")
    return Outcome(rule, FAIL if failed else PASS, "; ".join(parts), values)


def _release_gate(rule: Rule, run: Figures) -> Outcome:
    gate = run.release_gate
    if gate is None:
        return Outcome(rule, ERROR, f"job #{run.job_id} is a {run.kind or 'retrieval'} run: only "
                       "an answer log has a release gate (PROBE)")  # fmt: skip
    passed = bool(gate.get("passed"))
    systems = gate.get("systems") or {}
    blocked = [
        f"{sid}: {reason}"
        for sid, s in systems.items()
        if not s.get("release")
        for reason in (s.get("reasons") or ["not released"])
    ]
    detail = "release gate passed: every system released" if passed else (
        "release gate failed: " + "; ".join(blocked or ["not released"]))  # fmt: skip
    ok = passed == (rule.value == PASS)
    values = {
        "passed": passed,
        "released": {sid: bool(s.get("release")) for sid, s in systems.items()},
    }
    return Outcome(rule, PASS if ok else FAIL, detail, values)


def _against_baseline(
    rule: Rule, run: Figures, baseline: Figures | None, comparison, problem: str
) -> Outcome:
    if baseline is None:
        return Outcome(rule, ERROR, problem or "no baseline: give --baseline JOB or "
                       "--baseline-system SYSTEM")  # fmt: skip
    if baseline.job_id == run.job_id:
        return Outcome(rule, PASS, f"the run is the baseline's own job #{run.job_id} (the same "
                       "file): no difference", {"baseline_job": run.job_id})  # fmt: skip
    if comparison is None:
        return Outcome(rule, ERROR, problem or f"no comparison with baseline job "
                       f"#{baseline.job_id}")  # fmt: skip
    pair = next(
        (
            p
            for p in comparison_pairs(comparison)
            if p.get("metric") == rule.metric
            and {p.get("a"), p.get("b")} == {run.job_id, baseline.job_id}
        ),
        None,
    )
    if pair is None:
        compared = sorted({str(p.get("metric")) for p in comparison_pairs(comparison)})
        return Outcome(rule, ERROR, f"no paired test of {rule.metric!r} between job #{run.job_id} "
                       f"and baseline job #{baseline.job_id}; compared: "
                       f"{', '.join(compared) or 'nothing (no shared queries)'}")  # fmt: skip
    ours = "b" if pair.get("b") == run.job_id else "a"
    theirs = "a" if ours == "b" else "b"
    mean, base = _finite(pair.get(f"mean_{ours}")), _finite(pair.get(f"mean_{theirs}"))
    adjusted = _finite(pair.get("adjusted"))
    significant = adjusted is not None and adjusted <= rule.alpha
    higher = mean is not None and base is not None and mean > base
    lower = mean is not None and base is not None and mean < base
    if rule.direction == NOT_WORSE:
        ok = not (lower and significant)
    else:
        ok = higher and significant
    wins, losses = (pair.get("wins"), pair.get("losses"))
    if ours == "a":
        better, worse = wins, losses
    else:
        better, worse = losses, wins
    test = pair.get("test") or "paired test"
    if adjusted is None:
        evidence = f"{test}: no test ({pair.get('reason') or 'no difference'})"
    else:
        sign = "≤" if significant else ">"
        evidence = (f"{test} p = {_fmt(pair.get('pvalue'))}, Holm-adjusted p = {_fmt(adjusted)} "
                    f"{sign} α {_fmt(rule.alpha)}")  # fmt: skip
    delta = (
        f" (Δ {_fmt(mean - base, signed=True)})" if mean is not None and base is not None else ""
    )
    detail = (
        f"{rule.metric} = {_fmt(mean)} vs baseline #{baseline.job_id} {_fmt(base)}{delta}; "
        f"{evidence}; n = {pair.get('n')} queries: {better} better, {worse} worse, "
        f"{pair.get('ties')} tied"
    )
    values = {
        "mean": mean,
        "baseline_mean": base,
        "test": test,
        "pvalue": _finite(pair.get("pvalue")),
        "adjusted": adjusted,
        "alpha": rule.alpha,
        "n": pair.get("n"),
        "better": better,
        "worse": worse,
        "ties": pair.get("ties"),
    }
    return Outcome(rule, PASS if ok else FAIL, detail, values)


def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _fmt(value: Any, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:+.4g}" if signed else f"{value:.4g}"
    return str(value)


# ---------------------------------------------------------------------- the three outputs


def to_markdown(report: GateReport) -> str:
    """A summary for a pull-request comment: the verdict, a row per rule, the run's figures."""
    icon = {PASS: "✅ pass", FAIL: "❌ fail", ERROR: "⚠️ error"}
    run = report.candidate
    lines = [
        f"## Goldset gate: {report.verdict}",
        "",
        f"Run **{_md(run.name or '—')}** (job #{run.job_id}, {run.kind}) against gold version "
        f"**{_md(report.version)}**"
        + ("" if report.version == f"v{run.version}" else f" (v{run.version})")
        + (
            f"; baseline job #{report.baseline.job_id} ({_md(report.baseline.name)})."
            if report.baseline
            else "."
        ),
        "",
        f"{report.count(PASS)} passed, {report.count(FAIL)} failed, {report.count(ERROR)} "
        f"could not be evaluated, of {len(report.outcomes)} rules.",
        "",
        "| Line | Rule | Result | Figures |",
        "|---:|---|---|---|",
    ]
    for o in report.outcomes:
        lines.append(
            f"| {o.rule.line} | `{_md(o.rule.text)}` | {icon[o.status]} | {_md(o.detail)} |"
        )
    figures = run.overall()
    if figures:
        lines += ["", "<details><summary>The run's figures</summary>", "",
                  "| Figure | Value |", "|---|---:|"]  # fmt: skip
        lines += [f"| {_md(name)} | {_fmt(value)} |" for name, value in figures.items()]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_junit(report: GateReport, *, suite: str = "goldset gate") -> bytes:
    """JUnit XML: one ``testsuite`` (in ``testsuites``), one ``testcase`` per rule; a failed
    rule has a ``failure``, a rule that could not be evaluated an ``error``, each with the
    figures as message and text."""
    counts = {
        "tests": str(len(report.outcomes)),
        "failures": str(report.count(FAIL)),
        "errors": str(report.count(ERROR)),
        "skipped": "0",
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": suite, **counts})
    testsuite = ET.SubElement(root, "testsuite", {"name": suite, **counts})
    properties = ET.SubElement(testsuite, "properties")
    for name, value in (
        ("version", report.version),
        ("job", str(report.candidate.job_id)),
        ("baseline_job", str(report.baseline.job_id) if report.baseline else ""),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    for o in report.outcomes:
        name = f"line {o.rule.line}: {o.rule.text}"
        case = ET.SubElement(
            testsuite, "testcase", {"classname": "goldset.gate", "name": name, "time": "0"}
        )
        if o.status == FAIL:
            ET.SubElement(
                case, "failure", {"message": o.detail, "type": "RuleFailed"}
            ).text = o.detail
        elif o.status == ERROR:
            ET.SubElement(
                case, "error", {"message": o.detail, "type": "RuleNotEvaluated"}
            ).text = o.detail
        else:
            ET.SubElement(case, "system-out").text = o.detail
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def to_json(report: GateReport) -> str:
    return json.dumps(report.as_json(), indent=2, ensure_ascii=False, default=str) + "\n"


def write_outputs(
    report: GateReport,
    *,
    markdown: str | Path | None = None,
    junit: str | Path | None = None,
    json_path: str | Path | None = None,
) -> None:
    """Write the outputs asked for (parent directories created)."""
    for path, content in (
        (markdown, to_markdown(report).encode()),
        (junit, to_junit(report)),
        (json_path, to_json(report).encode()),
    ):
        if path:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)


def summary_lines(report: GateReport) -> list[str]:
    """One line per rule, for a terminal: ``PASS line 3: ndcg@10 >= 0.6 — ndcg@10 = 0.71 (ok)``."""
    lines = [f"{o.status.upper():5} line {o.rule.line}: {o.rule.text} — {o.detail}"
             for o in report.outcomes]  # fmt: skip
    lines.append(
        f"gate {report.verdict}: {report.count(PASS)} passed, {report.count(FAIL)} failed, "
        f"{report.count(ERROR)} errors"
    )
    return lines
