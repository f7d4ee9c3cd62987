from django import forms

from goldset.models import Domain, Source, TaskType
from goldset.services.promotion import MAX_REASON, RECORD, TRIPLE


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=MAX_REASON,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Why promote to GOLD",
        help_text="Recorded with the promotion and shown in the case's history.",
    )


class BatchFilterForm(forms.Form):
    """Which TRIAGE cases to list. No system/run/model filter: leads stay blind."""

    kind = forms.ChoiceField(
        choices=[(TRIPLE, "Triples"), (RECORD, "Answer records")], initial=TRIPLE
    )
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.order_by("slug"),
        to_field_name="slug",
        required=False,
        empty_label="any domain",
    )
    task_type = forms.ChoiceField(
        choices=[("", "any task type"), *TaskType.choices], required=False
    )
    source = forms.ChoiceField(
        choices=[("", "any source"), *Source.choices],
        required=False,
        label="Source (triples only)",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["domain"].queryset = Domain.objects.filter(project=project).order_by("slug")

    def filters(self) -> dict:
        data = self.cleaned_data
        return {
            "kind": data["kind"],
            "domain": data["domain"].slug if data["domain"] else "",
            "task_type": data["task_type"],
            "source": data["source"] if data["kind"] == TRIPLE else "",
        }


class BatchPromoteForm(ReasonForm):
    """The token (rendered by the template from the current matching set) pins what is promoted."""

    token = forms.CharField(widget=forms.HiddenInput)


class RerouteConfirmForm(forms.Form):
    token = forms.CharField(widget=forms.HiddenInput)
