"""What the client returns: plain frozen dataclasses built from the API's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar


@dataclass(frozen=True)
class VersionInfo:
    """A frozen gold version."""

    number: int
    label: str
    row_count: int
    rows_sha256: str
    manifest_sha256: str
    parent: int | None
    note: str
    created_at: str
    files: tuple[str, ...]
    manifest: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VersionInfo:
        return cls(
            number=int(data["number"]),
            label=f"v{data['number']}",
            row_count=int(data.get("row_count") or 0),
            rows_sha256=str(data.get("rows_sha256") or ""),
            manifest_sha256=str(data.get("manifest_sha256") or ""),
            parent=data.get("parent"),
            note=str(data.get("note") or ""),
            created_at=str(data.get("created_at") or ""),
            files=tuple(data.get("files") or ()),
            manifest=data.get("manifest"),
        )


@dataclass(frozen=True)
class FreezeResult:
    """``created`` is False when the selection equalled the latest version (nothing created)."""

    created: bool
    detail: str
    version: VersionInfo


@dataclass(frozen=True)
class ImportResult:
    """A background import job (``progress`` in percent; ``errors`` with line and field)."""

    id: int
    kind: str
    status: str
    summary: dict[str, Any]
    message: str
    stage: str = ""
    progress: int = 0
    filename: str = ""
    size: int = 0
    error_count: int = 0
    errors: tuple[dict[str, Any], ...] = ()
    created_at: str = ""
    finished_at: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportResult:
        return cls(
            id=int(data["id"]),
            kind=str(data.get("kind") or ""),
            status=str(data.get("status") or ""),
            summary=dict(data.get("summary") or {}),
            message=str(data.get("message") or ""),
            stage=str(data.get("stage") or ""),
            progress=int(data.get("progress") or 0),
            filename=str(data.get("filename") or ""),
            size=int(data.get("size") or 0),
            error_count=int(data.get("error_count") or 0),
            errors=tuple(data.get("errors") or ()),
            created_at=str(data.get("created_at") or ""),
            finished_at=data.get("finished_at"),
        )

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "rejected", "failed")


@dataclass(frozen=True)
class Download:
    path: Path
    sha256: str
    size: int
    version: int
    fmt: str


@dataclass(frozen=True)
class Aggregate:
    stratum: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass(frozen=True)
class SystemGate:
    """One system's release decision (seed 004 A.6/A.7) and why it is blocked."""

    release: bool
    reasons: tuple[str, ...]
    mean_pcs: float | None
    unsafe_rate: float | None
    gate_pass_rate: float | None


@dataclass(frozen=True)
class ReleaseGate:
    """The release gate of an answer-log run: ``passed`` when every system is released."""

    passed: bool
    systems: dict[str, SystemGate]

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ReleaseGate | None:
        if not data:
            return None
        return cls(
            passed=bool(data["passed"]),
            systems={
                sid: SystemGate(
                    release=bool(s.get("release")),
                    reasons=tuple(s.get("reasons") or ()),
                    mean_pcs=s.get("mean_pcs"),
                    unsafe_rate=s.get("unsafe_rate"),
                    gate_pass_rate=s.get("gate_pass_rate"),
                )
                for sid, s in (data.get("systems") or {}).items()
            },
        )

    @property
    def reasons(self) -> list[str]:
        return [f"{sid}: {r}" for sid, s in self.systems.items() for r in s.reasons]


