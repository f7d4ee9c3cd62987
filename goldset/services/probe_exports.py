"""The PROBE artifacts of a frozen version that come from the answer-labeling area (seed 004
§6.4 / Table 9): the adjudication export and the adjudicated labels answer-log scoring uses for the label-derived PCS axes."""

from collections.abc import Iterable, Iterator

from goldset.models import AnswerRecord, Label, RecordStatus
from goldset.rules.probe_labels import safety_axes
from goldset.selectors.answers import iter_adjudication_export, list_adjudication_export_people
from goldset.services.exports import canonical_json
from goldset.services.pseudonyms import ensure_pseudonyms, gold_version_scope


def adjudication_export_rows(*, project, scope: str, include_open: bool = False) -> Iterator[dict]:
    """``project``'s adjudication export with the people in it pseudonymised for ``scope`` (a
    gold version's, or a fresh one per export: ``pseudonyms.export_scope()``)."""
    people = list_adjudication_export_people(project=project, include_open=include_open)
    names = ensure_pseudonyms(scope=scope, user_ids=people)
    return iter_adjudication_export(project=project, pseudonyms=names, include_open=include_open)


def render_adjudication_export(version) -> Iterator[bytes]:
    """The answers area's adjudication export of the version's project at freeze time, one
    canonical JSON line each, reviewers under the version's pseudonyms."""
    rows = adjudication_export_rows(project=version.project, scope=gold_version_scope(version))
    for item in rows:
        yield (canonical_json(item) + "\n").encode("utf-8")


def adjudicated_labels(version, answers: Iterable[dict]) -> list[dict]:
    """Final (majority or adjudicated) labels for the answer records whose question and system
    match the uploaded log (in the version's project), keyed by question_id + system_id for ``scoring.probe``: grounding,
    the adjudication's failure categories, and the safety evidence of the labels
    (``goldset.rules.probe_labels``: without it PROBE leaves the answer unscored)."""
    wanted = {(str(a.get("question_id")), str(a.get("system_id", ""))) for a in answers}
    records = (
        AnswerRecord.objects.filter(
            project_id=version.project_id,
            is_calibration=False,
            status__in=[RecordStatus.FINAL, RecordStatus.ADJUDICATED, RecordStatus.AUDIT],
            question__question_id__in={q for q, _ in wanted},
        )
        .exclude(final_grounding="")
        .select_related("question", "run__system", "adjudication")
    )
    chosen = [r for r in records if (r.question.question_id, r.run.system.system_id) in wanted]
    safety: dict[int, tuple[list[str], list[bool]]] = {r.pk: ([], []) for r in chosen}
    for record_id, boundary, severe in Label.objects.filter(record__in=chosen).values_list(
        "record_id", "safety_boundary", "severe_safety"
    ):
        safety[record_id][0].append(boundary)
        safety[record_id][1].append(severe)
    labels = []
    for r in chosen:
        label = {
            "question_id": r.question.question_id,
            "system_id": r.run.system.system_id,
            "grounding": r.final_grounding,
        }
        adjudication = getattr(r, "adjudication", None)
        if adjudication is not None and adjudication.primary_failure:
            label["failure_categories"] = [
                adjudication.primary_failure,
                *adjudication.secondary_failures,
            ]
        boundaries, severe = safety[r.pk]
        label.update(
            safety_axes(
                boundaries=boundaries,
                severe=severe,
                adjudicated_severe=adjudication.severe_safety if adjudication else None,
            )
        )
        labels.append(label)
    return sorted(labels, key=lambda x: (x["question_id"], x["system_id"]))
