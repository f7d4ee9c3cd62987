"""Forms for evaluators, PCS calibrations and release reports (parsing only)."""

from django import forms

from goldset.models import CalibrationStatus, EvaluatorKind, GoldVersion, PcsCalibration, Run


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
    version = forms.ModelChoiceField(
        queryset=GoldVersion.objects.filter(sealed=True).order_by("-number"),
        to_field_name="number",
        empty_label=None,
    )
    runs = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    calibration = forms.ModelChoiceField(
        queryset=PcsCalibration.objects.filter(status=CalibrationStatus.SUCCEEDED),
        required=False,
        empty_label="PROBE defaults",
        label="PCS calibration",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        runs = Run.objects.filter(records__is_calibration=False).distinct().order_by("run_id")
        self.fields["runs"].choices = [(r.run_id, r.run_id) for r in runs]
