"""What the client returns: plain frozen dataclasses built from the API's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
        )


@dataclass(frozen=True)
class FreezeResult:
    """``created`` is False when the selection equalled the latest version (nothing created)."""

    created: bool
    detail: str
    version: VersionInfo


@dataclass(frozen=True)
class ImportResult:
    """A background import job."""

    id: int
    kind: str
    status: str
    summary: dict[str, Any]
    message: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportResult:
        return cls(
            id=int(data["id"]),
            kind=str(data.get("kind") or ""),
            status=str(data.get("status") or ""),
            summary=dict(data.get("summary") or {}),
            message=str(data.get("message") or ""),
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
