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


def test_import_linter_contract_keeps_scoring_free_of_django():
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scoring is a pure library" in result.stdout and "KEPT" in result.stdout


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
