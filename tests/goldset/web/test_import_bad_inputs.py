"""Issue 10 item 6 through every upload page and every ``import_*`` command: each bad input
is refused (the job page answers 422 with the problems, the command exits 2), the message names
the line and the field, and nothing is stored. A BOM is accepted everywhere."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from goldset.models import (
    AnswerRecord,
    Document,
    ImportJob,
    ImportStatus,
    Question,
    Run,
    Triple,
)
from goldset.services.answer_imports import import_questions
from tests.factories import BlockFactory, BlockVersionFactory, DomainFactory, default_project

pytestmark = pytest.mark.django_db
RAW = "__raw__"


@pytest.fixture
def corpus():
    domain = DomainFactory(slug="federal_it")
    return BlockVersionFactory(block=BlockFactory(block_id="blk-1", document__domain=domain))


@pytest.fixture
def question(corpus):
    import_questions(source=json.dumps(QUESTION), actor=None, project=default_project())


def corpus_row():
    return {
        "document_id": "d1",
        "title": "T",
        "domain": "federal_it",
        "authority": 0.5,
        "blocks": [{"block_id": "b1", "versions": [{"text": "x", "section": "s"}]}],
    }


def triple_row():
    return {
        "id": "t-1",
        "question": "How long are backups kept?",
        "expected_block": {"block_id": "blk-1", "version": 1},
        "expected_answer": "35 days.",
        "metadata": {
            "domain": "federal_it",
            "task_type": "factual_qa",
            "source": "public_rfp",
            "added_by": "admin-test",
            "model_uncertainty": 0.2,
        },
    }


QUESTION = {
    "question_id": "q-1",
    "domain": "federal_it",
    "task_family": "routing",
    "question": "Can ops approve expedite?",
    "uncertainty": 0.3,
    "gold_evidence": [{"passage_id": "blk-1", "role": "rule", "label": "sufficient"}],
}


def question_row():
    return {**QUESTION, "question_id": "q-2"}


def answer_row():
    return {
        "run_id": "run-a",
        "system_id": "sys-a",
        "question_id": "q-1",
        "answer": "Needs budget control.",
        "citations": ["blk-1"],
        "retrieved_passages": [{"passage_id": "blk-1", "rank": 1}],
        "latency_ms": 1200,
        "cost_usd": 0.01,
    }


# kind: (row factory, page, form data, command, command options, model, paths)
KINDS = {
    "corpus": dict(
        what="document",
        row=corpus_row,
        url="corpus:import",
        data={},
        command="import_corpus",
        options={},
        model=Document,
        number="authority",
        text="title",
        id="document_id",
        long=("title", 501, "500"),
        free="metadata",
    ),
    "triples": dict(
        what="triple",
        row=triple_row,
        url="curation:import",
        data={},
        command="import_triples",
        options={"actor": "admin-test"},
        model=Triple,
        number="metadata.model_uncertainty",
        text="question",
        id="id",
        long=("id", 101, "100"),
        free="metadata.note",
    ),
    "questions": dict(
        what="question",
        row=question_row,
        url="answers:import",
        data={"kind": "questions"},
        command="import_questions",
        options={},
        model=Question,
        number="uncertainty",
        text="question",
        id="question_id",
        long=("question_id", 201, "200"),
        free="metadata",
    ),
    "answers": dict(
        what="answer record",
        row=answer_row,
        url="answers:import",
        data={"kind": "answers"},
        command="import_answers",
        options={},
        model=AnswerRecord,
        number="latency_ms",
        text="answer",
        id="run_id",
        long=("run_id", 201, "200"),
        free="metadata",
    ),
}


def _set(obj: dict, path: str, value):
    *parents, last = path.split(".")
    for key in parents:
        obj = obj[key]
    obj[last] = value


def line_with(kind: str, path: str, raw: str) -> str:
    """The kind's valid row with ``path`` set to a raw JSON token."""
    row = KINDS[kind]["row"]()
    _set(row, path, RAW)
    return json.dumps(row).replace(f'"{RAW}"', raw)


