"""The tunables table: documented in .env.example, typed from the environment, read at call time."""

from decimal import Decimal
from pathlib import Path

from goldset.conf import TUNABLES, curation_setting, from_environment, tunable

ROOT = Path(__file__).resolve().parents[2]


def _env_example() -> dict[str, str]:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            pairs[name.strip()] = value.strip()
    return pairs


def test_env_example_lists_every_tunable_with_its_default():
    documented = _env_example()
    assert set(TUNABLES) <= set(documented)
    assert from_environment({name: documented[name] for name in TUNABLES}) == {
        name: t.default for name, t in TUNABLES.items()
    }


def test_environment_values_are_parsed_to_the_tunables_types():
    parsed = from_environment(
        {
            "AGREEMENT_MIN_ITEMS": "5",
            "CURATION_SPOT_CHECK_RATE": "0.2",
            "CURATION_FRESH_REVIEWERS_ON_REVISION": "false",
            "CURATION_SOURCE_TARGETS": '{"public_rfp": 50, "synthetic": 50}',
            "LABELING_COST_GOLD": "",
        }
    )
    assert parsed["AGREEMENT_MIN_ITEMS"] == 5
    assert parsed["CURATION_SPOT_CHECK_RATE"] == Decimal("0.2")
    assert parsed["CURATION_FRESH_REVIEWERS_ON_REVISION"] is False
    assert parsed["CURATION_SOURCE_TARGETS"] == {"public_rfp": 50, "synthetic": 50}
    assert parsed["LABELING_COST_GOLD"] == 0.40  # empty means unset: the default


def test_code_reads_a_tunable_at_call_time_so_settings_override_it(settings):
    settings.AGREEMENT_MIN_ITEMS = 3
    settings.CURATION_WORKING_SLICE_SIZE = 7
    assert tunable("AGREEMENT_MIN_ITEMS") == 3
    assert curation_setting("WORKING_SLICE_SIZE") == 7


def test_no_app_code_reads_settings_with_getattr():
    """The app (goldset) reads its tunables through goldset.conf; project settings such as
    workbench's proxy hops stay in workbench/settings.py."""
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("goldset",)
        for path in (ROOT / package).rglob("*.py")
        if "getattr(settings" in path.read_text() and path.name != "conf.py"
    ]
    assert offenders == []
