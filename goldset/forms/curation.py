import re
from decimal import Decimal

from django import forms

from goldset.models import (
    BlockVersion,
    Customer,
    Difficulty,
    DisagreementCategory,
    Domain,
    EntailmentDirection,
    Flag,
    Source,
    TaskType,
    Verdict,
)

REF = re.compile(r"^\s*(?P<block>[^@\s]+)\s*(?:@|\s+v)\s*(?P<version>\d+)\s*$")


class BlockVersionRefField(forms.CharField):
    """A pinned block version written as ``block_id@version`` (e.g. ``blk-sec-arch-01@2``),
    looked up in the form's project only (:class:`ProjectForm` sets ``project``): a block of
    another project is "not in the corpus", as any object of a project one is not in."""

    project = None

    def __init__(self, **kwargs):
        kwargs.setdefault("label", "Expected block version")
        kwargs.setdefault("help_text", "block_id@version — search the corpus and press “Use”.")
        kwargs.setdefault("widget", forms.TextInput(attrs={"class": "block-ref"}))
        super().__init__(max_length=220, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, BlockVersion):
            return f"{value.block.block_id}@{value.version}"
        return value

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        match = REF.match(value)
        if not match:
            raise forms.ValidationError(
                f"Write the block version as block_id@version, e.g. blk-sec-arch-01@2 (got {value!r})."
            )
        version = (
            BlockVersion.objects.select_related("block__document__domain")
            .filter(
                block__project=self.project,
                block__block_id=match["block"],
                version=int(match["version"]),
            )
            .first()
        )
        if version is None:
            raise forms.ValidationError(
                f"There is no version {match['version']} of block {match['block']!r} in the corpus."
            )
        return version


def superseded_reason_field(help_text: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Reason for pinning a superseded version",
        help_text=help_text,
    )


SUPERSEDED_HELP = (
    "Only when the block version is not the block's current version: say why the older text "
    "is the right source. It is recorded and shown to reviewers, leads and at freeze."
)


class ProjectForm(forms.Form):
    """A form whose block versions, domains and customers are those of ``project``."""

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        for form_field in self.fields.values():
            if isinstance(form_field, BlockVersionRefField):
                form_field.project = project
        if "domain" in self.fields:
            self.fields["domain"].queryset = Domain.objects.filter(project=project).order_by("slug")


class RevisionForm(ProjectForm):
    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000)
    block_version = BlockVersionRefField()
    expected_answer = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000)
    superseded_reason = superseded_reason_field(SUPERSEDED_HELP)


class TripleForm(RevisionForm):
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.none(),
        to_field_name="slug",
        required=False,
        empty_label="the block's document domain",
    )
    task_type = forms.ChoiceField(choices=TaskType.choices)
    difficulty = forms.ChoiceField(choices=Difficulty.choices, initial=Difficulty.STANDARD)
    source = forms.ChoiceField(choices=Source.choices)
    customer = forms.ModelChoiceField(
        queryset=Customer.objects.none(),
        to_field_name="slug",
        required=False,
        help_text="Only for customer-permissioned triples; customers with an active grant.",
    )
    adversarial = forms.BooleanField(required=False)
    model_uncertainty = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_value=Decimal(1),
        max_digits=4,
        decimal_places=3,
        help_text="If known (0–1); ≥ 0.65 routes to GOLD under the default rules.",
    )
    llm_verified = forms.BooleanField(
        required=False,
        label="I verified this LLM-generated triple against the block",
        help_text="Without a human verification an LLM-generated triple cannot become gold.",
    )

    def __init__(self, *args, customers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["customer"].queryset = (
            customers
            if customers is not None
            else Customer.objects.filter(project=self.project).order_by("name")
        )


class SplitForm(forms.Form):
    """N atomic triples, each with its own block version (of ``project``); blank rows are
    ignored."""

    ROWS = 4

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        for i in range(1, self.ROWS + 1):
            self.fields[f"question_{i}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2}), label=f"Question {i}"
            )
            self.fields[f"block_version_{i}"] = BlockVersionRefField(
                required=False, label=f"Block version {i}", help_text=""
            )
            self.fields[f"block_version_{i}"].project = project
            self.fields[f"expected_answer_{i}"] = forms.CharField(
                required=False, widget=forms.Textarea(attrs={"rows": 2}), label=f"Answer {i}"
            )
        self.fields["superseded_reason"] = superseded_reason_field(
            "Only when a part pins a version that is not its block's current version: why the "
            "older text is the right source (recorded on every such part)."
        )

    def rows(self):
        return [
            (self[f"question_{i}"], self[f"block_version_{i}"], self[f"expected_answer_{i}"])
            for i in range(1, self.ROWS + 1)
        ]

    def clean(self):
        data = super().clean()
        parts = []
        for i in range(1, self.ROWS + 1):
            values = [
                data.get(f"{k}_{i}") for k in ("question", "block_version", "expected_answer")
            ]
            if not any(values):
                continue
            if not all(values):
                raise forms.ValidationError(
                    f"Part {i} needs a question, a block version and an answer."
                )
            parts.append(values)
        if len(parts) < 2:
            raise forms.ValidationError("A split needs at least two complete parts.")
        data["parts"] = parts
        return data


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(choices=Verdict.choices, widget=forms.RadioSelect)
    flags = forms.MultipleChoiceField(
        choices=Flag.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    entailment_direction = forms.ChoiceField(
        choices=[("", "—"), *EntailmentDirection.choices], required=False
    )
    disagreement_category = forms.ChoiceField(
        choices=[("", "—"), *DisagreementCategory.choices], required=False
    )
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class MessageForm(forms.Form):
    body = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=4000, label="Message"
    )


class NoteForm(forms.Form):
    note = forms.CharField(max_length=500, required=False, label="Note (recorded)")


class ConfirmReasonForm(forms.Form):
    """An irreversible action (drop, retire): a reason, then an explicit confirmation."""

    note = forms.CharField(
        max_length=500,
        label="Reason (required, recorded)",
        error_messages={"required": "Say why: a reason is required."},
    )
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)


class CustomerForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=64, required=False, help_text="Defaults to the name.")


class TripleImportForm(forms.Form):
    file = forms.FileField(
        help_text="Gold JSONL: one triple per line, as exported.",
        allow_empty_file=True,  # refused by the upload service: 422 with the file's name
    )
    on_behalf = forms.BooleanField(
        required=False,
        label="Import on behalf of the authors named in the file (admins only)",
        help_text="Without it, every triple is authored by you and added_by must be you.",
    )


class SliceDrawForm(forms.Form):
    quarter = forms.RegexField(regex=r"^\d{4}Q[1-4]$", max_length=7, help_text="e.g. 2026Q1")
    seed = forms.IntegerField(
        required=False, min_value=0, help_text="Leave empty for a random seed (recorded)."
    )


class SpotCheckDrawForm(forms.Form):
    week = forms.RegexField(
        regex=r"^\d{4}-W\d{2}$", max_length=8, help_text="ISO week, e.g. 2026-W14"
    )
    seed = forms.IntegerField(
        required=False, min_value=0, help_text="Leave empty for a random seed (recorded)."
    )

    def clean_week(self):
        year, week = self.cleaned_data["week"].split("-W")
        if not 1 <= int(week) <= 53:
            raise forms.ValidationError("ISO weeks run from 01 to 53.")
        return int(year), int(week)