def cases(kind: str):
    spec = KINDS[kind]
    field_, length, limit = spec["long"]
    deep = "[" * 5000 + "]" * 5000
    return [
        ("nesting", line_with(kind, spec["text"], deep), "line 2: nested deeper than"),
        ("nan", line_with(kind, spec["number"], "NaN"), f"line 2: {spec['number']}: NaN"),
        (
            "infinity",
            line_with(kind, spec["number"], "-Infinity"),
            f"line 2: {spec['number']}: -Infinity",
        ),
        (
            "nul-text",
            line_with(kind, spec["text"], '"a\\u0000b"'),
            f"line 2: {spec['text']}: contains a NUL",
        ),
        ("nul-id", line_with(kind, spec["id"], '"x\\u0000"'), f"line 2: {spec['id']}"),
        (
            "too-long",
            line_with(kind, field_, json.dumps("x" * length)),
            f"line 2: {field_}: {length} characters is longer than the limit of {limit}",
        ),
        (
            "id-whitespace",
            line_with(kind, spec["id"], '" padded "'),
            f"line 2: {spec['id']}: ",
        ),
        ("id-tab", line_with(kind, spec["id"], '"a\\tb"'), f"line 2: {spec['id']}: "),
        # Finite literals too large for a float parse to inf without a NaN/Infinity token; in
        # free-form metadata PostgreSQL refused the row (a failed job, not a rejected file).
        (
            "overflow",
            line_with(kind, spec["number"], "1e400"),
            f"line 2: {spec['number']}: 1e400 is not allowed",
        ),
        (
            "overflow-in-metadata",
            line_with(kind, spec["free"], '{"x": -1e999}'),
            f"line 2: {spec['free']}.x: -1e999 is not allowed",
        ),
        (
            "long-integer",
            line_with(kind, spec["number"], "1" + "0" * 5000),
            f"line 2: {spec['number']}: a number of 5001 characters is not allowed",
        ),
        # A lone surrogate escape is not UTF-8 text: the database refused it when writing.
        (
            "surrogate",
            line_with(kind, spec["text"], '"a\\ud800b"'),
            f"line 2: {spec['text']}: contains an unpaired surrogate",
        ),
        # JSON's parser kept the last of two values for one key, silently.
        (
            "duplicate-key",
            line_with(kind, spec["id"], '"first"').replace("{", '{"' + spec["id"] + '": "x", ', 1),
            f"line 2: {spec['id']}: the key '{spec['id']}' appears twice in one object",
        ),
        (
            "duplicate-nested-key",
            line_with(kind, spec["free"], '{"x": 1, "y": 2, "x": 3}'),
            f"line 2: {spec['free']}.x: the key 'x' appears twice in one object",
        ),
        # A line that is null was skipped: a file of only `null` was "imported" with nothing.
        ("null", "null", f"line 2: expected a JSON object (one {spec['what']} per line), got null"),
        (
            "array",
            "[1, 2]",
            f"line 2: expected a JSON object (one {spec['what']} per line), got an",
        ),
        ("number", "7", f"line 2: expected a JSON object (one {spec['what']} per line), got the"),
    ]


CASES = [
    pytest.param(kind, text, expected, id=f"{kind}-{name}")
    for kind in KINDS
    for name, text, expected in cases(kind)
]


def _file(text: str) -> bytes:
    # A blank first line: the bad record is on line 2, so line numbers are really counted.
    return ("\n" + text + "\n").encode()


@pytest.mark.parametrize("kind,text,expected", CASES)
def test_bad_input_through_the_upload_page_is_a_rejected_job_naming_line_and_field(
    kind,
    text,
    expected,
    client_for,
    admin_user,
    corpus,
    question,
    django_capture_on_commit_callbacks,
):
    spec = KINDS[kind]
    before = spec["model"].objects.count()
    client = client_for(admin_user)
    upload = SimpleUploadedFile(f"{kind}.jsonl", _file(text))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse(spec["url"]), {**spec["data"], "file": upload})
    assert response.status_code == 302
    page = client.get(response.url)
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert any(expected in str(_text(p)) for p in job.errors), job.errors
    assert page.status_code == 422 and "nothing was imported" in page.content.decode()
    assert spec["model"].objects.count() == before


