from decimal import Decimal

from django import forms

from goldset.models import SamplingRuleKind

FIELDS = ("name", "kind", "percentage", "seed", "threshold", "value", "daily_cap", "position")


class SamplingRuleForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Recorded on every trace the rule samples.")
    kind = forms.ChoiceField(choices=SamplingRuleKind.choices)
    percentage = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_value=Decimal(100),
        max_digits=6,
        decimal_places=3,
        help_text="Percentage rules: the share of traces sampled.",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        initial=0,
        help_text="Percentage rules: the recorded seed; the same seed selects the same traces.",
    )
    threshold = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_value=Decimal(1),
        max_digits=4,
        decimal_places=3,
        help_text="Uncertainty: at or above; judge: a confidence below it; new question: the "
        "similarity at or above which a gold question is a near-duplicate (default 0.8).",
    )
    value = forms.CharField(
        required=False,
        max_length=64,
        help_text="Domain rules: a domain slug; task type rules: a task type.",
    )
    daily_cap = forms.IntegerField(
        required=False, min_value=0, help_text="Traces sampled per UTC day at most (empty: no cap)."
    )
    position = forms.IntegerField(
        min_value=0, max_value=10_000, initial=0, help_text="Rules are tried in this order."
    )
    note = forms.CharField(required=False, max_length=300, label="Why")

    @classmethod
    def for_rule(cls, rule, data=None):
        return cls(data=data, initial={name: getattr(rule, name) for name in FIELDS})

    def add_service_error(self, message: str) -> None:
        """A service's GoldsetError: ``field: reason`` goes to that field, else to the form."""
        field, _, _ = message.partition(":")
        self.add_error(field if field in self.fields else None, message)
