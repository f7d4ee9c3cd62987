"""Writes ``client/goldset_client/aio.pyi``: the async client's types as a type checker reads
them. The operations are defined once (``goldset_client._operations``, annotated with what the
sync client returns); on ``AsyncGoldsetClient`` each is a coroutine of the same value, and each
list an async iterator (``Iterator[X]`` → ``AsyncIterator[X]``). The methods ``aio.py`` defines
itself are written as they are. A test holds the file equal to what this renders; after changing
an operation run ``python -m tests.client.async_stub`` from the repository root."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "client"))

from goldset_client import _operations, models  # noqa: E402
from goldset_client.aio import AsyncGoldsetClient  # noqa: E402

STUB = ROOT / "client" / "goldset_client" / "aio.pyi"
ITERATOR = re.compile(r"^Iterator\[(.+)\]$")
HEADER = '''"""Types of :mod:`goldset_client.aio` (written by ``tests/client/async_stub.py``; a test holds
it equal): every operation of :class:`goldset_client.GoldsetClient` as a coroutine of the same
value, every list as an async iterator."""

import os
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import httpx

from goldset_client._operations import FileLike, ProgressCallback, Records, Since, VersionRef
from goldset_client._retry import RetryPolicy
from goldset_client.models import (
{models}
)

class AsyncGoldsetClient:
    base_url: str
    project: str | None
    poll_interval: float
    retry: RetryPolicy
'''


def _parameters(function) -> str:
    """The parameters as a stub writes them (defaults as ``...``)."""
    out, keyword_only = [], False
    for parameter in inspect.signature(function).parameters.values():
        annotation = parameter.annotation
        text = parameter.name
        if parameter.kind is parameter.VAR_KEYWORD:
            text = f"**{text}"
        elif parameter.kind is parameter.VAR_POSITIONAL:
            text, keyword_only = f"*{text}", True
        elif parameter.kind is parameter.KEYWORD_ONLY and not keyword_only:
            out.append("*")
        keyword_only = keyword_only or parameter.kind is parameter.KEYWORD_ONLY
        if annotation is not parameter.empty:
            text += f": {annotation}"
        if parameter.default is not parameter.empty:
            text += " = ..."
        out.append(text)
    return ", ".join(out)


def _method(name: str, function, *, inherited: bool) -> str:
    returns = inspect.signature(function).return_annotation
    if returns is inspect.Signature.empty:  # __init__
        returns = "None"
    is_async = inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)
    if inherited:  # an operation of the table: awaited on the async client
        listed = ITERATOR.match(returns)
        returns, is_async = (
            (f"AsyncIterator[{listed.group(1)}]", False)
            if listed
            else (
                returns,
                True,
            )
        )
    prefix = "async def" if is_async else "def"
    return f"    {prefix} {name}({_parameters(function)}) -> {returns}: ..."


def render() -> str:
    lines = []
    own = vars(AsyncGoldsetClient)
    first = ("__init__", "aclose", "__aenter__", "__aexit__")
    for name in first:
        lines.append(_method(name, own[name], inherited=False))
    for name in sorted(dir(AsyncGoldsetClient)):
        function = getattr(AsyncGoldsetClient, name)
        if name.startswith("_") or name in first or not inspect.isfunction(function):
            continue
        lines.append(_method(name, function, inherited=name not in own))
    body = "\n".join(lines)
    used = sorted(
        n
        for n in vars(models)
        if isinstance(getattr(models, n), type)
        and re.search(rf"\b{n}\b", body)
        and getattr(models, n).__module__ == models.__name__
    )
    assert set(re.findall(r"\b(?:FileLike|ProgressCallback|Records|Since|VersionRef)\b", body)) <= {
        n for n in vars(_operations)
    }
    header = HEADER.format(models="\n".join(f"    {n}," for n in used))
    return _formatted(f"{header}\n{body}\n")


def _formatted(text: str) -> str:
    """``text`` as ``ruff format`` writes it (the repository's style; ruff formats stubs too)."""
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff), "format", "--stdin-filename", str(STUB), "-"],
        input=text, capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return done.stdout


if __name__ == "__main__":
    STUB.write_text(render())
    print(f"wrote {STUB.relative_to(ROOT)}")
