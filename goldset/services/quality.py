"""Working slices of the gold set (seed 000, DESIGN.md §5.7): a seeded, domain-stratified sample
of ``WORKING_SLICE_SIZE`` gold triples drawn once per quarter. The seed and the ids are recorded,
and :func:`select_working_slice` reproduces the ids from the seed and the gold set."""

import random
import re
import secrets

from django.db import transaction
from django.utils import timezone

from goldset.conf import curation_setting
from goldset.exceptions import GoldsetError
from goldset.models import Triple, TripleState, WorkingSlice
from workbench.services.audit import record_event

QUARTER = re.compile(r"^(\d{4})Q([1-4])$")


def current_quarter(now=None) -> str:
    now = now or timezone.now()
    return f"{now.year}Q{(now.month - 1) // 3 + 1}"


def allocate(counts: dict[str, int], size: int) -> dict[str, int]:
    """Proportional allocation of ``size`` over strata (largest remainder, ties by name)."""
    total = sum(counts.values())
    if total <= size:
        return dict(counts)
    exact = {k: size * n / total for k, n in counts.items()}
    quota = {k: int(v) for k, v in exact.items()}
    rest = size - sum(quota.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - quota[k]), k))[:rest]:
        quota[k] += 1
    return quota


def select_working_slice(
    by_domain: dict[str, list[int]], *, size: int, seed: int
) -> dict[str, list[int]]:
    """The pure draw: per domain (in slug order) a ``random.Random(seed)`` sample of its quota."""
    rng = random.Random(seed)
    quota = allocate({d: len(ids) for d, ids in by_domain.items()}, size)
    return {d: sorted(rng.sample(sorted(by_domain[d]), quota[d])) for d in sorted(by_domain)}


def gold_ids_by_domain(*, project) -> dict[str, list[int]]:
    """The ids of ``project``'s gold triples by domain slug."""
    by_domain: dict[str, list[int]] = {}
    gold = Triple.objects.filter(project=project, state=TripleState.GOLD)
    for pk, slug in gold.values_list("pk", "domain__slug"):
        by_domain.setdefault(slug, []).append(pk)
    return by_domain


@transaction.atomic
def draw_working_slice(*, project, quarter: str, actor, seed: int | None = None) -> WorkingSlice:
    """Draw a quarter's working slice of ``project``'s current gold set (the project's
    ``WORKING_SLICE_SIZE``), once per quarter and project.

    Raises GoldsetError for a malformed quarter ("2026Q1") or one already drawn."""
    if not QUARTER.match(quarter):
        raise GoldsetError(f"Quarter must look like 2026Q1, got {quarter!r}.")
    if WorkingSlice.objects.filter(project=project, quarter=quarter).exists():
        raise GoldsetError(f"The working slice for {quarter} was already drawn.")
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    size = int(curation_setting("WORKING_SLICE_SIZE", project=project))
    by_domain = gold_ids_by_domain(project=project)
    drawn = select_working_slice(by_domain, size=size, seed=seed)
    working_slice = WorkingSlice.objects.create(
        project=project,
        quarter=quarter,
        seed=seed,
        size=size,
        triple_ids=sorted(pk for ids in drawn.values() for pk in ids),
        strata={d: len(ids) for d, ids in drawn.items()},
        gold_count=sum(len(ids) for ids in by_domain.values()),
        drawn_by=actor,
    )
    record_event(
        actor=actor,
        verb="working_slice_drawn",
        obj=working_slice,
        detail={"seed": seed, "size": size, "strata": working_slice.strata},
    )
    return working_slice
