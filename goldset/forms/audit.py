from django import forms

from goldset.selectors.audit import AuditFilters


class AuditFilterForm(forms.Form):
    """The audit page's filters (GET). Every field is optional; a range that ends before it
    starts is an error on ``date_to``."""

    actor = forms.CharField(max_length=150, required=False, label="Actor (username)")
    object_type = forms.CharField(
        max_length=64, required=False, label="Object type", help_text="e.g. goldset.triple"
    )
    object_id = forms.CharField(max_length=128, required=False, label="Object id")
    verb = forms.CharField(
        max_length=64, required=False, label="Verb", help_text="e.g. triple_viewed"
    )
    date_from = forms.DateField(
        required=False, label="From (day)", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label="To (day, included)", widget=forms.DateInput(attrs={"type": "date"})
    )

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and end < start:
            self.add_error("date_to", "The range ends before it starts.")
        return data

    def filters(self) -> AuditFilters:
        data = self.cleaned_data
        return AuditFilters(
            actor=data.get("actor", "").strip(),
            object_type=data.get("object_type", "").strip(),
            object_id=data.get("object_id", "").strip(),
            verb=data.get("verb", "").strip(),
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
        )
