"""``python -m scoring``: score files without Django. JSON on stdout; errors on stderr, exit 2.

See scoring/README.md for the full contract of each sub-command.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from scoring.errors import AgreementError, InputError, ScoringError

# Sub-command modules are imported when used: scipy/statsmodels cost ~1 s that a retrieval run
# does not need.
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 8821
METRICS = (
    "recall",
    "precision",
    "hit",
    "mrr",
    "ndcg",
    "map",
    "rprec",
    "bpref",
    "infap",
    "judged",
    "err",
    "rbp",
)
DEFAULT_METRICS = ("recall@{k}", "precision@{k}", "hit@{k}", "mrr@{k}", "mrr", "ndcg@{k}")
RETRIEVAL_EPILOG = """\
measures (--metrics, comma-separated; name@k with a cut-off, the bare name over the whole
ranking; trec_eval's names are accepted too and --format trec prints them):
  precision@k  P_k          rel in the top k / k
  precision    set_P        rel retrieved / retrieved
  recall@k     recall_k     rel in the top k / R
  recall       set_recall   rel retrieved / R
  hit@k        success_k    1 if a rel document is in the top k
  hit          -            1 if any rel document is retrieved
  mrr          recip_rank   1 / rank of the first rel document
  mrr@k        -            mrr when that rank <= k, else 0
  map          map          average precision
  map@k        map_cut_k    average precision over the top k
  rprec        Rprec        rel in the top R / R
  ndcg@k       ndcg_cut_k   nDCG over the top k (graded gain)
  ndcg         ndcg         nDCG over the whole ranking
  bpref        bpref        binary preference
  infap        infAP        inferred average precision
  judged@k     -            judged documents in the top k / min(k, retrieved)
  judged       -            judged documents retrieved / retrieved
  err@k, err   -            expected reciprocal rank (gdeval grades)
  rbp(p)[@k]   -            rank-biased precision, persistence p (default 0.8)
default: recall@k,precision@k,hit@k,mrr@k,mrr,ndcg@k at --k (10, or the Unrag topK).

--format trec prints trec_eval's output: per query with --per-query (as -q), then
runid (the run file's tag column), num_q and the means, tab-separated, trec_eval's names
(measures trec_eval lacks keep the names above).

--ci: percentile bootstrap over queries (--resamples, --seed). Without --strata the
queries are resampled as one group; with --strata FILE.csv (query_id,stratum) within
each stratum. The workbench's scoring jobs stratify by the triple's domain|task_type
and put that file in their reproducibility bundle as strata.csv: pass it to reproduce
a job's intervals (the job page prints the exact command).
"""
WILCOXON_METHODS = ("auto", "exact", "asymptotic")
GAINS = ("linear", "exponential")
QRELS_FORMATS = ("trec", "jsonl", "gold", "unrag")
RUN_FORMATS = ("trec", "jsonl")
LEVELS = ("nominal", "ordinal", "interval", "ratio")

EXIT_INPUT = 2


def _metrics(value: str) -> list[str]:
    from scoring.retrieval import parse_measures

    names = [m.strip() for m in value.split(",") if m.strip()]
    try:
        parse_measures(names)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return names


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


def _share(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return number


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scoring", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    ret = sub.add_parser(
        "retrieval",
        help="ranked-retrieval measures (trec_eval conventions)",
        description="Ranked-retrieval measures of a run against qrels (trec_eval conventions).",
        epilog=RETRIEVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _retrieval_arguments(ret)
    ret.add_argument("--run", required=True)
    ret.add_argument("--per-query", action="store_true", help="every query's values (-q)")
    ret.add_argument("--ci", action="store_true", help="bootstrap 95%% intervals of the means")
    ret.add_argument(
        "--strata",
        metavar="FILE.csv",
        help="query_id,stratum: --ci resamples within strata (a job's strata.csv)",
    )
    ret.add_argument("--format", choices=["json", "trec"], default="json")
    ret.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES)
    ret.add_argument("--seed", type=int, default=DEFAULT_SEED)

    cmp = sub.add_parser("compare", help="paired tests between runs, Holm-corrected")
    _retrieval_arguments(cmp)
    cmp.add_argument("--run", required=True, action="append", dest="runs")
    cmp.add_argument("--alpha", type=float, default=0.05)
    cmp.add_argument("--wilcoxon-method", choices=WILCOXON_METHODS, default="auto")

    ag = sub.add_parser("agreement", help="inter-annotator agreement from item,annotator,label CSV")
    ag.add_argument("--labels", required=True)
    ag.add_argument(
        "--metric", required=True, choices=["cohen", "fleiss", "krippendorff", "percent"]
    )
    ag.add_argument("--level", choices=LEVELS, default="nominal")
    ag.add_argument("--weights", choices=["linear", "quadratic"])
    ag.add_argument("--categories")
    ag.add_argument("--axis", choices=["grounding", "acceptability"])
    ag.add_argument("--ci", action="store_true")
    ag.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES)
    ag.add_argument("--seed", type=int, default=DEFAULT_SEED)

    pr = sub.add_parser("probe", help="PROBE composite score and release decision")
    pr.add_argument("--questions", required=True)
    pr.add_argument("--answers", required=True)
    pr.add_argument("--labels")

    ev = sub.add_parser("evaluators", help="evaluators against the gold tier (Table 4, gating)")
    ev.add_argument("--items", required=True, help="gold-tier items JSONL (scoring.evaluators)")
    ev.add_argument("--outputs", required=True, help="evaluator outputs JSONL with 'evaluator'")
    ev.add_argument(
        "--scores",
        type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
        default=[],
        help="comma-separated names in each item's 'scores' to rank as rows",
    )
    ev.add_argument("--trust-kappa", type=float, default=0.70)
    ev.add_argument(
        "--min-coverage",
        type=_share,
        default=0.90,
        help="share of the items a judge must have judged to be trusted (default 0.90)",
    )
    ev.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES)
    ev.add_argument("--seed", type=int, default=DEFAULT_SEED)

    for name, text in (
        ("calibrate", "PCS weight/cap/threshold calibration (A.7 grid, A.8 objective)"),
        ("report", "release report (Tables 5, 6, 8, 9) as JSON, optionally HTML"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--questions", required=True)
        cmd.add_argument("--answers", required=True)
        cmd.add_argument("--labels", required=True)
        if name == "report":
            cmd.add_argument("--calibration", help="a calibrate result JSON to score with")
            cmd.add_argument("--html", help="also write the self-contained HTML report here")
            cmd.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES)
            cmd.add_argument("--seed", type=int, default=DEFAULT_SEED)

    pw = sub.add_parser(
        "pairwise", help="pairwise review: Bradley-Terry, win rates, agreement, position bias"
    )
    pw.add_argument("file", metavar="FILE.jsonl", help="one judgment per line (scoring.pairwise)")
    pw.add_argument("--seed", type=int, default=DEFAULT_SEED)
    pw.add_argument("--resamples", type=_positive_int, default=DEFAULT_RESAMPLES)
    pw.add_argument("--alpha", type=float, default=1e-6, help="L2 regularisation (choix's alpha)")
    pw.add_argument("--format", choices=["json", "text"], default="json")
    return parser


def _retrieval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--k", type=_positive_int)
    parser.add_argument("--metrics", type=_metrics, help="comma-separated measures (listed below)")
    parser.add_argument("--all-queries", "-c", action="store_true")
    parser.add_argument("--relevance-level", "-l", type=_non_negative_int, default=1)
    parser.add_argument("--judged-only", "-J", action="store_true")
    parser.add_argument("--gain", choices=GAINS, default="linear")
    parser.add_argument("--qrels-format", choices=QRELS_FORMATS)
    parser.add_argument("--run-format", choices=RUN_FORMATS)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _measures(args: argparse.Namespace, qrels: Any = None) -> list[str]:
    from scoring.retrieval import default_metrics, metric_labels

    k = args.k or getattr(qrels, "default_k", None) or 10
    names = args.metrics or default_metrics(k)
    try:
        metric_labels(names)
    except ValueError as exc:
        raise InputError("--metrics", None, str(exc)) from None
    return names


def _evaluate(args: argparse.Namespace, qrels: Any, run_path: str) -> Any:
    from scoring.io import read_run
    from scoring.retrieval import evaluate

    run = read_run(run_path, fmt=args.run_format)
    return evaluate(
        qrels,
        run,
        k=args.k,
        metrics=_measures(args, qrels),
        all_queries=args.all_queries,
        gain=args.gain,
        relevance_level=args.relevance_level,
        judged_only=args.judged_only,
    )


def run_retrieval(args: argparse.Namespace) -> dict[str, Any] | str:
    from scoring.io import read_qrels

    _measures(args)
    qrels = read_qrels(args.qrels, fmt=args.qrels_format)
    result = _evaluate(args, qrels, args.run)
    if args.format == "trec":
        return result.trec_text(per_query=args.per_query, runid=_runid(args))
    ci = None
    if args.ci:
        from scoring.stats import bootstrap_cis

        strata = _read_strata(args.strata, result.query_ids.tolist()) if args.strata else None
        boots = bootstrap_cis(result.per_query, n=args.resamples, seed=args.seed, strata=strata)
        ci = {label: [boot.low, boot.high] for label, boot in boots.items()}
    return {
        "n_queries": result.n_queries,
        "k": result.k,
        "all_queries": result.all_queries,
        "relevance_level": result.relevance_level,
        "judged_only": result.judged_only,
        "aggregate": result.aggregate,
        "ci": ci,
        "per_query": result.per_query_dict() if args.per_query else None,
    }


def _runid(args: argparse.Namespace) -> str:
    """trec_eval's runid: the tag (sixth column) of the run's first line; a JSONL run has
    none, and is named by its file name."""
    from pathlib import Path

    with open(args.run, "rb") as handle:
        head = handle.read(65536)
    lines = head.decode("utf-8", "replace").splitlines()
    first = next((line for line in lines if line.strip()), "")
    if args.run_format == "jsonl" or first.lstrip().startswith(("{", "[")):
        return Path(args.run).name
    fields = first.split()
    return fields[5] if len(fields) >= 6 else Path(args.run).name


def _read_strata(path: str, query_ids: list[str]) -> list[str]:
    """``query_id,stratum`` CSV -> the stratum of each evaluated query (every one needed)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or [h.strip() for h in header] != ["query_id", "stratum"]:
                raise InputError(path, 1, "expected the header query_id,stratum")
            strata: dict[str, str] = {}
            for row in reader:
                if not row:
                    continue
                if len(row) != 2:
                    raise InputError(path, reader.line_num, "expected 2 fields (query_id,stratum)")
                strata[row[0]] = row[1]
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    missing = [q for q in query_ids if q not in strata]
    if missing:
        raise InputError(path, None, f"no stratum for query {missing[0]!r}")
    return [strata[q] for q in query_ids]


def run_compare(args: argparse.Namespace) -> dict[str, Any]:
    """Score every run, keep the queries all runs were evaluated on, and test every pair."""
    from dataclasses import asdict

    from scoring.io import read_qrels
    from scoring.stats import compare_paired

    if len(args.runs) < 2:
        raise InputError("--run", None, "compare needs at least two runs (--run A --run B)")
    if len(set(args.runs)) != len(args.runs):
        raise InputError("--run", None, "the same run file is given twice")
    _measures(args)
    qrels = read_qrels(args.qrels, fmt=args.qrels_format)
    results = {path: _evaluate(args, qrels, path) for path in args.runs}
    shared = set.intersection(*(set(r.query_ids.tolist()) for r in results.values()))
    if not shared:
        raise InputError("--run", None, "the runs share no evaluated query")
    scores = {}
    for path, result in results.items():
        position = {q: i for i, q in enumerate(result.query_ids.tolist())}
        index = np.array([position[q] for q in sorted(shared)], dtype=np.int64)
        scores[path] = {label: values[index] for label, values in result.per_query.items()}
    pairs = compare_paired(scores, alpha=args.alpha, wilcoxon_method=args.wilcoxon_method)
    return {
        "runs": list(args.runs),
        "n_queries": len(shared),
        "alpha": args.alpha,
        "correction": "holm",
        "wilcoxon_method": args.wilcoxon_method,
        "aggregate": {
            path: {label: float(v.mean()) for label, v in per.items()}
            for path, per in scores.items()
        },
        "pairs": [asdict(p) for p in pairs],
    }


def _number(text: str) -> float | int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() else value


def read_labels_csv(path: str) -> list[tuple[str, str, Any]]:
    """Read ``item,annotator,label`` rows; numeric labels become numbers when all are numeric."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "not valid UTF-8 text") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise InputError(path, 1, "the file is empty; expected the header item,annotator,label")
    if [h.strip().lower() for h in header] != ["item", "annotator", "label"]:
        raise InputError(
            path, 1, f"expected the header item,annotator,label, found {','.join(header)}"
        )
    rows: list[tuple[str, str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for row in reader:
        lineno = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise InputError(
                path, lineno, f"expected 3 fields (item,annotator,label), found {len(row)}"
            )
        item, annotator, label = (cell.strip() for cell in row)
        if not item:
            raise InputError(path, lineno, "item is empty")
        if not annotator:
            raise InputError(path, lineno, "annotator is empty")
        if not label:
            raise InputError(path, lineno, "label is empty; leave the row out for a missing label")
        if (item, annotator) in seen:
            raise InputError(
                path,
                lineno,
                f"annotator {annotator!r} already labelled item {item!r} on line "
                f"{seen[(item, annotator)]}",
            )
        seen[(item, annotator)] = lineno
        rows.append((item, annotator, label))
    if not rows:
        raise InputError(path, None, "no label rows after the header")
    numbers = [_number(label) for _, _, label in rows]
    if all(n is not None for n in numbers):
        return [(i, a, n) for (i, a, _), n in zip(rows, numbers, strict=True)]
    return rows


def run_agreement(args: argparse.Namespace) -> dict[str, Any]:
    from scoring import agreement as agr

    rows = read_labels_csv(args.labels)
    table = agr.label_table(rows)
    categories = None
    if args.axis:
        categories = list(agr.AXIS_SCALES[args.axis])
    if args.categories:
        declared = [c.strip() for c in args.categories.split(",") if c.strip()]
        numbers = [_number(c) for c in declared]
        numeric_labels = all(not isinstance(v, str) for _, _, v in rows)
        categories = numbers if numeric_labels and all(n is not None for n in numbers) else declared
    try:
        result = agr.agreement(
            table,
            metric=args.metric,
            level=args.level,
            weights=args.weights,
            categories=categories,
            ci=args.ci,
            n_resamples=args.resamples,
            seed=args.seed,
        )
    except AgreementError as exc:
        raise InputError(args.labels, None, str(exc)) from None
    return {
        "metric": args.metric,
        "level": args.level if args.metric == "krippendorff" else None,
        "weights": args.weights if args.metric == "cohen" else None,
        "value": result.value,
        "reason": result.reason,
        "n_items": result.n_items,
        "n_annotators": result.n_annotators,
        "ci": list(result.ci) if result.ci else None,
    }


def run_probe(args: argparse.Namespace) -> dict[str, Any]:
    from scoring import probe

    questions = probe.read_questions(args.questions)
    answers = probe.read_answers(args.answers)
    labels = probe.read_labels(args.labels) if args.labels else None
    report = probe.score_answers(questions, answers, labels=labels, answers_source=args.answers)
    return report.to_dict()


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "not valid UTF-8 text") from None


def _first_problem(problems: list[str], path: str) -> InputError:
    text = problems[0]
    prefix = f"{path}, line "
    if text.startswith(prefix):
        number, _, message = text[len(prefix) :].partition(": ")
        return InputError(path, int(number), message)
    return InputError(path, None, text.removeprefix(f"{path}: "))


def run_evaluators(args: argparse.Namespace) -> dict[str, Any]:
    from scoring import evaluators

    items = []
    for lineno, raw in enumerate(_read_lines(args.items), start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(args.items, lineno, f"invalid JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise InputError(args.items, lineno, "expected a JSON object")
        for key in ("record_id", "acceptable", "labels"):
            if key not in item:
                raise InputError(args.items, lineno, f"missing field {key!r}")
        items.append(item)
    if not items:
        raise InputError(args.items, None, "no records")
    records, problems = evaluators.parse_output_lines(
        _read_lines(args.outputs), source=args.outputs, need_evaluator=True
    )
    if problems:
        raise _first_problem(problems, args.outputs)
    outputs: dict[str, dict[str, Any]] = {}
    for _, rec in records:
        outputs.setdefault(rec["evaluator"], {})[rec["record_id"]] = rec
    cfg = evaluators.EvaluatorConfig(
        trust_kappa=args.trust_kappa,
        min_coverage=args.min_coverage,
        resamples=args.resamples,
        seed=args.seed,
    )
    return evaluators.evaluator_report(items, outputs, scores=args.scores, config=cfg).to_dict()


def _probe_inputs(args: argparse.Namespace):
    from scoring import probe

    questions = probe.read_questions(args.questions)
    answers = probe.read_answers(args.answers)
    labels = probe.read_labels(args.labels)
    return questions, answers, labels


def run_calibrate(args: argparse.Namespace) -> dict[str, Any]:
    from scoring import calibration, probe
    from scoring.report import gold_unsafe

    questions, answers, labels = _probe_inputs(args)
    split = calibration.split_questions(
        [
            {
                "question_id": q["question_id"],
                "paraphrase_group": q.get("paraphrase_group"),
                "domain": q.get("domain"),
                "task_family": q.get("task_family"),
                "conflict": "conflict" in (q.get("flags") or []),
                "answerable": q.get("answerable", True),
            }
            for q in questions
        ]
    )
    scored = probe.score_answers(questions, answers, labels=labels, answers_source=args.answers)
    gold = {
        (str(lab["question_id"]), str(lab.get("system_id", ""))): {
            "acceptable": lab.get("acceptability") == "acceptable",
            "unsafe": gold_unsafe(lab),
        }
        for lab in labels
        if lab.get("acceptability") in ("acceptable", "unacceptable")
    }
    items = calibration.items_from_scores(scored.answers, gold)
    try:
        result = calibration.calibrate(items, split)
    except ValueError as exc:
        raise InputError(args.labels, None, str(exc)) from None
    return {**result.to_dict(), "split": split.assignment}


def run_report(args: argparse.Namespace) -> dict[str, Any]:
    from scoring import report
    from scoring.calibration import Selected
    from scoring.probe import DEFAULT_CONFIG

    questions, answers, labels = _probe_inputs(args)
    config, calibrated = DEFAULT_CONFIG, False
    if args.calibration:
        try:
            with open(args.calibration, encoding="utf-8") as fh:
                chosen = json.load(fh)["selected"]
            selected = Selected(
                tuple(chosen["family_weights"]),
                tuple(chosen["regulated_family_weights"]),
                dict(chosen["caps"]),
                dict(chosen["thresholds"]),
            )
            config, calibrated = selected.probe_config(), True
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(args.calibration, None, f"not a calibration result: {exc}") from None
    result = report.release_report(
        questions,
        answers,
        labels,
        config=config,
        calibrated=calibrated,
        resamples=args.resamples,
        seed=args.seed,
        meta={"questions": args.questions, "answers": args.answers, "labels": args.labels},
    )
    if args.html:
        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(report.render_html(result))
    return result.to_dict()


def run_pairwise(args: argparse.Namespace) -> dict[str, Any] | str:
    from scoring import pairwise

    judgments = pairwise.read_judgments(args.file)
    try:
        report = pairwise.analyse(
            judgments, alpha=args.alpha, n_resamples=args.resamples, seed=args.seed
        )
    except pairwise.PairwiseError as exc:
        raise InputError(args.file, None, str(exc)) from None
    return report.text() if args.format == "text" else report.to_dict()


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {
        "retrieval": run_retrieval,
        "compare": run_compare,
        "agreement": run_agreement,
        "probe": run_probe,
        "evaluators": run_evaluators,
        "calibrate": run_calibrate,
        "report": run_report,
        "pairwise": run_pairwise,
    }
    try:
        payload = handlers[args.command](args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ScoringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if isinstance(payload, str):
        sys.stdout.write(payload)
        return 0
    json.dump(payload, sys.stdout, default=_default, allow_nan=False)
    sys.stdout.write("\n")
    return 0