@dataclass(frozen=True)
class ScoreResult:
    """A scoring job: its status and, once it succeeded, aggregates and the release gate
    (None for a retrieval run, which has no gate)."""

    job_id: int
    name: str
    version: int
    kind: str
    status: str
    error: str
    reused: bool
    stage: str = ""
    progress: int = 0
    created_at: str = ""
    finished_at: str | None = None
    aggregates: tuple[Aggregate, ...] = ()
    release_gate: ReleaseGate | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any], *, reused: bool = False) -> ScoreResult:
        return cls(
            job_id=int(data["id"]),
            name=str(data.get("name") or ""),
            version=int(data["version"]),
            kind=str(data.get("kind") or ""),
            status=str(data.get("status") or ""),
            error=str(data.get("error") or ""),
            reused=reused,
            stage=str(data.get("stage") or ""),
            progress=int(data.get("progress") or 0),
            created_at=str(data.get("created_at") or ""),
            finished_at=data.get("finished_at"),
            aggregates=tuple(
                Aggregate(
                    stratum=a["stratum"],
                    metric=a["metric"],
                    value=a.get("value"),
                    ci_low=a.get("ci_low"),
                    ci_high=a.get("ci_high"),
                    n=int(a.get("n") or 0),
                )
                for a in data.get("aggregates") or []
            ),
            release_gate=ReleaseGate.from_json(data.get("release_gate")),
            summary=dict(data.get("summary") or {}),
        )

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")

    def metric(self, name: str, stratum: str = "all") -> float | None:
        return next(
            (a.value for a in self.aggregates if a.metric == name and a.stratum == stratum), None
        )


R = TypeVar("R", bound="Resource")


