"""Demo evaluators: two LLM judges' outputs on the demo's gold-tier answers.

* ``judge-aligned`` agrees with the settled label on almost every answer (one grounding step off
  on about one answer in twelve) and is confident about unsafe answers;
* ``judge-lenient`` has a systematic bias: it rates grounding one step better than the gold,
  passes partially grounded answers and under-reports unsafe answers.

Draws are deterministic (sha256 of the record id), so the demo is the same on every machine.
"""

import hashlib
import json

from django.contrib.auth import get_user_model

from goldset.models import Evaluator, EvaluatorKind, Project, default_project_id
from goldset.services.evaluators import (
    compute_evaluator_report,
    create_evaluator,
    gold_label,
    gold_tier_records,
    import_evaluator_outputs,
)
from goldset.services.pcs_calibrations import start_pcs_calibration

SCALE = ["ungrounded", "misgrounded", "partially_grounded", "fully_grounded"]
JUDGES = (
    ("judge-aligned", "2026-03", "demo-judge-large-2026-02", "aligned"),
    ("judge-lenient", "2026-03", "demo-judge-mini-2026-01", "lenient"),
)


def _draw(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _judgement(record, style: str) -> dict:
    label = gold_label(record)
    step = SCALE.index(label["grounding"]) if label["grounding"] in SCALE else 2
    draw = _draw(f"{style}:{record.public_id}")
    if style == "aligned":
        if draw < 0.08:
            step = max(0, min(3, step + (1 if draw < 0.04 else -1)))
        acceptable = label["acceptability"] == "acceptable"
        unsafe = 0.85 if label["unsafe"] else 0.05
        score = 0.9 if acceptable else 0.15
    else:
        step = min(3, step + 1)
        acceptable = step >= 2
        unsafe = 0.3 if label["unsafe"] and draw < 0.4 else 0.05
        score = 0.55 + 0.4 * step / 3
    return {
        "record_id": record.public_id,
        "labels": {
            "acceptability": "acceptable" if acceptable else "unacceptable",
            "grounding": SCALE[step],
        },
        "score": round(score, 3),
        "unsafe_probability": unsafe,
    }


def seed_evaluators_demo(*, project=None) -> dict:
    """Create the two judges in ``project`` (the default project when None), import their
    outputs and compute the first report (idempotent)."""
    project = project or Project.objects.get(pk=default_project_id())
    if Evaluator.objects.filter(project=project, name=JUDGES[0][0]).exists():
        return {"skipped": True}
    records = list(gold_tier_records(project=project))
    if not records:
        return {"records": 0}
    admin = get_user_model().objects.filter(username="admin").first()
    for name, version, model_id, style in JUDGES:
        evaluator = create_evaluator(
            project=project,
            name=name,
            version=version,
            kind=EvaluatorKind.LLM_JUDGE,
            model_id=model_id,
            prompt_hash=hashlib.sha256(f"{name}:{version}:prompt".encode()).hexdigest(),
            description=f"Demo LLM judge ({style}).",
            actor=admin,
        )
        text = "\n".join(json.dumps(_judgement(r, style)) for r in records)
        import_evaluator_outputs(
            evaluator=evaluator, source=text, source_name=f"{name}.jsonl", actor=admin
        )
    compute_evaluator_report(project=project, actor=admin)
    # The grid runs in a worker after commit (in-process in the embedded default).
    start_pcs_calibration(project=project, name="demo-pcs", actor=admin)
    return {"records": len(records), "judges": len(JUDGES)}
