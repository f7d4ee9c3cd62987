"""In Chromium: an admin uploads an evaluator's outputs on its page, lands on the import's page
while a real worker imports the file, sees the result and goes back to the evaluator, whose page
lists the accepted file; a bad file ends rejected with its line and field."""

import json

import pytest

from goldset.models import EvaluatorOutput
from goldset.services.evaluators import create_evaluator
from tests.factories import AnswerRecordFactory, default_project

pytestmark = [pytest.mark.browser, pytest.mark.worker]


def test_admin_uploads_evaluator_outputs_and_watches_the_worker_import_them(
    celery_worker_process, browser_login, admin_user, tmp_path
):
    judge = create_evaluator(project=default_project(), name="judge", version="1", kind="llm_judge")
    records = [AnswerRecordFactory() for _ in range(4)]
    page = browser_login(admin_user)

    def upload(name, text):
        path = tmp_path / name
        path.write_text(text)
        page.goto(f"/evaluators/{judge.pk}/")
        page.set_input_files("#id_file", str(path))
        page.click("form.card button[type=submit]")
        page.wait_for_url("**/imports/*/")  # stored; a worker reads it

    bad = json.dumps({"record_id": records[0].public_id, "labels": {"grounding": "vague"}})
    upload("bad.jsonl", bad + "\n")
    errors = page.locator("#import-errors")
    errors.wait_for(timeout=60_000)
    assert "line 1: labels.grounding: 'vague' is not one of" in errors.inner_text()
    assert not EvaluatorOutput.objects.exists()

    good = "".join(
        json.dumps({"record_id": r.public_id, "score": 0.5, "unsafe_probability": 0.1}) + "\n"
        for r in records
    )
    upload("good.jsonl", good)
    page.locator("#import-summary").wait_for(timeout=60_000)
    assert "Imported" in page.locator("#import-progress").inner_text()
    page.click("#evaluator-link")
    page.wait_for_url(f"**/evaluators/{judge.pk}/")
    assert "good.jsonl" in page.locator("#imports").inner_text()
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 4