@dataclass(frozen=True, kw_only=True)
class Resource:
    """An API object: its documented fields as attributes, and the whole JSON in ``raw`` (so a
    field the server adds later is not lost)."""

    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any]) -> R:
        names = {f.name for f in fields(cls)} - {"raw"}
        return cls(raw=dict(data), **{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, kw_only=True)
class Project(Resource):
    """A project the caller belongs to, with their role in it and the prefix of its API (read
    one at a time: also when it was created and archived)."""

    slug: str = ""
    name: str = ""
    description: str = ""
    archived: bool = False
    role: str = ""
    api: str = ""
    created_at: str = ""
    archived_at: str | None = None


@dataclass(frozen=True, kw_only=True)
class ProjectSetting(Resource):
    """A project's protocol setting: its doc, the installation's value, the project's own text
    (None: it keeps the installation's) and the value in force."""

    name: str = ""
    doc: str = ""
    default: Any = None
    own: str | None = None
    value: Any = None
    overridden: bool = False


@dataclass(frozen=True, kw_only=True)
class Member(Resource):
    """A member of a project (``id``: their user id) and the role they hold in it."""

    id: int = 0
    username: str = ""
    role: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Domain(Resource):
    slug: str = ""
    name: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Document(Resource):
    document_id: str = ""
    title: str = ""
    domain: str = ""
    authority: float = 0.0
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Block(Resource):
    block_id: str = ""
    position: int = 0
    latest_version: int | None = None
    version_count: int = 0


@dataclass(frozen=True, kw_only=True)
class BlockVersion(Resource):
    block_id: str = ""
    document_id: str = ""
    version: int = 0
    text: str = ""
    section: str = ""
    page_start: int | None = None
    page_end: int | None = None
    effective_from: str | None = None
    effective_to: str | None = None
    sha256: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Triple(Resource):
    id: str = ""
    state: str = ""
    resolution: str | None = None
    tier: str = ""
    routing_rule: str = ""
    source: str = ""
    customer: str | None = None
    domain: str = ""
    task_type: str = ""
    difficulty: str = ""
    author: str = ""
    added_at: str = ""
    gold_at: str | None = None
    revision: int | None = None
    question: str | None = None
    expected_answer: str | None = None
    expected_block: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class QueryResult(Resource):
    query_id: str = ""
    domain: str = ""
    task_type: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    retrieved: list[Any] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Snapshot(Resource):
    """A stored agreement figure (the dashboard's)."""

    protocol: str = ""
    axis: str = ""
    metric: str = ""
    tier: str = ""
    task_type: str = ""
    domain: str = ""
    week: str = ""
    subject: str = ""
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_items: int = 0
    n_annotators: int = 0
    reason: str = ""
    data_version: str = ""
    computed_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Alert(Resource):
    kind: str = ""
    title: str = ""
    detail: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class VersionDiff(Resource):
    """Triples added, removed and changed (``{"id", "fields"}``) between versions a and b."""

    a: int = 0
    b: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class TagMove(Resource):
    """One change of a tag: ``action`` created (no ``from_version``), moved, or deleted (no
    ``to_version``)."""

    name: str = ""
    action: str = ""
    from_version: int | None = None
    to_version: int | None = None
    note: str = ""
    moved_by: str | None = None
    moved_at: str = ""


@dataclass(frozen=True, kw_only=True)
class Tag(Resource):
    """A version tag: the version it points at and its last change (``history``, newest first,
    when read one at a time)."""

    name: str = ""
    version: int = 0
    note: str = ""
    moved_by: str | None = None
    moved_at: str = ""
    created_at: str = ""
    history: tuple[TagMove, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tag:
        tag = super().from_json({k: v for k, v in data.items() if k != "history"})
        moves = tuple(TagMove.from_json(m) for m in data.get("history") or ())
        return replace(tag, raw=dict(data), history=moves)


@dataclass(frozen=True, kw_only=True)
class Comparison(Resource):
    """A paired comparison of scoring jobs (``pairs``: one row per pair and metric)."""

    jobs: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    n_queries: int = 0
    wilcoxon_method: str = ""
    alpha: float = 0.0
    pairs: list[dict[str, Any]] = field(default_factory=list)
    per_query: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Label(Resource):
    """An answer label as the pages show it to you: the item by its opaque id, the slot
    (Annotator 1/2/3); ``labeler`` is named for admins only ("" otherwise)."""

    id: int = 0
    record: str = ""
    slot: int = 0
    calibration: bool = False
    labeler: str = ""
    acceptability: str = ""
    grounding: str = ""
    evidence_sufficiency: str = ""
    citation_correctness: str = ""
    conflict_handling: str = ""
    safety_boundary: str = ""
    severe_safety: bool = False
    primary_failure: str = ""
    secondary_failures: list[str] = field(default_factory=list)
    rationale: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class LabelClaim(Resource):
    """The answer to a claim: ``item`` (question, answer, gold evidence, citations; never the
    system) when ``claimed``, else ``reason`` and ``message`` say why there is none."""

    claimed: bool = False
    reason: str = ""
    message: str = ""
    slot: int | None = None
    item: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Review(Resource):
    """A triple review (yours, or one of a resolved revision of a triple you may see)."""

    id: int = 0
    triple: str = ""
    revision: int = 0
    slot: int = 0
    reviewer: str = ""
    verdict: str = ""
    flags: list[str] = field(default_factory=list)
    entailment_direction: str = ""
    disagreement_category: str = ""
    comment: str = ""
    spot_check: bool = False
    submitted_at: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewClaim(Resource):
    """The answer to a review claim: ``task`` (assignment, triple, revision, question,
    expected answer and block) when ``claimed``."""

    claimed: bool = False
    message: str = ""
    task: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Adjudication(Resource):
    id: int = 0
    record: str = ""
    reason: str = ""
    lead: str = ""
    acceptability: str = ""
    grounding: str = ""
    severe_safety: bool = False
    primary_failure: str = ""
    secondary_failures: list[str] = field(default_factory=list)
    rationale: str = ""
    changed_outcome: bool = False
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class OpenItem(Resource):
    """An item waiting for a lead, with its labels (:class:`Label`) by slot."""

    record: str = ""
    status: str = ""
    reason: str = ""
    question: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    labels: tuple[Label, ...] = ()
    created_at: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpenItem:
        item = super().from_json({k: v for k, v in data.items() if k != "labels"})
        labels = tuple(Label.from_json(r) for r in data.get("labels") or ())
        return replace(item, raw=dict(data), labels=labels)


@dataclass(frozen=True, kw_only=True)
class WebhookEndpoint(Resource):
    """A webhook endpoint; ``secret`` only in the answer to its registration."""

    id: int = 0
    url: str = ""
    description: str = ""
    events: list[str] = field(default_factory=list)
    enabled: bool = True
    created_at: str = ""
    updated_at: str = ""
    secret: str | None = None


@dataclass(frozen=True, kw_only=True)
class WebhookDelivery(Resource):
    """One delivery of an endpoint's log: its status, attempts and last answer."""

    id: int = 0
    event_type: str = ""
    message_id: str = ""
    status: str = ""
    attempts: int = 0
    max_attempts: int = 0
    last_status_code: int | None = None
    last_error: str = ""
    response_snippet: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    next_attempt_at: str | None = None
    last_attempt_at: str | None = None
    finished_at: str | None = None


@dataclass(frozen=True)
class Progress:
    """What a progress callback receives: ``stage`` (``upload``, ``import``, ``scoring``,
    ``download``), how far (``done`` of ``total``; bytes for transfers, percent for jobs)."""

    stage: str
    done: int
    total: int | None


@dataclass(frozen=True, kw_only=True)
class SamplingRule(Resource):
    """A sampling rule of production traces (admins): its settings, its version (each change is
    the next) and the traces it sampled and capped today (UTC) and in all. Decimals
    (``percentage``, ``threshold``) are strings, as the API sends them."""

    id: int = 0
    name: str = ""
    kind: str = ""
    percentage: str | None = None
    seed: int = 0
    threshold: str | None = None
    value: str = ""
    daily_cap: int | None = None
    position: int = 0
    enabled: bool = True
    version: int = 0
    note: str = ""
    sampled_today: int = 0
    capped_today: int = 0
    sampled_total: int = 0
    capped_total: int = 0
    created_at: str = ""
    updated_at: str = ""


# ---------------------------------------------------------------------- pairwise review


@dataclass(frozen=True, kw_only=True)
class PairwiseTask(Resource):
    """A pairwise task: its design and counts (never the systems); ``gold_version`` the number
    of the frozen version whose questions it compares (None: any question)."""

    id: int = 0
    name: str = ""
    gold_version: int | None = None
    design: str = ""
    comparisons_per_question: int | None = None
    seed: int = 0
    tier: str = ""
    reviewers_per_pair: int = 0
    created_at: str = ""
    pairs: int = 0
    judgments: int = 0
    decided: int = 0
    split: int = 0


@dataclass(frozen=True, kw_only=True)
class PairwiseRun(Resource):
    """A run a new pairwise task may compare, as the task form offers it: ``id`` (what
    ``runs`` names) and ``label`` ("Run N (k answers)"; the run id too for admins)."""

    id: int = 0
    label: str = ""


@dataclass(frozen=True, kw_only=True)
class PairJudgment(Resource):
    """One judgment of a task's pair: ``preference`` relative to A/B (``a``, ``b``, ``tie``,
    ``both_unacceptable``), the side A was shown on (``left``); the systems for admins only."""

    pair: str = ""
    question_id: str = ""
    reviewer: str = ""
    preference: str = ""
    strength: str = ""
    rationale: str = ""
    left: str = ""
    created_at: str = ""
    system_a: str | None = None
    system_b: str | None = None


@dataclass(frozen=True, kw_only=True)
class PairwiseAnalysis(Resource):
    """A task's analysis: Bradley–Terry ``ranking`` with CIs, win rates per system ``pairs``,
    ``agreement`` and ``position_bias``; ``reason`` says why there is none yet."""

    task: int = 0
    reason: str = ""
    n_judgments: int = 0
    n_questions: int = 0
    mle_exists: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    ranking: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    agreement: dict[str, Any] | None = None
    position_bias: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class BlindPair(Resource):
    """A pair as shown to you, blind (no system): the question and the two answers on your
    sides; ``judgment`` (a review pair's) your choice once you judged it."""

    public_id: str = ""
    question_text: str = ""
    domain_name: str = ""
    task_family: str = ""
    left_answer: str = ""
    right_answer: str = ""
    status: str = ""
    status_display: str = ""
    judgment: str | None = None


@dataclass(frozen=True, kw_only=True)
class PairSkip(Resource):
    """A pair you handed back without judging it, and why: never offered to you again."""

    pair: str = ""
    reason: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class BlindJudgment(Resource):
    """A reviewer's judgment of a split pair as you read the pair (your own sides): ``choice``
    ``left``, ``right``, ``tie`` or ``both_unacceptable``; ``reviewer`` "Reviewer N" unless your
    role sees labelers."""

    reviewer: str = ""
    choice: str = ""
    strength: str = ""
    rationale: str = ""


@dataclass(frozen=True, kw_only=True)
class PairDecision(Resource):
    """The final preference on a split pair, as you read the pair (your own sides)."""

    choice: str = ""
    strength: str = ""
    rationale: str = ""
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class PairAdjudication(Resource):
    """A split pair as a lead reads it, blind on the lead's own sides (no system): the question,
    the two answers, the task's name, the reviewers' :class:`BlindJudgment` s and the final
    ``adjudication`` once recorded (None: still waiting)."""

    public_id: str = ""
    question_text: str = ""
    domain_name: str = ""
    task_family: str = ""
    left_answer: str = ""
    right_answer: str = ""
    status: str = ""
    status_display: str = ""
    task: str = ""
    judgments: tuple[BlindJudgment, ...] = ()
    adjudication: PairDecision | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PairAdjudication:
        nested = ("judgments", "adjudication")
        pair = super().from_json({k: v for k, v in data.items() if k not in nested})
        decision = data.get("adjudication")
        return replace(
            pair,
            raw=dict(data),
            judgments=tuple(BlindJudgment.from_json(j) for j in data.get("judgments") or ()),
            adjudication=PairDecision.from_json(decision) if decision else None,
        )


@dataclass(frozen=True, kw_only=True)
class CalibrationPair(Resource):
    """A calibration pair: its answers A and B and the reference relative to them (``a``,
    ``b``, ``tie``, ``both_unacceptable``), with how many reviewers answered it."""

    public_id: str = ""
    question_text: str = ""
    domain_name: str = ""
    answer_a: str = ""
    answer_b: str = ""
    reference: str = ""
    answers: int = 0
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class PairQualification(Resource):
    """A reviewer's scored calibration attempt: κ against the references, the gate, passed
    (``reviewer`` empty in your own status)."""

    reviewer: str = ""
    n_items: int = 0
    kappa: float | None = None
    kappa_note: str = ""
    threshold: float = 0.0
    passed: bool = False
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    scored_at: str = ""


@dataclass(frozen=True, kw_only=True)
class QualificationStatus(Resource):
    """Your qualification for pairwise review: calibration pairs answered of ``total``, and
    ``result`` once the last one is judged."""

    qualified: bool = False
    total: int = 0
    answered: int = 0
    problems: list[str] = field(default_factory=list)
    result: PairQualification | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QualificationStatus:
        status = super().from_json({k: v for k, v in data.items() if k != "result"})
        result = data.get("result")
        return replace(
            status,
            raw=dict(data),
            result=PairQualification.from_json(result) if result else None,
        )


@dataclass(frozen=True, kw_only=True)
class CalibrationAnswer(Resource):
    """Your answer to a calibration pair and your qualification after it."""

    pair: str = ""
    choice: str = ""
    qualification: QualificationStatus | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CalibrationAnswer:
        answer = super().from_json({k: v for k, v in data.items() if k != "qualification"})
        status = data.get("qualification")
        return replace(
            answer,
            raw=dict(data),
            qualification=QualificationStatus.from_json(status) if status else None,
        )
