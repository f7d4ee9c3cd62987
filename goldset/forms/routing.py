from decimal import Decimal

from django import forms

from goldset.models import Domain, TaskType


class RoutingRulesForm(forms.Form):
    gold_task_types = forms.MultipleChoiceField(
        choices=TaskType.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Task types routed to GOLD",
    )
    uncertainty_threshold = forms.DecimalField(
        min_value=Decimal(0),
        max_value=Decimal(1),
        max_digits=4,
        decimal_places=3,
        label="Model uncertainty at or above which a case goes to GOLD",
    )
    adversarial_routes_gold = forms.BooleanField(
        required=False, label="Adversarial cases go to GOLD"
    )
    gold_domains = forms.ModelMultipleChoiceField(
        queryset=Domain.objects.order_by("slug"),
        to_field_name="slug",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Domains routed to GOLD (extra rule)",
    )
    note = forms.CharField(
        max_length=300, label="Why this change", help_text="Recorded with the new version."
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the project's domains can be routed to GOLD (another project's slug is refused).
        self.fields["gold_domains"].queryset = Domain.objects.filter(project=project).order_by(
            "slug"
        )

    @classmethod
    def for_rules(cls, rules, data=None, *, project):
        initial = {
            "gold_task_types": rules.gold_task_types,
            "uncertainty_threshold": rules.uncertainty_threshold,
            "adversarial_routes_gold": rules.adversarial_routes_gold,
            "gold_domains": rules.gold_domains,
        }
        return cls(data=data, initial=initial, project=project)
