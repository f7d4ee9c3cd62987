"""In Chromium: an admin freezes a version, downloads the gold JSONL, uploads two runs scored by
a real worker, watches the progress bar reach 100 %, and compares the two runs."""

import json

import pytest

from goldset.models import ScoringJob
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.worker]


@pytest.fixture
def gold_set(make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    r1, r2 = make_user(Role.ANNOTATOR, username="rv1"), make_user(Role.ANNOTATOR, username="rv2")
    triples = []
    for _ in range(5):
        triple = write_triple(author)
        review(r1, triple)
        review(r2, triple)
        triples.append(triple)
    return [
        (t.external_id, t.current_revision.expected_block_version.block.block_id) for t in triples
    ]


def run_text(gold_set, *, rotate):
    blocks = [b for _, b in gold_set]
    return "".join(
        f"{tid} Q0 {blocks[(i + rotate) % len(blocks)]} 1 2.0 sys\n{tid} Q0 {blocks[(i + rotate + 1) % len(blocks)]} 2 1.0 sys\n"
        for i, (tid, _) in enumerate(gold_set)
    )


def upload(page, tmp_path, name, text):
    path = tmp_path / f"{name}.trec"
    path.write_text(text)
    page.goto("/versions/jobs/")
    page.fill("#id_name", name)
    page.set_input_files("#id_file", str(path))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url("**/imports/*/")  # the run is stored and read by a worker first
    page.locator("#scoring-job-link").click(timeout=60_000)
    page.wait_for_url("**/versions/jobs/*/")
    page.locator("#job-progress-bar[value='100']").wait_for(timeout=60_000)
    assert page.locator("#job-progress-value").inner_text() == "100 %"
    page.locator("#aggregates").wait_for()
    return int(page.url.rstrip("/").rsplit("/", 1)[-1])


def test_admin_freezes_downloads_scores_two_runs_and_compares(
    celery_worker_process, browser_login, admin_user, gold_set, tmp_path
):
    page = browser_login(admin_user)
    page.click("#admin-actions >> text=Freeze a gold version")
    page.click("#freeze-form button[value=preview]")
    assert "5 added, 0 removed, 0 changed" in page.locator("#preview-diff").inner_text()
    page.click("#freeze-button")
    page.wait_for_url("**/versions/v1/")
    assert "Gold version v1" in page.locator("h1").inner_text()

    with page.expect_download() as download_info:
        page.click("#version-files a[data-format=gold_jsonl]")
    lines = open(download_info.value.path(), encoding="utf-8").read().splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(t for t, _ in gold_set)

    first = upload(page, tmp_path, "perfect", run_text(gold_set, rotate=0))
    second = upload(page, tmp_path, "shifted", run_text(gold_set, rotate=1))
    assert ScoringJob.objects.get(pk=first).attempts == 1
    page.goto(f"/versions/jobs/{first}/")
    ndcg = page.locator("#aggregates tr", has_text="ndcg@10").first.inner_text()
    assert "1.0000" in ndcg  # the perfect run
    page.screenshot(path=str(tmp_path.parent / "exports-job-page.png"), full_page=True)
    page.check(f"#compare-with input[value='{second}']")
    page.click("#compare-with button[type=submit]")
    page.wait_for_url("**/versions/jobs/compare/**")
    table = page.locator("#paired-tests").inner_text()
    assert "perfect" in table and "shifted" in table and "Wilcoxon signed-rank" in table
    assert page.locator("#per-query tbody tr").count() == 5
