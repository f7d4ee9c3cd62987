import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.goldset.web.test_agreement_dashboard import store

pytestmark = pytest.mark.django_db


def test_report_prints_the_dashboard_figures_as_json_filtered_by_scope(capsys):
    store(15)
    call_command(
        "agreement_report",
        scope="protocol=answer_label,axis=grounding,metric=krippendorff_alpha,tier=tier_b,task_type=factual_qa,week=2026-W46",
    )
    out = json.loads(capsys.readouterr().out)
    assert len(out["figures"]) == 1
    figure = out["figures"][0]
    assert (figure["axis"], figure["task_type"], figure["week"]) == (
        "grounding",
        "factual_qa",
        "2026-W46",
    )
    assert figure["ci_low"] < figure["value"] < figure["ci_high"]
    assert "alerts" in out


def test_report_as_csv(capsys):
    store(15)
    call_command("agreement_report", scope="metric=fleiss_kappa", format="csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {r["metric"] for r in rows} == {"fleiss_kappa"}


def test_a_bad_scope_names_the_allowed_keys():
    with pytest.raises(CommandError, match="not key=value with key one of"):
        call_command("agreement_report", scope="colour=blue")
