"""Set-up: the hashed locks cover every dependency pyproject.toml names (the runtime lock the
compose image installs, at the versions of the development lock `make` installs), and `make run` prints the
demo credentials once, from the var directory the settings use (WORKBENCH_VAR_DIR)."""

import re
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _locked(name: str) -> dict[str, list[str]]:
    """Package name → the pinned versions in a lock file (one per environment marker)."""
    pins: dict[str, list[str]] = {}
    text = (ROOT / name).read_text()
    for entry in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([^\s;\\]+)", entry)
        if match:
            assert "--hash=sha256:" in entry, f"{match.group(1)} is locked without a hash"
            pins.setdefault(canonicalize_name(match.group(1)), []).append(match.group(2))
    return pins


def _assert_pinned(wanted: list[str], locked: dict[str, list[str]], lock: str) -> None:
    assert len(locked) > len(wanted)  # the transitive dependencies are pinned too
    for line in wanted:
        requirement = Requirement(line)
        versions = locked.get(canonicalize_name(requirement.name))
        assert versions, f"{requirement.name} is in pyproject.toml but not in {lock}"
        assert all(requirement.specifier.contains(v, prereleases=True) for v in versions), (
            f"{lock} pins {requirement.name} {versions}, pyproject.toml asks {line}"
        )


def test_the_locks_pin_every_dependency_of_pyproject_with_a_version_it_allows():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime, dev = _locked("requirements.lock"), _locked("requirements-dev.lock")
    _assert_pinned(project["dependencies"], runtime, "requirements.lock")
    _assert_pinned(
        [*project["dependencies"], *project["optional-dependencies"]["dev"]],
        dev,
        "requirements-dev.lock",
    )
    for name, versions in runtime.items():
        assert versions == dev.get(name), f"{name}: runtime {versions}, development {dev.get(name)}"


def test_the_makefile_installs_from_the_lock_and_reads_no_fixed_var_path():
    makefile = (ROOT / "Makefile").read_text()
    install = makefile[makefile.index("$(BIN)/.installed:") : makefile.index("\nlock:")]
    assert "requirements-dev.lock" in install.splitlines()[0]  # a changed lock reinstalls
    assert install.count("--require-hashes -r requirements-dev.lock") == 2  # uv, and pip without it
    assert "var/" not in makefile


@pytest.mark.django_db
def test_seed_demo_prints_the_credentials_once_from_the_settings_var_directory(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "elsewhere"
    first = StringIO()
    call_command("seed_demo", password="setup-demo-pass-1", stdout=first)
    credentials = settings.VAR_DIR / "demo-credentials.txt"
    assert credentials.exists()
    assert first.getvalue().count("setup-demo-pass-1") == 11  # one line per demo user, once

    again = StringIO()
    call_command("seed_demo", stdout=again)
    assert str(credentials) in again.getvalue()
    assert again.getvalue().count("setup-demo-pass-1") == 11
    for line in credentials.read_text().splitlines()[1:]:
        assert line in again.getvalue()
