"""Types of :mod:`goldset_client.aio` (written by ``tests/client/async_stub.py``; a test holds
it equal): every operation of :class:`goldset_client.GoldsetClient` as a coroutine of the same
value, every list as an async iterator."""

import os
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import httpx

from goldset_client._operations import FileLike, ProgressCallback, Records, Since, VersionRef
from goldset_client._retry import RetryPolicy
from goldset_client.models import (
    Adjudication,
    Alert,
    BlindPair,
    Block,
    BlockVersion,
    CalibrationAnswer,
    CalibrationPair,
    Comparison,
    Document,
    Domain,
    Download,
    FreezeResult,
    ImportResult,
    Label,
    LabelClaim,
    Member,
    OpenItem,
    PairAdjudication,
    PairJudgment,
    PairQualification,
    PairSkip,
    PairwiseAnalysis,
    PairwiseRun,
    PairwiseTask,
    Project,
    ProjectSetting,
    QualificationStatus,
    QueryResult,
    Review,
    ReviewClaim,
    SamplingRule,
    ScoreResult,
    Snapshot,
    Tag,
    Triple,
    VersionDiff,
    VersionInfo,
    WebhookDelivery,
    WebhookEndpoint,
)

class AsyncGoldsetClient:
    base_url: str
    project: str | None
    poll_interval: float
    retry: RetryPolicy

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = ...,
        poll_interval: float = ...,
        retry: RetryPolicy | None = ...,
        transport: httpx.AsyncBaseTransport | None = ...,
        project: str | None = ...,
    ) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> AsyncGoldsetClient: ...
    async def __aexit__(self, *exc: object) -> None: ...
    async def add_member(
        self,
        username: str,
        role: str,
        *,
        project: str | None = ...,
        idempotency_key: str | None = ...,
    ) -> Member: ...
    async def add_pair_calibration(
        self, pair: str, *, choice: str | None = ..., idempotency_key: str | None = ...
    ) -> CalibrationPair: ...
    async def adjudicate(
        self,
        record: str,
        *,
        acceptability: str,
        grounding: str,
        rationale: str,
        severe_safety: bool = ...,
        primary_failure: str = ...,
        secondary_failures: Iterable[str] = ...,
        idempotency_key: str | None = ...,
    ) -> Adjudication: ...
    async def adjudicate_pair(
        self,
        public_id: str,
        choice: str,
        *,
        rationale: str,
        strength: str = ...,
        idempotency_key: str | None = ...,
    ) -> PairAdjudication: ...
    async def cancel_import(
        self, import_id: int, *, idempotency_key: str | None = ...
    ) -> ImportResult: ...
    async def claim_item(self, *, idempotency_key: str | None = ...) -> LabelClaim: ...
    async def claim_pair(self, *, idempotency_key: str | None = ...) -> BlindPair | None: ...
    async def claim_pair_calibration(
        self, *, idempotency_key: str | None = ...
    ) -> BlindPair | None: ...
    async def claim_review(self, *, idempotency_key: str | None = ...) -> ReviewClaim: ...
    async def compare_jobs(self, job_ids: Iterable[int], *, method: str = ...) -> Comparison: ...
    async def create_import(
        self,
        kind: str,
        source: FileLike | Records,
        *,
        domain: str = ...,
        on_behalf: bool | None = ...,
        version: int | None = ...,
        name: str = ...,
        k: int | None = ...,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def create_pairwise_task(
        self,
        name: str,
        runs: Iterable[int],
        *,
        design: str = ...,
        comparisons_per_question: int | None = ...,
        tier: str = ...,
        seed: int | None = ...,
        gold_version: int | str | None = ...,
        idempotency_key: str | None = ...,
    ) -> PairwiseTask: ...
    async def create_project(
        self,
        slug: str,
        name: str,
        *,
        description: str = ...,
        copy_from: str | None = ...,
        idempotency_key: str | None = ...,
    ) -> Project: ...
    async def create_sampling_rule(
        self, name: str, kind: str, *, idempotency_key: str | None = ..., **settings: Any
    ) -> SamplingRule: ...
    async def create_webhook(
        self,
        url: str,
        events: Iterable[str],
        *,
        description: str = ...,
        enabled: bool = ...,
        idempotency_key: str | None = ...,
    ) -> WebhookEndpoint: ...
    async def delete_project(self, project: str, *, idempotency_key: str | None = ...) -> None: ...
    async def delete_tag(
        self, name: str, *, note: str = ..., idempotency_key: str | None = ...
    ) -> None: ...
    async def delete_webhook(
        self, endpoint_id: int, *, idempotency_key: str | None = ...
    ) -> None: ...
    async def diff_versions(self, a: VersionRef, b: VersionRef) -> VersionDiff: ...
    async def download_version(
        self,
        version: int | str,
        fmt: str = ...,
        dest: str | os.PathLike = ...,
        *,
        progress: ProgressCallback | None = ...,
    ) -> Download: ...
    async def freeze(
        self,
        *,
        domain: str = ...,
        tier: str = ...,
        source: str = ...,
        public_only: bool = ...,
        working_slice: str = ...,
        include_superseded: bool = ...,
        note: str = ...,
        idempotency_key: str | None = ...,
    ) -> FreezeResult: ...
    async def get_adjudication(self, adjudication_id: int) -> Adjudication: ...
    async def get_block_version(self, block_id: str, version: int) -> BlockVersion: ...
    async def get_document(self, document_id: str) -> Document: ...
    async def get_import(self, import_id: int) -> ImportResult: ...
    async def get_job(self, job_id: int) -> ScoreResult: ...
    async def get_label(self, label_id: int) -> Label: ...
    async def get_member(self, member: str | int, *, project: str | None = ...) -> Member: ...
    async def get_pair(self, public_id: str) -> BlindPair: ...
    async def get_pair_adjudication(self, public_id: str) -> PairAdjudication: ...
    async def get_pair_calibration_candidate(self) -> BlindPair | None: ...
    async def get_pair_qualification(self) -> QualificationStatus: ...
    async def get_pairwise_analysis(self, task_id: int) -> PairwiseAnalysis: ...
    async def get_project(self, *, project: str | None = ...) -> Project: ...
    async def get_project_settings(self, *, project: str | None = ...) -> list[ProjectSetting]: ...
    async def get_review(self, review_id: int) -> Review: ...
    async def get_sampling_rule(self, rule_id: int) -> SamplingRule: ...
    async def get_tag(self, name: str) -> Tag: ...
    async def get_triple(self, triple_id: str) -> Triple: ...
    async def get_version(self, version: int | str) -> VersionInfo: ...
    async def get_webhook(self, endpoint_id: int) -> WebhookEndpoint: ...
    async def import_answers(
        self,
        source: FileLike | Records,
        *,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def import_evaluator_outputs(
        self,
        evaluator_id: int,
        source: FileLike | Records,
        *,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def import_pairwise_judgments(
        self,
        task_id: int,
        source: FileLike | Records,
        *,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def import_questions(
        self,
        source: FileLike | Records,
        *,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def import_triples(
        self,
        source: FileLike | Records,
        *,
        on_behalf: bool = ...,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def judge_pair(
        self,
        public_id: str,
        choice: str,
        *,
        strength: str = ...,
        rationale: str = ...,
        active_ms: int | None = ...,
        idempotency_key: str | None = ...,
    ) -> BlindPair: ...
    async def judge_pair_calibration(
        self, public_id: str, choice: str, *, idempotency_key: str | None = ...
    ) -> CalibrationAnswer: ...
    async def latest_version(self) -> VersionInfo | None: ...
    def list_adjudication_queue(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[OpenItem]: ...
    def list_adjudications(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Adjudication]: ...
    def list_agreement(
        self,
        *,
        protocol: str = ...,
        axis: str = ...,
        metric: str = ...,
        tier: str = ...,
        updated_since: Since = ...,
        page_size: int | None = ...,
    ) -> AsyncIterator[Snapshot]: ...
    async def list_alerts(self) -> list[Alert]: ...
    def list_block_versions(
        self, block_id: str, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[BlockVersion]: ...
    def list_document_blocks(
        self, document_id: str, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Block]: ...
    def list_documents(
        self,
        *,
        domain: str = ...,
        q: str = ...,
        updated_since: Since = ...,
        page_size: int | None = ...,
    ) -> AsyncIterator[Document]: ...
    def list_domains(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Domain]: ...
    def list_job_queries(
        self, job_id: int, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[QueryResult]: ...
    def list_jobs(
        self,
        *,
        version: int | str | None = ...,
        system: str = ...,
        status: str = ...,
        updated_since: Since = ...,
        page_size: int | None = ...,
    ) -> AsyncIterator[ScoreResult]: ...
    def list_labels(
        self, *, record: str = ..., updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Label]: ...
    async def list_members(self, *, project: str | None = ...) -> list[Member]: ...
    def list_pair_adjudications(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[PairAdjudication]: ...
    def list_pair_calibration(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[CalibrationPair]: ...
    def list_pair_qualifications(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[PairQualification]: ...
    def list_pairwise_judgments(
        self, task_id: int, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[PairJudgment]: ...
    async def list_pairwise_runs(self) -> list[PairwiseRun]: ...
    def list_pairwise_tasks(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[PairwiseTask]: ...
    async def list_projects(self, *, updated_since: Since = ...) -> list[Project]: ...
    def list_reviews(
        self, *, triple: str = ..., updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Review]: ...
    def list_sampling_rules(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[SamplingRule]: ...
    def list_tags(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Tag]: ...
    def list_triples(
        self, *, state: str = ..., updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[Triple]: ...
    def list_versions(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[VersionInfo]: ...
    def list_webhook_deliveries(
        self, endpoint_id: int, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[WebhookDelivery]: ...
    def list_webhooks(
        self, *, updated_since: Since = ..., page_size: int | None = ...
    ) -> AsyncIterator[WebhookEndpoint]: ...
    async def patch_webhook(
        self, endpoint_id: int, *, idempotency_key: str | None = ..., **changes: Any
    ) -> WebhookEndpoint: ...
    async def push_answers(
        self,
        path_or_records: FileLike | Records,
        *,
        wait: bool = ...,
        timeout: float = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def push_questions(
        self,
        path_or_records: FileLike | Records,
        *,
        wait: bool = ...,
        timeout: float = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def redeliver_webhook(
        self, delivery_id: int, *, idempotency_key: str | None = ...
    ) -> WebhookDelivery: ...
    async def remove_member(
        self, member: str | int, *, project: str | None = ..., idempotency_key: str | None = ...
    ) -> None: ...
    async def retry_import(
        self, import_id: int, *, idempotency_key: str | None = ...
    ) -> ImportResult: ...
    async def score_run(
        self,
        version: int | str,
        run_file: FileLike | Records,
        *,
        name: str = ...,
        k: int = ...,
        wait: bool = ...,
        timeout: float = ...,
        progress: ProgressCallback | None = ...,
    ) -> ScoreResult: ...
    async def send_test_webhook(
        self, endpoint_id: int, *, idempotency_key: str | None = ...
    ) -> WebhookDelivery: ...
    async def set_member_role(
        self,
        member: str | int,
        role: str,
        *,
        project: str | None = ...,
        idempotency_key: str | None = ...,
    ) -> Member: ...
    async def set_tag(
        self, name: str, version: VersionRef, *, note: str = ..., idempotency_key: str | None = ...
    ) -> Tag: ...
    async def skip_pair(
        self, public_id: str, reason: str, *, idempotency_key: str | None = ...
    ) -> PairSkip: ...
    async def submit_label(
        self,
        record: str,
        *,
        acceptability: str,
        grounding: str,
        evidence_sufficiency: str,
        citation_correctness: str,
        conflict_handling: str,
        safety_boundary: str,
        severe_safety: bool = ...,
        primary_failure: str = ...,
        secondary_failures: Iterable[str] = ...,
        rationale: str = ...,
        idempotency_key: str | None = ...,
    ) -> Label: ...
    async def submit_review(
        self,
        assignment: int,
        verdict: str,
        *,
        flags: Iterable[str] = ...,
        entailment_direction: str = ...,
        disagreement_category: str = ...,
        comment: str = ...,
        idempotency_key: str | None = ...,
    ) -> Review: ...
    async def submit_run(
        self,
        version: VersionRef,
        run: FileLike | Records | list[dict[str, Any]],
        *,
        name: str = ...,
        k: int = ...,
        as_json: bool = ...,
        idempotency_key: str | None = ...,
        progress: ProgressCallback | None = ...,
    ) -> ImportResult: ...
    async def undo_pair_judgment(self, *, idempotency_key: str | None = ...) -> BlindPair: ...
    async def update_project(
        self,
        *,
        name: str | None = ...,
        description: str | None = ...,
        archived: bool | None = ...,
        project: str | None = ...,
        idempotency_key: str | None = ...,
    ) -> Project: ...
    async def update_project_settings(
        self,
        changes: Mapping[str, Any] | None = ...,
        *,
        project: str | None = ...,
        idempotency_key: str | None = ...,
        **settings: Any,
    ) -> list[ProjectSetting]: ...
    async def update_sampling_rule(
        self, rule_id: int, *, idempotency_key: str | None = ..., **changes: Any
    ) -> SamplingRule: ...
    async def update_webhook(
        self,
        endpoint_id: int,
        *,
        url: str,
        events: Iterable[str],
        description: str = ...,
        enabled: bool = ...,
        idempotency_key: str | None = ...,
    ) -> WebhookEndpoint: ...
    async def wait_for_import(
        self, import_id: int, *, timeout: float = ..., progress: ProgressCallback | None = ...
    ) -> ImportResult: ...
    async def wait_for_job(
        self, job_id: int, *, timeout: float = ..., progress: ProgressCallback | None = ...
    ) -> ScoreResult: ...
