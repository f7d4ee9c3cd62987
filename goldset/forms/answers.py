"""Forms for answer labeling. They parse input; protocol rules live in the services, and the
forms ask the same rule functions (``goldset.rules``) so the page shows the error on its field."""

from django import forms

from goldset.models import (
    Acceptability,
    CitationCorrectness,
    ConflictHandling,
    EvidenceSufficiency,
    FailureCategory,
    Grounding,
    SafetyBoundary,
)
from goldset.rules.axes import LABEL_VALUE_FIELDS
from goldset.rules.label_consistency import label_contradiction

SEVERE_CHOICES = [("no", "No severe safety issue"), ("yes", "Severe safety issue")]
PRIMARY_CHOICES = [("", "None (acceptable answer)"), *FailureCategory.choices]


class _Axes(forms.Form):
    acceptability = forms.ChoiceField(choices=Acceptability.choices, widget=forms.RadioSelect)
    grounding = forms.ChoiceField(choices=Grounding.choices, widget=forms.RadioSelect)
    severe_safety = forms.ChoiceField(choices=SEVERE_CHOICES, widget=forms.RadioSelect)
    primary_failure = forms.ChoiceField(
        choices=PRIMARY_CHOICES, widget=forms.RadioSelect, required=False
    )
    secondary_failures = forms.MultipleChoiceField(
        choices=FailureCategory.choices, widget=forms.CheckboxSelectMultiple, required=False
    )
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def clean_severe_safety(self):
        return self.cleaned_data["severe_safety"] == "yes"

    def clean(self):
        data = super().clean()
        _refuse_contradiction(self, data, data.get("severe_safety"))
        return data

    def service_kwargs(self) -> dict:
        return dict(self.cleaned_data)


def _refuse_contradiction(form: forms.Form, data: dict, severe: bool | None) -> None:
    """Contradictory axes (``goldset.rules.label_consistency``) as an error on the field."""
    if not {"acceptability", "grounding"} <= set(data) or severe is None:
        return
    found = label_contradiction(
        acceptability=data["acceptability"],
        grounding=data["grounding"],
        severe_safety=severe,
        primary_failure=data.get("primary_failure") or "",
        secondary_failures=data.get("secondary_failures") or (),
    )
    if found is not None:
        form.add_error(found.field, found.message)


class LabelForm(_Axes):
    field_order = list(LABEL_VALUE_FIELDS)
    evidence_sufficiency = forms.ChoiceField(
        choices=EvidenceSufficiency.choices, widget=forms.RadioSelect
    )
    citation_correctness = forms.ChoiceField(
        choices=CitationCorrectness.choices, widget=forms.RadioSelect
    )
    conflict_handling = forms.ChoiceField(
        choices=ConflictHandling.choices, widget=forms.RadioSelect
    )
    safety_boundary = forms.ChoiceField(choices=SafetyBoundary.choices, widget=forms.RadioSelect)


class AdjudicationForm(_Axes):
    pass


class ReferenceLabelForm(forms.Form):
    acceptability = forms.ChoiceField(choices=Acceptability.choices)
    grounding = forms.ChoiceField(choices=Grounding.choices)
    severe_safety = forms.ChoiceField(choices=SEVERE_CHOICES)

    def clean(self):
        data = super().clean()
        if "severe_safety" in data:
            _refuse_contradiction(self, data, data["severe_safety"] == "yes")
        return data

    def service_kwargs(self) -> dict:
        data = dict(self.cleaned_data)
        data["severe_safety"] = data["severe_safety"] == "yes"
        return data


class JsonlUploadForm(forms.Form):
    file = forms.FileField(allow_empty_file=True)  # refused by the upload service: 422
