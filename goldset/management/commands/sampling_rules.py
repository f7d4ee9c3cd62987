import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.forms.sampling import FIELDS, SamplingRuleForm
from goldset.management.project_option import add_project_argument, project_from
from goldset.models import SamplingRule
from goldset.services.sampling import create_sampling_rule, rule_snapshot, update_sampling_rule
from workbench.roles import Role, roles_in

ACTIONS = ("list", "add", "update", "enable", "disable")
EXIT_REFUSED = 2
# option → form field; given as text and checked by the Sampling rules page's form
OPTIONS = {
    "new_name": "name",
    "kind": "kind",
    "percentage": "percentage",
    "seed": "seed",
    "threshold": "threshold",
    "value": "value",
    "daily_cap": "daily_cap",
    "position": "position",
}


def refuse(message: str) -> CommandError:
    return CommandError(message, returncode=EXIT_REFUSED)


class Command(BaseCommand):
    help = (
        "A project's sampling rules of production traces, as on its Sampling rules page: list "
        "them (JSON), add one (NAME --kind KIND and what the kind needs), update one (NAME and "
        "the options to change; --daily-cap none lifts the cap), enable or disable one. Every "
        "change is the rule's next version, audited (--user names the admin it is recorded "
        "for). Exit 2 on bad input, naming the field."
    )

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("action", metavar="|".join(ACTIONS))
        parser.add_argument("name", nargs="?", default="", help="the rule's name")
        parser.add_argument("--name", dest="new_name", help="update: the rule's new name")
        parser.add_argument("--kind", help="percentage, feedback, judge, uncertainty, …")
        parser.add_argument("--percentage", help="percentage rules: 0–100")
        parser.add_argument("--seed", help="percentage rules: the recorded seed")
        parser.add_argument("--threshold", help="uncertainty, judge, new_question: 0–1")
        parser.add_argument("--value", help="domain rules: a domain slug; task_type: a type")
        parser.add_argument("--daily-cap", dest="daily_cap", help="traces a UTC day, or none")
        parser.add_argument("--position", help="rules are tried in this order")
        parser.add_argument("--note", default="", help="why (kept in the audit trail)")
        parser.add_argument("--user", default="", help="the admin the change is recorded for")

    def handle(self, *args, action, name, project, note, user, **options):
        project = project_from(project, returncode=EXIT_REFUSED)
        if action not in ACTIONS:
            raise refuse(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
        if action == "list":
            rules = SamplingRule.objects.filter(project=project).order_by("position", "id")
            self.stdout.write(json.dumps([{"id": r.pk, **rule_snapshot(r)} for r in rules]))
            return
        if not name:
            raise refuse(f"name: give the rule's name to {action} it")
        actor = self._actor(user, project)
        given = {OPTIONS[k]: v for k, v in options.items() if k in OPTIONS and v is not None}
        try:
            if action == "add":
                if "name" in given:
                    raise refuse("name: give the new rule's name as NAME, not --name")
                data = self._checked({"seed": "0", "position": "0", **given, "name": name})
                rule = create_sampling_rule(project=project, actor=actor, **data, note=note)
            else:
                rule = SamplingRule.objects.filter(project=project, name=name).first()
                if rule is None:
                    raise refuse(f"name: no sampling rule {name!r} in project {project.slug}")
                if action == "update":
                    current = SamplingRuleForm.for_rule(rule).initial
                    changes = self._checked({**_as_text(current), **given})
                else:
                    if given:
                        raise refuse(f"{next(iter(given))}: {action} takes no other option")
                    changes = {"enabled": action == "enable"}
                rule = update_sampling_rule(
                    project=project, actor=actor, rule_id=rule.pk, note=note, **changes
                )
        except GoldsetError as exc:
            raise refuse(str(exc)) from exc
        self.stdout.write(json.dumps({"id": rule.pk, **rule_snapshot(rule)}))

    def _actor(self, username: str, project):
        if not username:
            return None  # a management command, run by whoever holds the shell
        actor = get_user_model().objects.filter(username=username).first()
        if actor is None:
            raise refuse(f"user: no user {username!r}")
        if Role.ADMIN not in roles_in(actor, project):
            raise refuse(f"user: {username!r} is not an admin of project {project.slug}")
        return actor

    def _checked(self, data: dict) -> dict:
        """The rule's fields checked by the page's form; the first problem names its field."""
        if str(data.get("daily_cap", "")).strip().lower() == "none":
            data["daily_cap"] = ""
        form = SamplingRuleForm(data=data)
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            raise refuse(f"{field}: {' '.join(errors)}")
        return {key: form.cleaned_data[key] for key in FIELDS}


def _as_text(values: dict) -> dict:
    return {key: "" if value is None else str(value) for key, value in values.items()}
