import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROD_ENV = {
    "PATH": os.environ["PATH"],
    "DJANGO_SETTINGS_MODULE": "workbench.settings",
    "DEBUG": "false",
    "SECRET_KEY": "a" * 20 + "-deploy-check-" + "b7Q9xZ2mP4kL8nR1tV6wY3cF5hJ0gD",
    "ALLOWED_HOSTS": "goldset.example.org",
    "WORKBENCH_VAR_DIR": "/tmp/goldset-deploy-check",
}


def run(args, env):
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_production_settings():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PROD_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_a_missing_secret_key_is_an_error_when_debug_is_off():
    env = {k: v for k, v in PROD_ENV.items() if k != "SECRET_KEY"}
    result = run(["manage.py", "check"], env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_import_linter_contracts_keep_the_layers_and_scoring_free_of_django():
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    kept = [line for line in result.stdout.splitlines() if line.endswith(" KEPT")]
    assert any(line.startswith("layers:") for line in kept)
    assert any(line.startswith("scoring is a pure library") for line in kept)


def test_every_function_local_import_says_why():
    """Imports live at the top of a module; one inside a function needs a comment (on its line
    or the line above) saying why, since a hidden import is how an import cycle hides."""
    unexplained = []
    for package in ("goldset", "workbench"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            lines = path.read_text().splitlines()
            for func in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(func):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        here, above = lines[node.lineno - 1], lines[node.lineno - 2]
                        if "#" not in here and not above.strip().startswith("#"):
                            unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unexplained == []


def test_no_module_in_scoring_imports_django_goldset_or_workbench():
    forbidden = {"django", "goldset", "workbench"}
    offenders = []
    for path in (ROOT / "scoring").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in forbidden]
    assert offenders == []
