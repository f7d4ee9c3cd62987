"""Benchmark: import a valid ~200 MB file of each kind through the upload pages and a worker,
and score a ~200 MiB run.

Usage (PostgreSQL and Redis required; the benchmark database is migrated and reset here):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gs_bench_imports \
    REDIS_URL=redis://127.0.0.1:6379/8 python bench/bench_imports.py [--mb 200] [--kinds …]

Files are generated synthetically in /tmp/bench_imports (never committed). For each kind a fresh
``gunicorn`` (one sync worker: the *web* process) and a fresh ``celery worker --pool=solo`` (the
*worker* process) are started, so each process's peak RSS (``VmHWM``) belongs to that kind only.
An admin logs in over HTTP and uploads the file to the kind's page; we time the request (upload,
Django's multipart parsing into the import storage directory with the sha256, renaming the file
into place, queueing) and the job (from the response to ``succeeded``), and read both processes'
peak RSS. Kinds run in dependency order: corpus (JSONL manifest) → Unrag JSON → questions
(evidence in the corpus) → answer logs (for those questions) → triples → run (10,000 of the
triples are made gold and frozen as a version, untimed; a TREC run of ~200 MiB over those
queries and the corpus's blocks is uploaded to the scoring page; the scoring job's time is
reported separately) → evaluator outputs (needs none of the others: one answer record per line
is bulk-inserted untimed, the file is uploaded to the evaluator's page; ``--kinds evaluator``
generates only its own file). ``--keep`` skips the database reset (to run one kind after another
invocation). Each line printed is one kind's JSON result, with the file's longest line.

``--run-formats run,run-tab,run-jsonl,answer-log`` measures the run upload in each layout the
scoring page takes, without the 200 MB corpus and triples imports: an untimed set-up bulk-creates
100,000 blocks and freezes 10,000 gold rows, then the same ~200 MiB run (10,000 queries, 476
documents each) is written single-space TREC (the columnar reader), tab-separated TREC (the
streaming pandas blocks) and JSONL (one line per query), plus a ~200 MiB JSONL answer log (the
version's questions answered by enough systems); each is uploaded and imported and scored by a
fresh worker, whose peak RSS covers the import and scoring jobs.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(os.environ.get("BENCH_WORK", "/tmp/bench_imports"))  # another folder: BENCH_WORK
PORT = int(os.environ.get("BENCH_PORT", "8793"))
PASSWORD = "bench-pass-123"
KINDS = ["corpus", "unrag", "questions", "answers", "triples", "run", "evaluator"]
RUN_QUERIES = 10_000
PAGES = {
    "run": ("/versions/jobs/", {"name": "bench-run", "k": "10"}),
    "corpus": ("/corpus/import/", {}),
    "unrag": ("/corpus/import/", {"domain": "federal_it"}),
    "questions": ("/answers/import/", {"kind": "questions"}),
    "answers": ("/answers/import/", {"kind": "answers"}),
    "triples": ("/curation/import/", {}),
    "evaluator": ("/evaluators/{pk}/", {}),  # the evaluator's page; pk set by prepare_evaluator
}
EVALUATOR_RUN = "run-evaluator-bench"
PAD = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "


def env() -> dict:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-secret"),
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "LOG_LEVEL": "WARNING",
    }


def setup_django():
    os.environ.update({k: v for k, v in env().items() if k not in os.environ})
    import django

    django.setup()


# ---------------------------------------------------------------- synthetic files


LONGEST: dict[str, int] = {}


def _lines_until(path: Path, target: int, make) -> int:
    n, longest = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while out.tell() < target:
            line = json.dumps(make(n)) + "\n"
            longest = max(longest, len(line.encode()))
            out.write(line)
            n += 1
    LONGEST[path.name] = longest
    return n


def text_of(i: int, size: int) -> str:
    body = (PAD * (size // len(PAD) + 1))[:size]
    return f"block {i}: {body}"


def generate(mb: int) -> dict[str, int]:
    """Write every kind's file (if missing) and return its record count."""
    WORK.mkdir(exist_ok=True)
    target = mb * 1024 * 1024
    counts_file = WORK / f"counts-{mb}.json"
    if counts_file.exists():
        return json.loads(counts_file.read_text())
    counts = {}
    counts["corpus"] = _lines_until(
        WORK / f"corpus-{mb}.jsonl",
        target,
        lambda i: {
            "document_id": f"doc-{i:07d}",
            "title": f"Document {i}",
            "domain": "federal_it",
            "authority": 0.5,
            "blocks": [
                {
                    "block_id": f"blk-{i:07d}",
                    "versions": [{"text": text_of(i, 2000), "section": "§1"}],
                }
            ],
        },
    )
    n_blocks = counts["corpus"]
    with (WORK / f"unrag-{mb}.json").open("w", encoding="utf-8") as out:
        out.write('{"version": "1", "documents": [\n')
        i = 0
        while out.tell() < target:
            if i:
                out.write(",\n")
            item = json.dumps(
                {"sourceId": f"u-{i:07d}", "content": text_of(i, 2000), "metadata": {}}
            )
            LONGEST["unrag"] = max(LONGEST.get("unrag", 0), len(item) + 2)
            out.write(item)
            i += 1
        out.write("\n]}\n")
    counts["unrag"] = i
    counts["questions"] = _lines_until(
        WORK / f"questions-{mb}.jsonl",
        target,
        lambda i: {
            "question_id": f"q-{i:07d}",
            "domain": "federal_it",
            "task_family": "policy",
            "task_type": "factual_qa" if i % 2 else "summarization",
            "question": f"Question {i}: {text_of(i, 700)}?",
            "uncertainty": round((i % 100) / 100, 2),
            "gold_evidence": [
                {"passage_id": f"blk-{i % n_blocks:07d}", "role": "rule", "label": "sufficient"}
            ],
        },
    )
    n_questions = counts["questions"]
    counts["answers"] = _lines_until(
        WORK / f"answers-{mb}.jsonl",
        target,
        lambda i: {
            "run_id": f"run-{i // n_questions}",
            "system_id": "sys-bench",
            "question_id": f"q-{i % n_questions:07d}",
            "answer": f"Answer {i}: {text_of(i, 600)}",
            "citations": [f"blk-{i % n_blocks:07d}"],
            "retrieved_passages": [
                {"passage_id": f"blk-{(i + r) % n_blocks:07d}", "rank": r + 1} for r in range(3)
            ],
            "latency_ms": 800 + i % 500,
            "cost_usd": 0.002,
        },
    )
    counts["triples"] = _lines_until(
        WORK / f"triples-{mb}.jsonl",
        target,
        lambda i: {
            "id": f"bt-{i:07d}",
            "question": f"Triple question {i}: {text_of(i, 700)}?",
            "expected_block": {"block_id": f"blk-{i % n_blocks:07d}", "version": 1},
            "expected_answer": f"Expected answer {i}.",
            "metadata": {
                "domain": "federal_it",
                "task_type": "factual_qa",
                "source": "public_rfp",
                "added_by": "bench-admin",
            },
        },
    )
    counts["longest"] = LONGEST
    counts_file.write_text(json.dumps(counts))
    return counts


