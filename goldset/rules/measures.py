"""Which retrieval measures a scoring job may compute (issue 12 item 10): names as
``scoring.retrieval`` parses them (``map``, ``ndcg@20``, ``rbp(0.9)``, trec_eval's ``P_5``), so
the job, its reproducibility command (``python -m scoring retrieval --metrics …``) and the
compare page use one vocabulary. The upload form, ``manage.py score_run --metrics``, the import
job's options and ``create_scoring_job`` all check through :func:`check_measures`."""

from collections.abc import Sequence

from goldset.exceptions import GoldsetError
from scoring.retrieval import default_metrics, parse_measures

# Each measure adds a bootstrap over every query and a column per query: keep a job bounded.
MAX_MEASURES = 30
# ScoreAggregate.metric holds the label.
MAX_LABEL = 80


class BadMeasures(GoldsetError):
    """A measure name the scoring library does not accept (the message names it and why)."""


def split_measures(text: str) -> list[str]:
    """``"map, ndcg@20,,P_5"`` -> ``["map", "ndcg@20", "P_5"]``."""
    return [name.strip() for name in text.split(",") if name.strip()]


def check_measures(names: Sequence[str] | str | None, *, k: int) -> list[str]:
    """The measures' labels in the order given, duplicates dropped (``P_5`` and
    ``precision@5`` are one measure); nothing given -> the six defaults at cut-off ``k``.
    Raises BadMeasures naming the first bad name, or too many measures."""
    if isinstance(names, str):
        names = split_measures(names)
    if not names:
        return default_metrics(k)
    try:
        labels = [m.label for m in parse_measures(list(names))]
    except ValueError as exc:
        raise BadMeasures(str(exc)) from None
    if len(labels) > MAX_MEASURES:
        raise BadMeasures(f"{len(labels)} measures given; at most {MAX_MEASURES} per job")
    long = next((label for label in labels if len(label) > MAX_LABEL), None)
    if long is not None:
        raise BadMeasures(f"measure name {long[:40]!r}… is longer than {MAX_LABEL} characters")
    return labels


def job_measures(job) -> list[str]:
    """The measures a retrieval job computes: its stored labels (the defaults at its k for a
    job stored without any)."""
    return list(job.metrics) or default_metrics(job.k)


def same_measures(a: Sequence[str], b: Sequence[str]) -> bool:
    """Two jobs compute the same measures (whatever the order they were listed in)."""
    return sorted(a) == sorted(b)
