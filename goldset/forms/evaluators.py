"""Forms for evaluators, PCS calibrations and release reports (parsing only)."""

from django import forms

from goldset.forms.exports import VersionChoiceField
from goldset.models import (
    CalibrationStatus,
    EvaluatorKind,
    PairwiseTask,
    PcsCalibration,
    Run,
)


class EvaluatorForm(forms.Form):
    name = forms.CharField(max_length=120)
    version = forms.CharField(max_length=40)
    kind = forms.ChoiceField(choices=EvaluatorKind.choices)
    model_id = forms.CharField(max_length=200, required=False, label="Model id")
    prompt_hash = forms.CharField(max_length=128, required=False, label="Prompt hash")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class CalibrationStartForm(forms.Form):
    name = forms.SlugField(
        max_length=80, initial="pcs", help_text="Each run of the same name is a new version."
    )


class ReleaseReportForm(forms.Form):
    """The versions (by number or tag), runs and calibrations offered are the project's only."""

    version = VersionChoiceField(help_text="A tag (its version now) or a number.")
    runs = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    calibration = forms.ModelChoiceField(
        queryset=PcsCalibration.objects.none(),
        required=False,
        empty_label="PROBE defaults",
        label="PCS calibration",
    )
    pairwise_task = forms.ModelChoiceField(
        queryset=PairwiseTask.objects.none(),
        required=False,
        empty_label="No pairwise section",
        label="Pairwise task (a section beside Table 5)",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].offer(project)
        self.fields["calibration"].queryset = PcsCalibration.objects.filter(
            project=project, status=CalibrationStatus.SUCCEEDED
        )
        self.fields["pairwise_task"].queryset = PairwiseTask.objects.filter(
            project=project
        ).select_related("gold_version")
        self.fields["pairwise_task"].label_from_instance = _task_label
        runs = (
            Run.objects.filter(project=project, records__is_calibration=False)
            .distinct()
            .order_by("run_id")
        )
        self.fields["runs"].choices = [(r.run_id, r.run_id) for r in runs]


def _task_label(task: PairwiseTask) -> str:
    """A pairwise task as the release form offers it: its name and its gold version (a report
    takes only a task on its own version, or one that names none)."""
    return f"{task.name} ({task.gold_version.label if task.gold_version_id else 'no gold version'})"
