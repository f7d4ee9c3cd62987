"""Team mode starts as the README says: every entry point reads ``.env``, the secret key can live
in a shared file, and ``/health/`` answers over plain HTTP while every other page still
redirects to HTTPS."""

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRINT_SETTINGS = (
    "from django.conf import settings; "
    "print(settings.SECRET_KEY); print(','.join(settings.ALLOWED_HOSTS)); print(settings.DEBUG)"
)


def _env(**extra):
    keep = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "workbench.settings"}
    return {**keep, **extra}


def _shell(env, code=PRINT_SETTINGS):
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manage_py_reads_the_env_file(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text(
        "SECRET_KEY=from-the-env-file-0123456789abcdefghijklmnopqrstuvwxyz\n"
        "DEBUG=false\nALLOWED_HOSTS=file.example.org\n"
        f"WORKBENCH_VAR_DIR={tmp_path / 'var'}\n"
    )
    result = _shell(_env(WORKBENCH_ENV_FILE=str(env_file)))
    assert result.returncode == 0, result.stderr
    key, hosts, debug = result.stdout.split()
    assert key == "from-the-env-file-0123456789abcdefghijklmnopqrstuvwxyz"
    assert hosts == "file.example.org"
    assert debug == "False"


def test_the_real_environment_wins_over_the_env_file(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text(
        "SECRET_KEY=from-the-file-0123456789abcdefghijklmnopqrstuvwxyz\n"
        f"ALLOWED_HOSTS=file.example.org\nWORKBENCH_VAR_DIR={tmp_path / 'var'}\n"
    )
    result = _shell(_env(WORKBENCH_ENV_FILE=str(env_file), ALLOWED_HOSTS="real.example.org"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[1] == "real.example.org"


def test_the_example_env_file_as_copied_needs_no_edit_when_a_key_file_is_named(tmp_path):
    """`cp .env.example .env` leaves SECRET_KEY empty; compose names SECRET_KEY_FILE, and every
    process gets the same random key, written once with owner-only permissions."""
    env_file = tmp_path / ".env"
    env_file.write_text((ROOT / ".env.example").read_text())
    key_file = tmp_path / "secrets" / "secret_key"
    env = _env(
        WORKBENCH_ENV_FILE=str(env_file),
        SECRET_KEY_FILE=str(key_file),
        WORKBENCH_VAR_DIR=str(tmp_path / "var"),
    )
    first = _shell(env)
    second = _shell(env)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    key = first.stdout.split()[0]
    assert len(key) >= 50
    assert second.stdout.split()[0] == key
    assert key_file.read_text().strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_an_empty_var_dir_means_the_default_not_the_current_directory(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text(
        "WORKBENCH_VAR_DIR=\nSECRET_KEY=k-0123456789abcdefghijklmnopqrstuvwxyz0123456789\n"
    )
    result = _shell(
        _env(WORKBENCH_ENV_FILE=str(env_file)),
        "from django.conf import settings; print(settings.VAR_DIR)",
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == ROOT / "var"


def test_health_answers_over_plain_http_while_pages_redirect_to_https(client, settings, db):
    settings.SECURE_SSL_REDIRECT = True
    health = client.get("/health/?format=json")
    assert health.status_code == 200
    assert health.json()["ok"] is True
    page = client.get("/login/")
    assert page.status_code == 301
    assert page["Location"].startswith("https://")
