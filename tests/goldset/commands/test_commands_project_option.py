"""Every command takes ``--project <slug>`` (issue 27): with a real project other than the default
one, what it imports lands in that project only and what it reads or exports is that project's
only (the default project holds look-alike data — the same ids — that must stay untouched or
unread); an unknown project exits 2 naming it, nothing done."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from goldset.models import (
    AnswerRecord,
    Document,
    Domain,
    GoldVersion,
    JobStatus,
    PairJudgment,
    PairwisePair,
    Project,
    Question,
    RecordStatus,
    ScoringJob,
    Triple,
    VersionTag,
)
from goldset.services.agreement import ratings_frame, spot_check_frame, store_agreement_snapshots
from goldset.services.freeze import store_frozen_version
from goldset.services.projects import grant_role
from tests.factories import (
    AnswerRecordFactory,
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
    default_project,
    gold_row_for,
)
from tests.goldset.pairwise_support import make_task, qualify
from tests.goldset.services.test_agreement import make_ratings
from workbench.roles import Role

pytestmark = pytest.mark.django_db

SLUG = "beta"


@pytest.fixture
def beta():
    return Project.objects.create(name="Beta", slug=SLUG)


def corpus(project, *, n=2, tag="cmd"):
    """``n`` block versions ``blk-<tag>-<i>`` of ``project``'s domain ``dom-<tag>`` (the same
    ids in every project that gets one)."""
    domain = Domain.objects.create(project=project, slug=f"dom-{tag}", name=tag)
    document = DocumentFactory(project=project, domain=domain, document_id=f"doc-{tag}")
    return [
        BlockVersionFactory(
            block=BlockFactory(project=project, document=document, block_id=f"blk-{tag}-{i}")
        )
        for i in range(n)
    ]


def write(tmp_path, name: str, *lines) -> str:
    path = tmp_path / name
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return str(path)


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def frozen(project, versions, *, prefix="Q"):
    rows = [gold_row_for(bv, triple_id=f"{prefix}-{i:03d}") for i, bv in enumerate(versions)]
    return store_frozen_version(project=project, rows=rows, actor=None)


# ---------------------------------------------------------------- imports land in the project


def test_import_corpus_writes_into_the_named_project(beta, tmp_path):
    Domain.objects.create(project=beta, slug="dom-beta", name="Beta domain")
    Domain.objects.create(project=default_project(), slug="dom-beta", name="Look-alike")
    manifest = write(tmp_path, "m.jsonl", {
        "document_id": "doc-shared", "title": "Beta manual", "domain": "dom-beta", "authority": 1,
        "blocks": [{"block_id": "blk-shared", "versions": [{"text": "Beta words."}]}],
    })  # fmt: skip
    summary = json.loads(run("import_corpus", manifest, "--project", SLUG))
    assert (summary["documents_created"], summary["versions_created"]) == (1, 1)
    assert Document.objects.get(document_id="doc-shared").project == beta
    assert not Document.objects.filter(project=default_project()).exists()


def test_import_answers_writes_into_the_named_project_with_its_questions(beta, tmp_path):
    (block,) = corpus(beta, n=1)
    default_question = QuestionFactory(question_id="q-shared")  # the same id, default project
    beta_question = QuestionFactory(
        project=beta, domain=Domain.objects.get(project=beta), question_id="q-shared"
    )
    log = write(tmp_path, "a.jsonl", {
        "run_id": "r-beta", "system_id": "s-beta", "question_id": "q-shared", "answer": "A.",
        "citations": [block.block.block_id],
    })  # fmt: skip
    assert json.loads(run("import_answers", log, "--project", SLUG))["records_created"] == 1
    record = AnswerRecord.objects.get()
    assert (record.project, record.question, record.run.project) == (beta, beta_question, beta)
    assert not AnswerRecord.objects.filter(question=default_question).exists()


def test_import_triples_writes_into_the_named_project(beta, tmp_path):
    (version,) = corpus(beta, n=1)
    author = UserFactory(username="beta-author")
    grant_role(project=beta, user=author, role=Role.ANNOTATOR)
    line = write(tmp_path, "t.jsonl", {
        "question": "What does the beta block say?", "expected_answer": "Beta words.",
        "expected_block": {"block_id": version.block.block_id, "version": 1},
        "metadata": {"domain": "dom-cmd", "task_type": "factual_qa", "source": "public_rfp"},
    })  # fmt: skip
    # The default project has no such block: the same file is refused there, nothing stored.
    with pytest.raises(CommandError, match="no block version blk-cmd-0 v1") as refused:
        call_command("import_triples", line, "--actor", author.username)
    assert refused.value.returncode == 2 and not Triple.objects.exists()
    run("import_triples", line, "--project", SLUG, "--actor", author.username)
    triple = Triple.objects.get()
    assert triple.project == beta and triple.current_revision.expected_block_version == version


def _pairwise_task(project, *, name="Compare"):
    lead = UserFactory(username=f"pw-lead-{project.slug}")
    grant_role(project=project, user=lead, role=Role.LEAD)
    domain = Domain.objects.create(project=project, slug=f"pw-{project.slug}", name="Pairs")
    questions = [QuestionFactory(project=project, domain=domain, question_id=f"pq-{i}") for i in (1, 2)]  # fmt: skip
    runs = []
    for j in (1, 2):
        system = SystemFactory(project=project, system_id=f"sys-{project.slug}-{j}")
        runs.append(RunFactory(system=system, run_id=f"run-{project.slug}-{j}"))
        for question in questions:
            AnswerRecordFactory(run=runs[-1], question=question, answer=f"Answer {j}.")
    return make_task(runs, actor=lead, project=project, name=name)


def test_import_pair_judgments_reads_the_task_of_the_named_project(beta, tmp_path):
    beta_task = _pairwise_task(beta)
    default_task = _pairwise_task(default_project())  # the same name in the default project
    reviewer = UserFactory(username="pw-reviewer")
    grant_role(project=beta, user=reviewer, role=Role.ANNOTATOR)
    qualify(reviewer, project=beta)
    pair = PairwisePair.objects.filter(task=beta_task).order_by("position").first()
    line = {"pair": pair.public_id, "reviewer": reviewer.username, "preference": "a",
            "strength": "clearly"}  # fmt: skip
    path = write(tmp_path, "j.jsonl", line)
    with pytest.raises(CommandError) as refused:  # the default project's task has no such pair
        call_command("import_pair_judgments", path, "--task", "Compare")
    assert refused.value.returncode == 2 and not PairJudgment.objects.exists()
    summary = json.loads(run("import_pair_judgments", path, "--project", SLUG, "--task", "Compare"))
    assert summary["judgments"] == 1
    assert PairJudgment.objects.get().pair.task == beta_task
    assert not PairJudgment.objects.filter(pair__task=default_task).exists()


# ---------------------------------------------------------------- reads and exports are the project's


def test_agreement_report_reads_the_named_project(beta):
    rows = make_ratings(seed=3, n_items=12, week="2026-W46")
    store_agreement_snapshots(
        project=beta, ratings=ratings_frame(rows), spot_checks=spot_check_frame([]), n_resamples=20
    )
    figures = json.loads(run("agreement_report", "--project", SLUG))["figures"]
    assert figures and {f["week"] for f in figures} <= {"2026-W46", ""}
    assert json.loads(run("agreement_report"))["figures"] == []  # the default project has none


def test_tag_version_tags_the_named_projects_version(beta):
    frozen(beta, corpus(beta))
    with pytest.raises(CommandError, match="v1") as missing:  # no v1 in the default project
        call_command("tag_version", "release", "--version", "1", stdout=StringIO())
    assert missing.value.returncode == 2
    created = json.loads(run("tag_version", "--project", SLUG, "release", "--version", "1"))
    assert created["version"] == 1 and created["created"]
    tag = VersionTag.objects.get()
    assert tag.project == beta and tag.version.project == beta
    assert json.loads(run("tag_version", "--project", SLUG)) == [{"tag": "release", "version": 1}]
    assert json.loads(run("tag_version")) == []


def test_export_adjudication_exports_the_named_projects_items(beta, tmp_path):
    corpus(beta, n=1)
    beta_question = QuestionFactory(project=beta, domain=Domain.objects.get(project=beta))
    beta_run = RunFactory(system=SystemFactory(project=beta, system_id="sys-beta"))
    beta_record = AnswerRecordFactory(question=beta_question, run=beta_run)
    default_record = AnswerRecordFactory()
    AnswerRecord.objects.filter(pk__in=[beta_record.pk, default_record.pk]).update(
        status=RecordStatus.FINAL, final_acceptability="acceptable"
    )
    out = tmp_path / "beta.jsonl"
    call_command("export_adjudication", "--project", SLUG, "-o", out, stdout=StringIO())
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert [i["item_id"] for i in items] == [beta_record.public_id]
    default_out = tmp_path / "default.jsonl"
    call_command("export_adjudication", "-o", default_out, stdout=StringIO())
    assert [json.loads(x)["item_id"] for x in default_out.read_text().splitlines()] == [
        default_record.public_id
    ]


def test_gate_scores_against_the_named_projects_version(beta, tmp_path):
    versions = corpus(beta, n=3, tag="gate")
    beta_v1 = frozen(beta, versions)
    trec = "".join(f"Q-{i:03d} Q0 {bv.block.block_id} 1 9.0 sys\n" for i, bv in enumerate(versions))
    run_file = tmp_path / "r.trec"
    run_file.write_text(trec)
    rules = tmp_path / "g.rules"
    rules.write_text("ndcg@10 >= 0.99\n")
    args = ["--version", "1", "--run", str(run_file), "--rules", str(rules)]
    with pytest.raises(CommandError) as elsewhere:  # the default project has no v1
        call_command("gate", *args, stdout=StringIO(), stderr=StringIO())
    assert elsewhere.value.returncode == 2 and "v1 is not frozen in default" in str(elsewhere.value)
    report = json.loads(run("gate", "--project", SLUG, *args))
    assert report["verdict"] == "PASSED" and report["run"]["figures"]["ndcg@10"] == 1.0
    job = ScoringJob.objects.get(pk=report["run"]["job"])
    assert (job.project, job.version, job.status) == (beta, beta_v1, JobStatus.SUCCEEDED)
    assert not GoldVersion.objects.filter(project=default_project()).exists()


# ---------------------------------------------------------------- an unknown project


@pytest.mark.parametrize(
    "command,args",
    [
        ("import_corpus", ["{file}"]),
        ("import_answers", ["{file}"]),
        ("import_triples", ["{file}", "--actor", "nobody"]),
        ("import_pair_judgments", ["{file}", "--task", "Compare"]),
        ("agreement_report", []),
        ("tag_version", ["release", "--version", "1"]),
        ("export_adjudication", ["-o", "{out}"]),
        ("gate", ["--version", "1", "--run", "{file}", "--rules", "{rules}"]),
    ],
)
def test_an_unknown_project_exits_2_naming_it(command, args, tmp_path):
    paths = {
        "file": write(tmp_path, "in.jsonl", {"any": "line"}),
        "rules": write(tmp_path, "g.rules", "ndcg@10 >= 0.5"),
        "out": str(tmp_path / "out.jsonl"),
    }
    argv = [a.format(**paths) for a in args]
    with pytest.raises(CommandError) as unknown:
        call_command(command, *argv, "--project", "nowhere", stdout=StringIO(), stderr=StringIO())
    assert unknown.value.returncode == 2
    assert "No project 'nowhere'" in str(unknown.value)
    assert not (tmp_path / "out.jsonl").exists()
    assert not Document.objects.exists() and not AnswerRecord.objects.exists()
    assert not Triple.objects.exists() and not ScoringJob.objects.exists()
    assert not Question.objects.exists()