@pytest.mark.parametrize("kind,text,expected", CASES)
def test_bad_input_through_the_command_exits_2_naming_line_and_field(
    kind, text, expected, tmp_path, admin_user, corpus, question
):
    spec = KINDS[kind]
    before = spec["model"].objects.count()
    path = tmp_path / f"{kind}.jsonl"
    path.write_bytes(_file(text))
    with pytest.raises(CommandError) as refused:
        call_command(spec["command"], str(path), **spec["options"])
    assert refused.value.returncode == 2
    assert expected in str(refused.value), str(refused.value)
    assert spec["model"].objects.count() == before


def _text(problem: dict) -> str:
    parts = [f"line {problem['line']}"] if problem["line"] is not None else []
    if problem["field"]:
        parts.append(problem["field"])
    return ": ".join([*parts, problem["message"]])


VARIANTS = {
    "corpus": lambda row: {
        **row,
        "document_id": "d2",
        "blocks": [{**row["blocks"][0], "block_id": "b2"}],
    },
    "triples": lambda row: {**row, "id": "t-2"},
    "questions": lambda row: {**row, "question_id": "q-3"},
    "answers": lambda row: {**row, "run_id": "run-b"},
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_utf8_bom_is_accepted_and_stripped_by_every_page_and_command(
    kind, client_for, admin_user, corpus, question, tmp_path, django_capture_on_commit_callbacks
):
    spec = KINDS[kind]
    before = spec["model"].objects.count()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(spec["row"]()).encode() + b"\n")
    call_command(spec["command"], str(path), **spec["options"])
    assert spec["model"].objects.count() == before + 1
    data = b"\xef\xbb\xbf" + json.dumps(VARIANTS[kind](spec["row"]())).encode() + b"\n"
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse(spec["url"]), {**spec["data"], "file": SimpleUploadedFile("bom.jsonl", data)}
        )
    assert response.status_code == 302
    assert ImportJob.objects.get().status == ImportStatus.SUCCEEDED
    assert spec["model"].objects.count() == before + 2


def test_answer_log_rows_are_not_stored_when_a_later_line_is_bad(tmp_path, corpus, question):
    good = json.dumps(answer_row())
    bad = line_with("answers", "cost_usd", "NaN").replace("run-a", "run-b")
    path = tmp_path / "a.jsonl"
    path.write_text(good + "\n" + bad + "\n")
    with pytest.raises(CommandError, match="line 2: cost_usd: NaN is not allowed"):
        call_command("import_answers", str(path))
    assert (AnswerRecord.objects.count(), Run.objects.count()) == (0, 0)


def unrag_file(raw_authority: str, *, content: str = '"hello"') -> bytes:
    document = (
        f'{{"sourceId": "u-1", "content": {content}, "metadata": {{"domain": "federal_it", '
        f'"authority": {raw_authority}}}}}'
    )
    return f'{{"version": "1", "documents": [{document}], "queries": []}}'.encode()


@pytest.mark.parametrize(
    "data,expected",
    [
        (
            unrag_file("NaN"),
            "line 1: documents[0].metadata.authority: NaN is not allowed (expected a finite number)",
        ),
        (
            unrag_file("-Infinity"),
            "line 1: documents[0].metadata.authority: -Infinity is not allowed",
        ),
        (unrag_file("1e400"), "line 1: documents[0].metadata.authority: 1e400 is not allowed"),
        (
            unrag_file("1" + "0" * 5000),
            "line 1: documents[0].metadata.authority: a number of 5001 characters is not allowed",
        ),
        (unrag_file("0.5", content='"a\\u0000b"'), "documents[0].content: contains a NUL"),
    ],
    ids=["nan", "infinity", "overflow", "long-integer", "nul"],
)
def test_an_unrag_file_names_the_member_of_a_bad_value_on_the_page_and_the_command(
    data, expected, client_for, admin_user, corpus, tmp_path, django_capture_on_commit_callbacks
):
    """Where ijson stops (NaN, Infinity, 1e400, a huge integer) the rest of the document is
    parsed item by item by the JSONL reader's parser: the JSONL message, the member and its
    line."""
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("corpus:import"), {"file": SimpleUploadedFile("u.json", data)}
        )
    assert client.get(response.url).status_code == 422
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert any(expected in _text(p) for p in job.errors), job.errors
    path = tmp_path / "u.json"
    path.write_bytes(data)
    with pytest.raises(CommandError) as refused:
        call_command("import_corpus", str(path))
    assert refused.value.returncode == 2 and expected in str(refused.value)
    assert not Document.objects.exclude(pk=corpus.block.document_id).exists()


