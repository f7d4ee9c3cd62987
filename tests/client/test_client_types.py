"""The client is typed for a type checker (issue 29: "typed models"): every operation declares
what it returns, a model (a dataclass built from the API's JSON, the pairwise ones included) or
an iterator or list of models, never a bare dict; the async client's types
(``goldset_client/aio.pyi``) are the same operations awaited, lists as async iterators, and are
what ``tests/client/async_stub.py`` renders from them; the package ships ``py.typed`` and the
stub."""

import ast
import collections.abc
import dataclasses
import fnmatch
import tomllib
import types
import typing

from goldset_client import AsyncGoldsetClient, GoldsetClient, models, operation_ids

from tests.client.async_stub import ROOT, STUB, render

PAIRWISE = {
    "list_pairwise_tasks": collections.abc.Iterator[models.PairwiseTask],
    "list_pairwise_judgments": collections.abc.Iterator[models.PairJudgment],
    "get_pairwise_analysis": models.PairwiseAnalysis,
    "claim_pair": models.BlindPair | None,
    "get_pair": models.BlindPair,
    "judge_pair": models.BlindPair,
    "list_pair_calibration": collections.abc.Iterator[models.CalibrationPair],
    "get_pair_calibration_candidate": models.BlindPair | None,
    "add_pair_calibration": models.CalibrationPair,
    "list_pair_qualifications": collections.abc.Iterator[models.PairQualification],
    "get_pair_qualification": models.QualificationStatus,
    "claim_pair_calibration": models.BlindPair | None,
    "judge_pair_calibration": models.CalibrationAnswer,
    "skip_pair": models.PairSkip,
    "undo_pair_judgment": models.BlindPair,
    "list_pairwise_runs": list[models.PairwiseRun],
    "create_pairwise_task": models.PairwiseTask,
    "list_pair_adjudications": collections.abc.Iterator[models.PairAdjudication],
    "get_pair_adjudication": models.PairAdjudication,
    "adjudicate_pair": models.PairAdjudication,
}
PROJECTS = {
    "create_project": models.Project,
    "get_project": models.Project,
    "update_project": models.Project,
    "delete_project": None,
    "get_project_settings": list[models.ProjectSetting],
    "update_project_settings": list[models.ProjectSetting],
    "list_members": list[models.Member],
    "add_member": models.Member,
    "get_member": models.Member,
    "set_member_role": models.Member,
    "remove_member": None,
}


def returned_models(hint) -> list[type]:
    """The model classes a return type names (through Iterator, list and ``| None``)."""
    origin = typing.get_origin(hint)
    if origin in (collections.abc.Iterator, list):
        (item,) = typing.get_args(hint)
        return returned_models(item)
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(hint) if arg is not type(None)
                for m in returned_models(arg)]  # fmt: skip
    return [hint]


def test_every_operation_declares_the_model_it_returns():
    for operation_id, name in operation_ids(GoldsetClient).items():
        hint = typing.get_type_hints(getattr(GoldsetClient, name))["return"]
        if hint is type(None):  # a DELETE answers nothing
            assert operation_id.endswith("_destroy"), name
            continue
        for model in returned_models(hint):
            assert dataclasses.is_dataclass(model), (name, hint)
            assert model.__module__ == models.__name__, (name, hint)
    for name, expected in {**PAIRWISE, **PROJECTS}.items():
        hint = typing.get_type_hints(getattr(GoldsetClient, name))["return"]
        assert hint == (type(None) if expected is None else expected), name


def test_the_models_build_from_the_apis_json_with_their_nested_models():
    answer = models.CalibrationAnswer.from_json(
        {"pair": "pc-1", "choice": "tie", "qualification": {
            "qualified": True, "total": 2, "answered": 2, "problems": [],
            "result": {"n_items": 2, "kappa": 1.0, "threshold": 0.6, "passed": True,
                       "disagreements": [], "scored_at": "2026-11-20T08:00:00Z", "new": 1}}},
    )  # fmt: skip
    assert answer.qualification.result == models.PairQualification(
        n_items=2, kappa=1.0, threshold=0.6, passed=True, scored_at="2026-11-20T08:00:00Z"
    )
    assert answer.qualification.result.raw["new"] == 1  # a field added later is kept in raw
    assert models.QualificationStatus.from_json({"qualified": False, "result": None}).result is None
    split = models.PairAdjudication.from_json(
        {"public_id": "pp-1", "task": "Compare", "status": "needs_adjudication",
         "judgments": [{"reviewer": "Reviewer 1", "choice": "left", "strength": "clearly",
                        "rationale": "A."}],
         "adjudication": {"choice": "right", "strength": "slightly", "rationale": "B.",
                          "created_at": "2026-11-20T08:00:00Z"}},
    )  # fmt: skip
    assert split.judgments == (
        models.BlindJudgment(reviewer="Reviewer 1", choice="left", strength="clearly",
                             rationale="A."),
    )  # fmt: skip
    assert split.adjudication == models.PairDecision(
        choice="right", strength="slightly", rationale="B.", created_at="2026-11-20T08:00:00Z"
    )
    assert split.raw["judgments"][0]["choice"] == "left"
    waiting = models.PairAdjudication.from_json({"judgments": [], "adjudication": None})
    assert (waiting.judgments, waiting.adjudication) == ((), None)


def test_the_async_stub_is_the_operations_awaited():
    assert STUB.read_text() == render(), "run: python -m tests.client.async_stub"
    tree = ast.parse(STUB.read_text())
    (client,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    methods = {
        n.name: n for n in client.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert set(operation_ids(AsyncGoldsetClient).values()) <= set(methods)
    for name in operation_ids(GoldsetClient).values():
        sync = typing.get_type_hints(getattr(GoldsetClient, name))["return"]
        method = methods[name]
        returns = ast.unparse(method.returns)
        if typing.get_origin(sync) is collections.abc.Iterator:
            assert isinstance(method, ast.FunctionDef) and returns.startswith("AsyncIterator["), (
                name
            )
        else:
            assert isinstance(method, ast.AsyncFunctionDef), name
    for name in ("score_run", "push_answers", "push_questions", "wait_for_import", "wait_for_job",
                 "latest_version"):  # fmt: skip
        assert isinstance(methods[name], ast.AsyncFunctionDef), name


def test_the_package_ships_py_typed_and_the_stub():
    package = ROOT / "client" / "goldset_client"
    config = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())
    shipped = config["tool"]["setuptools"]["package-data"]["goldset_client"]
    for path in (package / "py.typed", STUB):
        assert path.exists() and any(fnmatch.fnmatch(path.name, p) for p in shipped), path
