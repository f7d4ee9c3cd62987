"""The project settings page (projects:settings): a project's admins see every per-project
tunable (doc, installation default, the project's value, the value in force), set and reset
values (422 naming the setting and its rule when refused) and read the history; pages of the
project print the values in force there, and another project keeps its own."""

import re

import pytest
from django.urls import reverse

from goldset.conf import PROJECT_TUNABLES
from goldset.models import Project, ProjectSettingChange
from goldset.services.project_settings import update_project_settings
from goldset.services.projects import create_project, grant_role
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def at(project, name: str) -> str:
    """``name``'s URL inside ``project`` (the /p/<slug> mount)."""
    return f"/p/{project.slug}{reverse(name)}"


@pytest.fixture
def world(make_user):
    """Projects A and B; a project admin of A who is no installation admin; an annotator and a
    lead of A; a lead of B only; an installation admin."""
    staff = make_user(Role.ADMIN, username="staff")
    a = create_project(name="Customer bot", slug="bot", by=staff)
    b = create_project(name="Policy assistant", slug="policy", by=staff)
    people = {
        "staff": staff,
        "owner": make_user(None, username="owner-a"),
        "annotator": make_user(None, username="ann-a"),
        "lead": make_user(None, username="lead-a"),
        "lead_b": make_user(None, username="lead-b"),
        "both": make_user(None, username="lead-ab"),
    }
    grant_role(project=a, user=people["owner"], role=Role.ADMIN)
    grant_role(project=a, user=people["annotator"], role=Role.ANNOTATOR)
    grant_role(project=a, user=people["lead"], role=Role.LEAD)
    grant_role(project=b, user=people["lead_b"], role=Role.LEAD)
    grant_role(project=a, user=people["both"], role=Role.LEAD)
    grant_role(project=b, user=people["both"], role=Role.LEAD)
    return a, b, people


def _row(page: str, name: str) -> str:
    match = re.search(rf'<tr id="setting-{name}".*?</tr>', page, flags=re.S)
    assert match, name
    return match.group(0)


def test_the_page_lists_every_per_project_setting_with_default_own_value_and_value_in_force(
    client_for, world
):
    a, b, people = world
    update_project_settings(project=a, changes={"KAPPA_GATE": "0.8"}, by=people["owner"])
    response = client_for(people["owner"]).get(at(a, "projects:settings"))
    assert response.status_code == 200
    page = response.content.decode()
    for name in PROJECT_TUNABLES:
        assert f'id="setting-{name}"' in page
    gate = _row(page, "KAPPA_GATE")
    assert 'class="overridden"' in gate
    assert '<td class="default"><code>0.7</code></td>' in gate
    assert 'value="0.8"' in gate
    assert '<td class="in-force"><code>0.8</code>' in gate
    assert "Reset</button>" in gate
    alpha = _row(page, "AGREEMENT_ALPHA_TARGET")
    assert "overridden" not in alpha and "Reset</button>" not in alpha
    assert '<td class="in-force"><code>0.75</code>' in alpha
    assert "Gold Krippendorff&#x27;s alpha target." in alpha
    targets = _row(page, "CURATION_SOURCE_TARGETS")
    assert "&quot;public_rfp&quot;: 40" in targets
    # B's page shows B's values: the default
    page_b = client_for(people["staff"]).get(at(b, "projects:settings")).content.decode()
    assert '<td class="in-force"><code>0.7</code>' in _row(page_b, "KAPPA_GATE")
    assert "No setting of this project has been changed" in page_b


@pytest.mark.parametrize(("who", "status"), [("annotator", 403), ("lead", 403), ("lead_b", 404)])
def test_only_project_admins_open_or_change_the_settings(client_for, world, who, status):
    a, _, people = world
    client = client_for(people[who])
    assert client.get(at(a, "projects:settings")).status_code == status
    response = client.post(at(a, "projects:protocol_settings"), {"KAPPA_GATE": "0.9"})
    assert response.status_code == status
    reset = client.post(at(a, "projects:protocol_settings"), {"reset": "KAPPA_GATE"})
    assert reset.status_code == status
    a.refresh_from_db()
    assert a.settings == {}
    assert not ProjectSettingChange.objects.exists()


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_a_project_admin_and_an_installation_admin_set_a_value(client_for, world, who):
    a, b, people = world
    client = client_for(people[who])
    response = client.post(
        at(a, "projects:protocol_settings"), {"KAPPA_GATE": "0.82", "AUDIT_SAMPLE_SEED": ""}
    )
    assert response.status_code == 302
    assert response["Location"] == at(a, "projects:settings")
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.settings == {"KAPPA_GATE": "0.82"}
    assert b.settings == {}
    change = ProjectSettingChange.objects.get()
    assert (change.project, change.name, change.old_value, change.new_value) == (
        a,
        "KAPPA_GATE",
        None,
        "0.82",
    )
    assert change.changed_by == people[who]
    page = client.get(at(a, "projects:settings")).content.decode()
    assert "Settings saved: KAPPA_GATE." in page
    history = page.split('id="project-settings-history"')[1]
    assert f"<td>{people[who].username}</td>" in history
    assert "<td><code>KAPPA_GATE</code></td>" in history
    assert "<td><code>0.82</code></td>" in history


