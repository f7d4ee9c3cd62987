"""Tier requirements have one home, and templates name tiers through it, never by code."""

from pathlib import Path

import pytest

from goldset.models import Tier
from goldset.rules.tiers import RECORD, TRIPLE, required_for

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


@pytest.mark.parametrize(
    ("kind", "tier", "needed"),
    [
        (TRIPLE, Tier.GOLD, 2),
        (TRIPLE, Tier.TRIAGE, 1),
        (RECORD, Tier.GOLD, 3),
        (RECORD, Tier.TRIAGE, 1),
    ],
)
def test_each_tier_needs_the_protocols_number_of_reviews_or_labels(kind, tier, needed):
    assert required_for(kind, tier) == needed


def test_no_template_spells_out_a_tier_code():
    codes = [str(t) for t in Tier]
    offenders = [
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if any(code in path.read_text() for code in codes)
    ]
    assert offenders == []
