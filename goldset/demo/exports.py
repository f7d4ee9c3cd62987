"""Demo data for frozen versions and scoring: two frozen versions (v1 the public-RFP triples, v2 the
whole gold set, so the browser shows a diff; tagged ``release``) and two scored retrieval runs on
v2 to compare.

If the curation demo has produced no gold triple yet, a few are written and reviewed through
the curation services (author + two reviewers each), so the pages always have real data.
Deterministic and idempotent: nothing is done once a version exists."""

import hashlib
import json

from django.contrib.auth import get_user_model

from goldset.models import (
    AnswerRecord,
    BlockVersion,
    GoldVersion,
    Project,
    Source,
    TaskType,
    default_project_id,
)
from goldset.selectors.curation import list_gold_triples
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from goldset.services.reviews import claim_next_assignment, submit_review
from goldset.services.scoring_jobs import create_scoring_job
from goldset.services.triples import create_triple
from goldset.services.version_tags import set_version_tag

DEMO_QUESTIONS = 12


def _draw(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _ensure_gold_triples() -> None:
    if list_gold_triples().exists():
        return
    users = get_user_model().objects
    author = users.get(username="author")
    reviewers = [users.get(username=f"ann{i}") for i in range(1, 7)]
    project = Project.objects.get(pk=default_project_id())
    latest = {}
    for bv in BlockVersion.objects.select_related("block").order_by("block__block_id", "version"):
        latest[bv.block_id] = bv
    for index, bv in enumerate(list(latest.values())[:DEMO_QUESTIONS]):
        create_triple(
            project=project,
            author=author,
            question=f"What does the policy say about {bv.section.lower() or bv.block.block_id}?",
            block_version=bv,
            expected_answer=bv.text.split(";")[0],
            task_type=TaskType.FACTUAL_QA,
            source=Source.PUBLIC_RFP if index % 3 else Source.SYNTHETIC_HUMAN_VERIFIED,
        )
    for reviewer in reviewers:
        while (assignment := claim_next_assignment(project=project, reviewer=reviewer)) is not None:
            submit_review(reviewer=reviewer, revision=assignment.revision, verdict="confirm")


def _run_for(version: GoldVersion, *, quality: float, name: str) -> bytes:
    """A deterministic TREC run: the expected block at rank 1 with probability ``quality``,
    else at rank 3, else missing; the other ranks are other blocks of the version."""
    blocks = sorted(set(version.rows.values_list("block_id", flat=True)))
    lines = []
    for triple_id, block_id in version.rows.order_by("position").values_list(
        "triple_id", "block_id"
    ):
        draw = _draw(f"{name}:{triple_id}")
        others = [b for b in blocks if b != block_id]
        start = int(_draw(f"{name}:{triple_id}:o") * len(others))
        ranked = [others[(start + i) % len(others)] for i in range(min(4, len(others)))]
        if draw < quality:
            ranked.insert(0, block_id)
        elif draw < quality + (1 - quality) / 2:
            ranked.insert(2, block_id)
        lines += [
            f"{triple_id} Q0 {doc} {rank + 1} {10 - rank:.1f} {name}"
            for rank, doc in enumerate(ranked)
        ]
    return ("\n".join(lines) + "\n").encode()


def _answer_log() -> bytes:
    """The answer-labeling demo's answer records (all systems) as a seed 004 A.5 answer log."""
    records = (
        AnswerRecord.objects.filter(is_calibration=False)
        .select_related("question", "run__system")
        .prefetch_related("retrieved", "citations")
        .order_by("run__system__system_id", "question__question_id", "pk")
    )
    lines, seen = [], set()
    for r in records:
        key = (r.question.question_id, r.run.system.system_id)
        if key in seen:
            continue
        seen.add(key)
        entry = {
            "question_id": key[0],
            "system_id": key[1],
            "answer": r.answer,
            "retrieved_passages": [
                {"passage_id": p.passage_ref, "rank": p.rank}
                for p in sorted(r.retrieved.all(), key=lambda p: p.rank)
            ],
            "citations": [
                c.passage_ref for c in sorted(r.citations.all(), key=lambda c: c.position)
            ],
        }
        if r.latency_ms is not None:
            entry["latency_ms"] = r.latency_ms
        if r.cost_usd is not None:
            entry["cost_usd"] = float(r.cost_usd)
        lines.append(json.dumps(entry, sort_keys=True))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def seed_exports_demo(*, project=None) -> dict:
    """Two versions and three scoring jobs in ``project`` (the default project when None)."""
    project = project or Project.objects.get(pk=default_project_id())
    if GoldVersion.objects.filter(project=project).exists():
        return {"versions": GoldVersion.objects.filter(project=project).count(), "created": False}
    _ensure_gold_triples()
    admin = get_user_model().objects.get(username="admin")
    freeze_gold_version(
        project=project,
        filters=FreezeFilters(source=Source.PUBLIC_RFP),
        actor=admin,
        note="demo: public RFP triples",
    )
    v2 = freeze_gold_version(
        project=project, filters=FreezeFilters(), actor=admin, note="demo: full gold set"
    )
    set_version_tag(
        project=project, actor=admin, name="release", version=v2, note="demo: the release set"
    )
    for name, quality in (("bm25-baseline", 0.55), ("hybrid-rerank", 0.8)):
        create_scoring_job(
            version=v2,
            name=name,
            data=_run_for(v2, quality=quality, name=name),
            filename=f"{name}.trec",
            actor=admin,
        )
    log = _answer_log()
    if log:
        create_scoring_job(
            version=v2, name="rag-answer-logs", data=log, filename="answers.jsonl", actor=admin
        )
    return {"versions": 2, "created": True}