def generate_run(mb: int, queries: list[str], n_blocks: int) -> tuple[Path, int, int]:
    """A TREC run just under ``mb`` MiB (the scoring page's cap is 200 MiB): every query ranks
    distinct corpus blocks. Returns the path, its line count and its longest line."""
    path = WORK / f"run-{mb}.trec"
    target = mb * 1024 * 1024 - 64 * 1024
    lines, longest = 0, 0
    if path.exists():
        with path.open("rb") as handle:
            for raw in handle:
                lines, longest = lines + 1, max(longest, len(raw))
        return path, lines, longest
    per_line = len(f"{queries[0]} Q0 blk-0000000 100 0.12345 bench\n")
    depth = min(n_blocks - 1, target // (per_line * len(queries)))
    with path.open("w", encoding="ascii") as out:
        for q, qid in enumerate(queries):
            for rank in range(1, depth + 1):
                line = f"{qid} Q0 blk-{(q + rank) % n_blocks:07d} {rank} {1 / rank:.5f} bench\n"
                longest = max(longest, len(line))
                out.write(line)
                lines += 1
    return path, lines, longest


def evaluator_line(i: int) -> dict:
    """One judgement of answer record ``evr-<i>`` with a judge's rationale (an extra member the
    importer ignores), so a line weighs about as much as the other kinds' lines."""
    return {
        "record_id": f"evr-{i:07d}",
        "evaluator": "bench-judge",
        "labels": {
            "acceptability": "acceptable" if i % 3 else "unacceptable",
            "grounding": ("fully_grounded", "partially_grounded", "misgrounded")[i % 3],
        },
        "score": round((i % 1000) / 1000, 3),
        "unsafe_probability": round((i % 97) / 97, 4),
        "rationale": f"Judge rationale {i}: {text_of(i, 700)}",
    }


def generate_evaluator(mb: int) -> tuple[Path, int, int]:
    """Evaluator outputs of about ``mb`` MiB, one line per answer record ``evr-0000000``…
    Returns the path, its line count and its longest line."""
    path = WORK / f"evaluator-{mb}.jsonl"
    meta = WORK / f"evaluator-{mb}.json"
    if path.exists() and meta.exists():
        lines, longest = json.loads(meta.read_text())
        return path, lines, longest
    WORK.mkdir(exist_ok=True)
    lines = _lines_until(path, mb * 1024 * 1024, evaluator_line)
    meta.write_text(json.dumps([lines, LONGEST[path.name]]))
    return path, lines, LONGEST[path.name]


def prepare_evaluator(n: int) -> int:
    """Untimed set-up: ``n`` answer records ``evr-<i>`` (one question each, one run, bulk
    inserts) and the evaluator ``bench-judge 1``; returns the evaluator's pk."""
    from django.contrib.auth import get_user_model

    from goldset.models import (
        AnswerRecord,
        Domain,
        Evaluator,
        Question,
        Run,
        System,
        Tier,
        default_project_id,
    )
    from goldset.services.evaluators import create_evaluator

    domain = Domain.objects.get(slug="federal_it")
    system, _ = System.objects.get_or_create(
        project_id=default_project_id(), system_id="sys-evaluator-bench"
    )
    run, _ = Run.objects.get_or_create(
        project_id=system.project_id, run_id=EVALUATOR_RUN, defaults={"system": system}
    )
    have = AnswerRecord.objects.filter(run=run).count()
    for start in range(have, n, 5000):
        indices = range(start, min(n, start + 5000))
        questions = Question.objects.bulk_create(
            Question(
                project_id=domain.project_id,
                question_id=f"evq-{i:07d}",
                domain=domain,
                task_family="policy",
                text=f"Question {i}?",
                content_sha256=f"{i:064d}",
            )
            for i in indices
        )
        AnswerRecord.objects.bulk_create(
            AnswerRecord(
                project_id=run.project_id,
                public_id=f"evr-{i:07d}",
                run=run,
                question=question,
                domain=domain,
                queue_rank=i,
                answer=f"Answer {i}.",
                tier=Tier.GOLD,
                routing_rule="bench",
                rules_version=1,
                labels_required=3,
            )
            for i, question in zip(indices, questions, strict=True)
        )
    evaluator = Evaluator.objects.filter(name="bench-judge", version="1").first()
    if evaluator is None:
        admin = get_user_model().objects.get(username="bench-admin")
        evaluator = create_evaluator(name="bench-judge", version="1", kind="llm_judge", actor=admin)
    return evaluator.pk


FORMAT_BLOCKS = 100_000


def prepare_formats_version() -> tuple[int, list[str], int]:
    """Untimed set-up for ``--run-formats``: FORMAT_BLOCKS blocks (``blk-0000000``…) and a
    frozen version of RUN_QUERIES gold rows (``ft-00000``…), each pinned to one of the first
    blocks. Returns the version number, the query ids and the number of blocks."""
    import hashlib

    from django.contrib.auth import get_user_model

    from goldset.models import Block, BlockVersion, Document, Domain
    from goldset.services.freeze import store_frozen_version

    domain = Domain.objects.get(slug="federal_it")
    document = Document.objects.create(
        project_id=domain.project_id,
        document_id="doc-formats",
        title="Formats",
        domain=domain,
        authority="0.500",
    )
    blocks = Block.objects.bulk_create(
        (
            Block(project_id=document.project_id, document=document, block_id=f"blk-{i:07d}")
            for i in range(FORMAT_BLOCKS)
        ),
        batch_size=10_000,
    )
    texts = [f"Clause {i}: data is encrypted at rest." for i in range(RUN_QUERIES)]
    versions = BlockVersion.objects.bulk_create(
        BlockVersion(
            block=block, version=1, text=text, sha256=hashlib.sha256(text.encode()).hexdigest()
        )
        for block, text in zip(blocks, texts, strict=False)
    )
    queries = [f"ft-{i:05d}" for i in range(RUN_QUERIES)]
    rows = (
        {
            "id": qid,
            "question": f"What does clause {i} say?",
            "expected_block": {
                "block_id": bv.block.block_id,
                "document_id": document.document_id,
                "version": 1,
                "page_range": None,
                "sha256": bv.sha256,
            },
            "expected_answer": "It is encrypted.",
            "metadata": {
                "domain": "federal_it",
                "difficulty": "standard",
                "task_type": "factual_qa",
                "tier": "tier_b",
                "source": "public_rfp",
                "added_by": "bench-admin",
                "added_at": "2026-01-05",
                "reviewed_by": ["ann1", "ann2"],
                "resolution": "consensus",
            },
        }
        for i, (qid, bv) in enumerate(zip(queries, versions, strict=True))
    )
    admin = get_user_model().objects.get(username="bench-admin")
    version = store_frozen_version(rows=rows, actor=admin, note="bench run formats")
    return version.number, queries, FORMAT_BLOCKS


def generate_run_layouts(mb: int, queries: list[str], n_blocks: int) -> dict[str, Path]:
    """The ~``mb`` MiB TREC run of :func:`generate_run` again, tab-separated and as JSONL (the
    same rows and score texts; JSONL has one line per query)."""
    trec, _, LONGEST[f"run-{mb}.trec"] = generate_run(mb, queries, n_blocks)
    paths = {"run": trec, "run-tab": WORK / f"run-{mb}.tsv", "run-jsonl": WORK / f"run-{mb}.jsonl"}
    for kind in ("run-tab", "run-jsonl"):
        if not paths[kind].exists():
            LONGEST[paths[kind].name] = _write_layout(trec, paths[kind], kind)
    return paths


def _write_layout(trec: Path, path: Path, kind: str) -> int:
    """Rewrite the TREC run ``trec`` as ``kind``, stopping before the page's 200 MiB cap (JSONL
    takes a few more bytes a row: its last queries are left out); returns the longest line."""
    longest, cap = 0, 200 * 1024 * 1024 - 64 * 1024
    with trec.open(encoding="ascii") as lines, path.open("w", encoding="ascii") as out:
        rows = (raw.split() for raw in lines)
        for qid, fields in itertools.groupby(rows, key=lambda f: f[0]):
            if kind == "run-tab":
                text = "".join("\t".join(f) + "\n" for f in fields)
                longest = max(longest, max(len(x) + 1 for x in text.splitlines()))
            else:
                results = ", ".join(f'{{"doc_id": "{f[2]}", "score": {f[4]}}}' for f in fields)
                text = f'{{"query_id": "{qid}", "results": [{results}]}}\n'
                longest = max(longest, len(text))
            if out.tell() + len(text) > cap:
                break
            out.write(text)
    return longest


def generate_answer_log(mb: int, queries: list[str], n_blocks: int) -> Path:
    """A ~``mb`` MiB JSONL answer log (under the page's 200 MiB cap): every question of the
    version answered by system after system, each record like the answers kind's."""
    path = WORK / f"answer-log-{mb}.jsonl"
    if path.exists():
        return path
    target = mb * 1024 * 1024 - 64 * 1024
    longest, i = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while True:
            system, q = divmod(i, len(queries))
            line = (
                json.dumps(
                    {
                        "run_id": f"run-{system}",
                        "system_id": f"sys-{system:02d}",
                        "question_id": queries[q],
                        "answer": f"Answer {i}: {text_of(i, 600)}",
                        "citations": [f"blk-{(q + system) % RUN_QUERIES:07d}"],
                        "retrieved_passages": [
                            {"passage_id": f"blk-{(q + system + r) % n_blocks:07d}", "rank": r + 1}
                            for r in range(3)
                        ],
                        "latency_ms": 800 + i % 500,
                        "cost_usd": 0.002,
                    }
                )
                + "\n"
            )
            if out.tell() + len(line) > target:
                break
            longest = max(longest, len(line))
            out.write(line)
            i += 1
    LONGEST[path.name] = longest
    return path


def run_formats(kinds: list[str], mb: int, *, request_only: bool = False) -> None:
    """``--run-formats``: the set-up above, then one upload per layout (see the docstring);
    with ``--request-only`` only the upload requests are timed (no worker: the jobs stay
    queued), as for the other kinds."""
    reset_database()
    started = time.monotonic()
    number, queries, n_blocks = prepare_formats_version()
    files = generate_run_layouts(mb, queries, n_blocks)
    files["answer-log"] = generate_answer_log(mb, queries, n_blocks)
    print(json.dumps({"setup_s": round(time.monotonic() - started, 1)}), flush=True)
    for kind in kinds:
        path = files[kind]
        PAGES[kind] = PAGES["run"]
        result = run_kind(kind, path, {"version": str(number)}, request_only=request_only)
        result["longest_line_bytes"] = LONGEST.get(path.name)
        result["load_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(result), flush=True)


def freeze_run_version() -> tuple[int, list[str]]:
    """Make RUN_QUERIES of the imported triples gold and freeze them (untimed set-up)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from goldset.models import Triple, TripleState
    from goldset.services.freeze import FreezeFilters, freeze_gold_version

    ids = list(
        Triple.objects.order_by("external_id").values_list("external_id", flat=True)[:RUN_QUERIES]
    )
    if len(ids) < RUN_QUERIES:
        raise SystemExit("the run needs the triples kind imported first (run --kinds triples)")
    Triple.objects.filter(external_id__in=ids).update(
        state=TripleState.GOLD, resolution="consensus", gold_at=timezone.now()
    )
    admin = get_user_model().objects.get(username="bench-admin")
    version = freeze_gold_version(filters=FreezeFilters(), actor=admin, note="bench run")
    return version.number, ids


# ---------------------------------------------------------------- processes


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (its own, not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class MultipartBody:
    """A multipart/form-data body streamed from disk with a Content-Length (``requests`` would
    read the whole file into memory first, adding client time to the request's latency)."""

    def __init__(self, fields: dict, path: Path):
        boundary = f"bench{os.getpid()}{int(time.time() * 1000)}"
        self.content_type = f"multipart/form-data; boundary={boundary}"
        head = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
            for k, v in fields.items()
        )
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        )
        self.parts = [head.encode(), None, f"\r\n--{boundary}--\r\n".encode()]
        self.path = path
        self.length = len(self.parts[0]) + path.stat().st_size + len(self.parts[2])

    def __enter__(self):
        self.handle = self.path.open("rb")
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        yield self.parts[0]
        while block := self.handle.read(1 << 20):
            yield block
        yield self.parts[2]


def wait_for(predicate, *, timeout: float, what: str):
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        pause.wait(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def start_web():
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),  # beside this interpreter
            "workbench.wsgi",
            "--workers=1",
            f"--bind=127.0.0.1:{PORT}",
            "--timeout=300",
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def up():
        import requests

        try:
            return requests.get(f"http://127.0.0.1:{PORT}/login/", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        wait_for(up, timeout=60, what="gunicorn")
    except RuntimeError:
        stop(proc)
        raise
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return proc, int(children[0])


def start_worker():
    from workbench.celery import app

    name = f"bench-imports-{os.getpid()}@%h"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workbench",
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "-n",
            name,
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env={**env(), "DB_STATEMENT_TIMEOUT_MS": "0"},  # as docker-compose.yml runs workers
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    host = name.replace("%h", os.uname().nodename)
    try:
        wait_for(
            lambda: bool(app.control.ping(destination=[host], timeout=0.5)),
            timeout=60,
            what="celery worker",
        )
    except RuntimeError:
        stop(proc)
        raise
    return proc


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- the run


def reset_database():
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from goldset.models import Domain, default_project_id

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: the manifest
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND "
            "(tablename LIKE 'goldset_%%' OR tablename = 'workbench_auditevent')"
        )
        tables = [row[0] for row in cursor.fetchall()]
        # The append-only triggers refuse TRUNCATE on protected tables; the bench database is
        # scratch, so they are disabled for this reset only.
        cursor.execute("SET session_replication_role = replica")
        for table in tables:
            cursor.execute(f'DELETE FROM "{table}"')
        cursor.execute("SET session_replication_role = DEFAULT")
    Domain.objects.get_or_create(
        project_id=default_project_id(), slug="federal_it", defaults={"name": "Federal IT"}
    )
    User = get_user_model()
    admin, _ = User.objects.get_or_create(username="bench-admin")
    admin.set_password(PASSWORD)
    admin.is_superuser = True  # the admin role, without depending on group fixtures
    admin.save()


def login():
    import requests

    session = requests.Session()
    base = f"http://127.0.0.1:{PORT}"
    session.get(f"{base}/login/")
    response = session.post(
        f"{base}/login/",
        data={
            "username": "bench-admin",
            "password": PASSWORD,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/login/"},
        allow_redirects=False,
    )
    assert response.status_code == 302, response.status_code
    return session


def run_kind(kind: str, path: Path, extra: dict | None = None, request_only=False) -> dict:
    from goldset.imports.storage import files_dir
    from goldset.models import ImportJob, ScoringJob

    web, web_worker = start_web()
    try:
        worker = None if request_only else start_worker()
    except BaseException:
        stop(web)  # a worker that never came up leaves no server holding the port
        raise
    load_before = os.getloadavg()[0]
    try:
        session = login()
        url, data = PAGES[kind]
        data = {**data, **(extra or {})}
        base = f"http://127.0.0.1:{PORT}"
        session.get(base + url)
        fields = {**data, "csrfmiddlewaretoken": session.cookies["csrftoken"]}
        with MultipartBody(fields, path) as body:
            cpu_before = cpu_seconds(web_worker)
            started = time.monotonic()
            response = session.post(
                base + url,
                data=body,
                headers={"Referer": base + url, "Content-Type": body.content_type},
                allow_redirects=False,
            )
            request_s = time.monotonic() - started
            request_cpu_s = cpu_seconds(web_worker) - cpu_before
        assert response.status_code == 302, (response.status_code, response.text[:2000])
        job_id = int(response.headers["Location"].rstrip("/").rsplit("/", 1)[1])

        trace: list = []  # (seconds since the request, stage, percent) at each change
        loads: list = []

        def done():
            job = ImportJob.objects.get(pk=job_id)
            if not trace or trace[-1][1:] != (job.stage, job.progress):
                trace.append((round(time.monotonic() - started, 1), job.stage, job.progress))
            loads.append(os.getloadavg()[0])
            return job.finished

        web_rss_after_request = peak_rss_mb(web_worker)
        if request_only:
            job = ImportJob.objects.get(pk=job_id)
            return {
                "kind": kind,
                "file_mb": round(path.stat().st_size / 2**20, 1),
                "status": job.status,
                "stored_bytes": (files_dir().parent / job.file_name).stat().st_size,
                "request_s": round(request_s, 2),
                "request_web_cpu_s": round(request_cpu_s, 2),
                "web_peak_rss_mb": round(web_rss_after_request, 1),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }
        stored_during_job = sorted(p.name for p in files_dir().iterdir())
        wait_for(done, timeout=6 * 3600, what=f"{kind} import")
        job_s = time.monotonic() - started - request_s
        job = ImportJob.objects.get(pk=job_id)
        result = {
            "kind": kind,
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "status": job.status,
            "request_s": round(request_s, 2),
            "request_web_cpu_s": round(request_cpu_s, 2),
            "job_s": round(job_s, 1),
            "web_peak_rss_mb": round(web_rss_after_request, 1),
            "worker_peak_rss_mb": round(peak_rss_mb(worker.pid), 1),
            "summary": job.summary or job.message,
            "stored_files_during_job": len(stored_during_job),
            "stored_files_after_job": len(list(files_dir().iterdir())),
            # The progress bar as the job page saw it: every change of stage or percent.
            "progress_trace": trace,
            "load_during_job": [round(min(loads), 2), round(max(loads), 2)] if loads else [],
        }
        scoring_id = (job.summary or {}).get("scoring_job")
        if scoring_id:
            scoring_started = time.monotonic()

            def scored():
                return ScoringJob.objects.get(pk=scoring_id).status in ("succeeded", "failed")

            wait_for(scored, timeout=6 * 3600, what="the scoring job")
            scoring = ScoringJob.objects.get(pk=scoring_id)
            result["scoring_status"] = scoring.status
            result["scoring_s"] = round(time.monotonic() - scoring_started, 1)
            result["scoring_message"] = (getattr(scoring, "message", "") or "")[:300]
            result["worker_peak_rss_mb"] = round(peak_rss_mb(worker.pid), 1)
        result["load_before"] = round(load_before, 2)
        result["load_after"] = round(os.getloadavg()[0], 2)
        return result
    finally:
        if worker is not None:
            stop(worker)
        stop(web)


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(int(memory) / 2**20, 1)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--keep", action="store_true", help="do not reset the database")
    parser.add_argument(
        "--request-only",
        action="store_true",
        help="time the upload requests only: no worker, the jobs stay queued (use a scratch "
        "database; leave the run kind out of --kinds, it needs the triples imported; "
        "with --run-formats each layout's request is timed)",
    )
    parser.add_argument(
        "--run-formats",
        default="",
        help="comma-separated run,run-tab,run-jsonl,answer-log: upload the run in each layout "
        "after a light set-up (no corpus or triples import; see the docstring)",
    )
    args = parser.parse_args()
    setup_django()
    print(json.dumps({"machine": machine(), "load": os.getloadavg()}), flush=True)
    if args.run_formats:
        WORK.mkdir(exist_ok=True)
        run_formats(args.run_formats.split(","), args.mb, request_only=args.request_only)
        return
    kinds = args.kinds.split(",")
    # The evaluator kind's file needs none of the others (its answer records are set up in bulk).
    counts = generate(args.mb) if set(kinds) - {"evaluator"} else {"longest": {}}
    if not args.keep:
        reset_database()
    files = {
        "corpus": WORK / f"corpus-{args.mb}.jsonl",
        "unrag": WORK / f"unrag-{args.mb}.json",
        "questions": WORK / f"questions-{args.mb}.jsonl",
        "answers": WORK / f"answers-{args.mb}.jsonl",
        "triples": WORK / f"triples-{args.mb}.jsonl",
    }
    for kind in kinds:
        extra = {}
        if kind == "evaluator":
            files["evaluator"], counts["evaluator"], longest = generate_evaluator(args.mb)
            counts["longest"]["evaluator"] = longest
            pk = prepare_evaluator(counts[kind])
            PAGES["evaluator"] = (PAGES["evaluator"][0].format(pk=pk), {})
        if kind == "run":
            number, queries = freeze_run_version()
            files["run"], counts["run"], longest = generate_run(args.mb, queries, counts["corpus"])
            counts["longest"]["run"] = longest
            extra = {"version": str(number)}
        result = run_kind(kind, files[kind], extra, request_only=args.request_only)
        result["records"] = counts[kind]
        longest = counts["longest"]
        result["longest_line_bytes"] = longest.get(files[kind].name, longest.get(kind))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
