"""Forms for pairwise review. They parse input; the rules (design, rationale, strength) live in
``goldset.services.pairwise`` and ``goldset.rules.pairwise``, whose errors the views put on the
field they name."""

from django import forms

from goldset.forms.exports import VersionChoiceField
from goldset.models import PairwiseDesign, Strength, Tier
from goldset.rules.pairwise import DEFAULT_PAIRWISE_SEED, MAX_COMPARISONS_PER_QUESTION

CHOICE_OPTIONS = [
    ("left", "A (left) better"),
    ("right", "B (right) better"),
    ("tie", "Tie"),
    ("both_unacceptable", "Both unacceptable"),
]
STRENGTH_OPTIONS = [("", "—"), *Strength.choices]


class PairwiseTaskForm(forms.Form):
    name = forms.CharField(max_length=200)
    runs = forms.TypedMultipleChoiceField(
        coerce=int, widget=forms.CheckboxSelectMultiple, help_text="Two or more, one per system."
    )
    gold_version = VersionChoiceField(
        required=False, empty_label="(none)", help_text="A tag (its version now) or a number."
    )
    design = forms.ChoiceField(
        choices=PairwiseDesign.choices, initial=PairwiseDesign.ALL_PAIRS, widget=forms.RadioSelect
    )
    comparisons_per_question = forms.IntegerField(
        min_value=1, max_value=MAX_COMPARISONS_PER_QUESTION, required=False
    )
    tier = forms.ChoiceField(choices=Tier.choices, initial=Tier.GOLD)
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=DEFAULT_PAIRWISE_SEED)

    def __init__(self, *args, project, runs, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].choices = runs
        self.fields["gold_version"].offer(project)

    def clean(self):
        data = super().clean()
        if data.get("design") == PairwiseDesign.BALANCED and not data.get(
            "comparisons_per_question"
        ):
            self.add_error(
                "comparisons_per_question", "A balanced design needs a number per question."
            )
        if "runs" in data and len(data["runs"]) < 2:
            self.add_error("runs", "Choose two or more runs.")
        return data


class JudgmentForm(forms.Form):
    choice = forms.ChoiceField(choices=CHOICE_OPTIONS, widget=forms.RadioSelect)
    strength = forms.ChoiceField(choices=STRENGTH_OPTIONS, required=False)
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def clean(self):
        data = super().clean()
        # A strength key pressed before a tie or "both unacceptable" was chosen means nothing:
        # the strength goes only with a preference for one side.
        if data.get("choice") in ("tie", "both_unacceptable"):
            data["strength"] = ""
        return data

    def service_kwargs(self) -> dict:
        return dict(self.cleaned_data)


class CalibrationForm(forms.Form):
    item = forms.CharField(max_length=32)
    choice = forms.ChoiceField(choices=CHOICE_OPTIONS, widget=forms.RadioSelect)