def test_a_refused_value_answers_422_naming_the_setting_and_the_rule(client_for, world):
    a, _, people = world
    response = client_for(people["owner"]).post(
        at(a, "projects:protocol_settings"),
        {"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "1.5"},
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "AUDIT_SAMPLE_RATE: must be a rate between 0 and 1" in page
    # the entered values stay in the form; nothing is stored
    assert 'value="1.5"' in _row(page, "AUDIT_SAMPLE_RATE")
    assert "must be a rate between 0 and 1" in _row(page, "AUDIT_SAMPLE_RATE")
    a.refresh_from_db()
    assert a.settings == {}
    assert not ProjectSettingChange.objects.exists()
    unknown = client_for(people["owner"]).post(
        at(a, "projects:protocol_settings"), {"reset": "JOB_MAX_ATTEMPTS"}
    )
    assert unknown.status_code == 422
    assert "JOB_MAX_ATTEMPTS: must be a per-project setting" in unknown.content.decode()


def test_reset_and_an_emptied_field_go_back_to_the_installation_default(client_for, world):
    a, _, people = world
    update_project_settings(
        project=a, changes={"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_SEED": "77"}, by=people["owner"]
    )
    client = client_for(people["owner"])
    assert (
        client.post(at(a, "projects:protocol_settings"), {"reset": "KAPPA_GATE"}).status_code == 302
    )
    a.refresh_from_db()
    assert a.settings == {"AUDIT_SAMPLE_SEED": "77"}
    fields = {name: (a.settings.get(name) or "") for name in PROJECT_TUNABLES}
    fields["AUDIT_SAMPLE_SEED"] = ""
    assert client.post(at(a, "projects:protocol_settings"), fields).status_code == 302
    a.refresh_from_db()
    assert a.settings == {}
    page = client.get(at(a, "projects:settings")).content.decode()
    assert '<td class="in-force"><code>9314</code>' in _row(page, "AUDIT_SAMPLE_SEED")
    resets = ProjectSettingChange.objects.filter(project=a, new_value__isnull=True)
    assert sorted(c.name for c in resets) == ["AUDIT_SAMPLE_SEED", "KAPPA_GATE"]


def test_the_history_is_newest_first_and_paginated(client_for, world):
    a, _, people = world
    for n in range(30):
        update_project_settings(
            project=a, changes={"AUDIT_SAMPLE_SEED": str(100 + n)}, by=people["owner"]
        )
    client = client_for(people["owner"])
    first = client.get(at(a, "projects:settings")).content.decode()
    history = first.split('id="project-settings-history"')[1]
    rows = re.findall(r"<tr>\s*<td>.*?</tr>", history, flags=re.S)
    assert len(rows) == 25
    newest = [re.findall(r"<code>(\w+)</code>", row) for row in rows[:2]]
    assert newest == [["AUDIT_SAMPLE_SEED", "128", "129"], ["AUDIT_SAMPLE_SEED", "127", "128"]]
    assert "Page 1 of 2 (30 in all)" in history
    second = client.get(at(a, "projects:settings") + "?page=2").content.decode()
    assert "<td><code>100</code></td>" in second.split('id="project-settings-history"')[1]


def test_pages_print_the_values_in_force_in_their_project(client_for, world):
    """The same pages of A and B print each project's κ gate, α target and audit sample."""
    a, b, people = world
    update_project_settings(
        project=a,
        changes={
            "KAPPA_GATE": "0.8",
            "AGREEMENT_ALPHA_TARGET": "0.9",
            "AUDIT_SAMPLE_RATE": "0.2",
            "AUDIT_SAMPLE_SEED": "77",
        },
        by=people["owner"],
    )
    client = client_for(people["both"])
    alerts_a = client.get(at(a, "quality:alerts")).content.decode()
    alerts_b = client.get(at(b, "quality:alerts")).content.decode()
    assert "gold α &lt; 0.90 for a task type" in alerts_a
    assert "κ &lt; 0.80 for an annotator pair" in alerts_a
    assert "gold α &lt; 0.75 for a task type" in alerts_b
    assert "κ &lt; 0.70 for an annotator pair" in alerts_b
    queue_a = client.get(at(a, "answers:adjudication_queue")).content.decode()
    queue_b = client.get(at(b, "answers:adjudication_queue")).content.decode()
    assert "the 20 % audit sample (seed 77)" in queue_a
    assert "the 5 % audit sample (seed 9314)" in queue_b
    # an unprefixed URL addresses the default project: the installation's values
    assert (
        "κ &lt; 0.70" in client_for(people["staff"]).get(reverse("quality:alerts")).content.decode()
    )
    assert Project.objects.get(slug="policy").settings == {}


def test_the_release_and_run_pages_preselect_the_pcs_calibration_in_use(client_for, world):
    from goldset.models import CalibrationStatus, PcsCalibration

    a, b, people = world
    ours = PcsCalibration.objects.create(
        project=a, name="fitted", version=1, status=CalibrationStatus.SUCCEEDED
    )
    client = client_for(people["staff"])
    selected = f'<option value="{ours.pk}" selected>'
    assert selected not in client.get(at(a, "evaluators:releases")).content.decode()
    update_project_settings(
        project=a, changes={"PCS_CALIBRATION": str(ours.pk)}, by=people["owner"]
    )
    assert selected in client.get(at(a, "evaluators:releases")).content.decode()
    assert selected in client.get(at(a, "exports:jobs")).content.decode()
    assert selected not in client.get(at(b, "evaluators:releases")).content.decode()


def test_the_queue_page_prints_the_project_queue_seed(client_for, world):
    a, b, people = world
    both = people["both"]
    grant_role(project=a, user=both, role=Role.ANNOTATOR)
    grant_role(project=b, user=both, role=Role.ANNOTATOR)
    update_project_settings(project=a, changes={"QUEUE_SHUFFLE_SEED": "4242"}, by=people["owner"])
    client = client_for(both)
    assert "shuffled with seed 4242." in client.get(at(a, "answers:queue")).content.decode()
    assert "shuffled with seed 6601." in client.get(at(b, "answers:queue")).content.decode()
