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


class RecordTripleForm(forms.Form):
    """Promote a labeled record to a gold triple: which block version governs (the record's
    cited, then retrieved ones; the first by default), the starting expected answer (the
    answer as adjudicated), and the triple's source."""

    block_version = forms.TypedChoiceField(coerce=int, label="Expected block version")
    expected_answer = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
    source = forms.ChoiceField(
        choices=[
            (Source.LLM_GENERATED, Source.LLM_GENERATED.label),
            (Source.PUBLIC_RFP, Source.PUBLIC_RFP.label),
            (Source.SYNTHETIC_HUMAN_VERIFIED, Source.SYNTHETIC_HUMAN_VERIFIED.label),
        ],
        initial=Source.LLM_GENERATED,
        help_text="The answer was written by a model: LLM-generated unless you rewrote it.",
    )

    def __init__(self, *args, record, candidates, **kwargs):
        kwargs.setdefault(
            "initial",
            {
                "expected_answer": record.answer,
                "block_version": candidates[0].pk if candidates else None,
            },
        )
        super().__init__(*args, **kwargs)
        self.fields["block_version"].choices = [
            (v.pk, f"{v.block.block_id}@v{v.version} — {v.block.document.title}")
            for v in candidates
        ]

    def add_service_error(self, message: str) -> None:
        field, _, _ = message.partition(":")
        self.add_error(field if field in self.fields else None, message)
