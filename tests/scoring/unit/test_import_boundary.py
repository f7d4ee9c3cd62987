"""scoring must stay a pure library: no Django, goldset or workbench imports."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import scoring

FORBIDDEN = ("django", "goldset", "workbench")


def test_no_module_in_scoring_imports_forbidden_packages():
    root = Path(scoring.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_importing_every_scoring_module_loads_no_forbidden_package():
    modules = [
        f"scoring.{m.name}" for m in pkgutil.iter_modules(scoring.__path__) if m.name != "__main__"
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert "scoring.retrieval" in modules and "scoring.agreement" in modules


def test_cli_constants_mirror_the_library():
    from scoring import agreement, cli, io, retrieval, stats

    assert cli.METRICS == retrieval.METRICS and cli.DEFAULT_METRICS == retrieval.DEFAULT_METRICS
    assert cli.GAINS == retrieval.GAINS and cli.LEVELS == agreement.LEVELS
    assert (cli.QRELS_FORMATS, cli.RUN_FORMATS) == (io.QRELS_FORMATS, io.RUN_FORMATS)
    assert (cli.DEFAULT_RESAMPLES, cli.DEFAULT_SEED) == (
        stats.DEFAULT_RESAMPLES,
        stats.DEFAULT_SEED,
    )