def _message(problem: dict) -> str:
    return problem["message"] + (
        f" (expected {problem['expected']})" if problem["expected"] else ""
    )


def _located(text: str) -> str:
    """A problem without its place (``line N: field: ``), to compare the two formats' words."""
    return text.split(": ", 2)[-1]


def unrag_pretty(raw_authority: str) -> bytes:
    """An Unrag file written over several lines; the bad value is on line 5."""
    return (
        '{"version": "1", "documents": [\n  {"sourceId": "u-0", "content": "a"},\n'
        '  {"sourceId": "u-1", "content": "b",\n   "metadata": {"domain": "federal_it",\n'
        f'    "authority": {raw_authority}}}}}\n ],\n "queries": []}}\n'
    ).encode()


def manifest_line(raw_authority: str) -> bytes:
    return line_with("corpus", "authority", raw_authority).encode() + b"\n"


@pytest.mark.parametrize(
    "raw", ["NaN", "Infinity", "-1e999", "1" + "0" * 5000, str(2**70)], ids=str.__len__
)
def test_an_unrag_file_gets_the_jsonl_answer_for_the_same_value_on_page_api_and_command(
    raw, client_for, admin_user, corpus, tmp_path, django_capture_on_commit_callbacks
):
    """The same bad value refused with the same words by both corpus formats, through the
    page (422), the API (the job rejected) and the command (exit 2), naming line and member;
    nothing stored. An integer beyond 64 bits is not "invalid JSON" in either: it reaches the
    authority check, which refuses it the same way."""
    answers = {}
    for name, data in [("jsonl", manifest_line(raw)), ("unrag", unrag_pretty(raw))]:
        path = tmp_path / f"c.{name}"
        path.write_bytes(data)
        with pytest.raises(CommandError) as refused:
            call_command("import_corpus", str(path))
        assert refused.value.returncode == 2
        answers[name] = str(refused.value)
        with django_capture_on_commit_callbacks(execute=True):
            page = client_for(admin_user).post(
                reverse("corpus:import"), {"file": SimpleUploadedFile(f"c-{name}", data)}
            )
        assert client_for(admin_user).get(page.url).status_code == 422
        job = ImportJob.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[-1]))
        ImportJob.objects.filter(pk=job.pk).delete()  # the API submits the same file again
        with django_capture_on_commit_callbacks(execute=True):
            api = client_for(admin_user).post(
                reverse("api:imports"),
                {"kind": "corpus", "file": SimpleUploadedFile(f"c-{name}", data)},
            )
        assert api.status_code == 202
        polled = client_for(admin_user).get(api["Location"]).json()
        assert polled["status"] == "rejected"
        (problem,) = [p for p in polled["errors"] if "authority" in p["field"]] or [polled]
        answers[f"{name}-api"] = problem
    jsonl_text = next(line for line in answers["jsonl"].splitlines() if "authority" in line)
    unrag_text = next(line for line in answers["unrag"].splitlines() if "authority" in line)
    assert "line 1: authority: " in jsonl_text
    # The reader's refusals and the field checks (the big integer's range) alike name the
    # line the member is written on (an Unrag item read by ijson is located when rejected).
    assert "line 5: documents[1].metadata.authority: " in unrag_text, unrag_text
    assert _located(unrag_text) == _located(jsonl_text)
    assert "not valid JSON" not in unrag_text
    jsonl_api, unrag_api = answers["jsonl-api"], answers["unrag-api"]
    assert (jsonl_api["line"], jsonl_api["field"]) == (1, "authority")
    assert unrag_api["field"] == "documents[1].metadata.authority"
    assert unrag_api["line"] == 5
    assert _message(unrag_api) == _message(jsonl_api)
    assert not Document.objects.exclude(pk=corpus.block.document_id).exists()


def test_an_integer_beyond_64_bits_in_unrag_metadata_is_accepted_as_in_jsonl(
    admin_user, corpus, tmp_path
):
    big = str(2**70)
    data = (
        '{"version": "1", "documents": [{"sourceId": "u-big", "content": "x", '
        f'"metadata": {{"domain": "federal_it", "authority": 0.5, "pages": {big}}}}}]}}'
    ).encode()
    path = tmp_path / "big.json"
    path.write_bytes(data)
    call_command("import_corpus", str(path))
    assert Document.objects.filter(document_id="u-big").exists()


@pytest.mark.parametrize("command", ["import_corpus", "import_questions", "import_answers"])
def test_a_command_given_a_directory_exits_2_without_a_traceback(command, tmp_path):
    with pytest.raises(CommandError) as refused:
        call_command(command, str(tmp_path))
    assert refused.value.returncode == 2 and "not a file" in str(refused.value)


@pytest.fixture
def frozen_and_judge(admin_user, corpus):
    from goldset.services.evaluators import create_evaluator
    from goldset.services.freeze import store_frozen_version
    from tests.factories import gold_row_for

    store_frozen_version(
        project=default_project(), rows=[gold_row_for(corpus, triple_id="Q-0")], actor=admin_user
    )
    return create_evaluator(project=default_project(), name="judge", version="1", kind="llm_judge")


def empty_upload_targets(judge):
    run = {"version": 1, "name": "r", "k": 10}
    return [
        ("page", reverse("corpus:import"), {}),
        ("page", reverse("curation:import"), {}),
        ("page", reverse("answers:import"), {"kind": "questions"}),
        ("page", reverse("exports:jobs"), run),
        ("page", reverse("evaluators:detail", args=[judge.pk]), {}),
        ("api", reverse("api:imports"), {"kind": "corpus"}),
        ("api", reverse("api:triples_import"), {}),
        ("api", reverse("api:jobs"), run),
        ("api", reverse("api:evaluator_outputs_import", args=[judge.pk]), {}),
    ]


def test_an_empty_file_is_refused_with_422_by_every_upload_page_and_the_api(
    client_for, admin_user, frozen_and_judge
):
    """A 0-byte file was a form error answered 200 (a script could not tell) while a file of
    only a BOM got the upload service's 422; both are the service's now."""
    client = client_for(admin_user)
    for where, url, fields in empty_upload_targets(frozen_and_judge):
        response = client.post(url, {**fields, "file": SimpleUploadedFile("e.jsonl", b"")})
        assert response.status_code == 422, (url, response.status_code)
        text = response.json()["detail"] if where == "api" else response.content.decode()
        assert "e.jsonl is empty." in text, (url, text[:300])
    assert not ImportJob.objects.exists()


def refused_forms(judge):
    """(url, fields, files, words the page must show) per upload page: a POST whose form is
    refused before any file is stored."""
    run = {"version": 1, "name": "r", "k": 10}
    jsonl = {"file": SimpleUploadedFile("ok.jsonl", b'{"a": 1}\n')}
    return [
        (reverse("corpus:import"), {}, {}, "This field is required."),
        (reverse("corpus:import"), {"domain": "no-such-domain"}, jsonl, "Select a valid choice"),
        (reverse("curation:import"), {}, {}, "This field is required."),
        (reverse("answers:import"), {"kind": "questions"}, {}, "This field is required."),
        (reverse("answers:import"), {"kind": "answers"}, {}, "This field is required."),
        (reverse("answers:import"), {"kind": "mystery"}, jsonl, "choose questions or answers"),
        (reverse("exports:jobs"), run, {}, "This field is required."),
        (reverse("exports:jobs"), {**run, "k": "zero"}, jsonl, "Enter a whole number."),
        (reverse("exports:jobs"), {**run, "version": 99}, jsonl, "gold version v99 is not frozen"),
        (reverse("evaluators:detail", args=[judge.pk]), {}, {}, "This field is required."),
    ]


def test_a_refused_upload_form_answers_422_on_every_upload_page(
    client_for, admin_user, frozen_and_judge
):
    """A missing file or a bad form field answered 200 with the field errors, so a script or a
    test could not tell a refused submission from a page view; every upload page answers 422
    now, shows why, and stores nothing. A plain GET of the page is still 200."""
    client = client_for(admin_user)
    for url, fields, files, words in refused_forms(frozen_and_judge):
        assert client.get(url).status_code == 200, url
        response = client.post(url, {**fields, **files})
        assert response.status_code == 422, (url, fields, response.status_code)
        assert words in response.content.decode(), (url, fields)
    assert not ImportJob.objects.exists()
