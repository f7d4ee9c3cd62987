from django import forms
from django.http import Http404

from goldset.models import (
    CalibrationStatus,
    Domain,
    PcsCalibration,
    Source,
    Tier,
    WorkingSlice,
)
from goldset.models.version_tags import NOTE_MAX, TAG_NAME_MAX
from goldset.rules.measures import BadMeasures, check_measures
from goldset.selectors.version_tags import version_choices
from goldset.services.freeze import FreezeFilters
from goldset.services.version_tags import resolve_version

MAX_RUN_BYTES = 200 * 1024 * 1024


class FreezeForm(forms.Form):
    """The freeze filters; the domains and working slices offered are the project's."""

    domain = forms.ModelChoiceField(
        queryset=Domain.objects.none(), to_field_name="slug", required=False
    )
    tier = forms.ChoiceField(choices=[("", "All tiers"), *Tier.choices], required=False)
    source = forms.ChoiceField(choices=[("", "All sources"), *Source.choices], required=False)
    public_only = forms.BooleanField(
        required=False,
        label="Public slice",
        help_text="Leave out every customer-permissioned triple.",
    )
    working_slice = forms.ModelChoiceField(
        queryset=WorkingSlice.objects.none(),
        to_field_name="quarter",
        required=False,
        help_text="Only the triples of this quarter's working slice.",
    )
    include_superseded = forms.BooleanField(
        required=False,
        label="Include superseded pins",
        help_text="Also freeze gold triples pinned to a block version that is no longer the "
        "block's current version (the preview lists them; they are left out otherwise).",
    )
    note = forms.CharField(max_length=300, required=False)

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["domain"].queryset = Domain.objects.filter(project=project).order_by("slug")
        self.fields["working_slice"].queryset = WorkingSlice.objects.filter(
            project=project
        ).order_by("-quarter")

    def filters(self):
        data = self.cleaned_data
        return FreezeFilters(
            domain=data["domain"].slug if data["domain"] else "",
            tier=data["tier"],
            source=data["source"],
            public_only=data["public_only"],
            working_slice=data["working_slice"].quarter if data["working_slice"] else "",
            include_superseded=data["include_superseded"],
        )


class VersionChoiceField(forms.ChoiceField):
    """A gold version of the project, offered by tag (``ci → v7``) and by number; what is
    posted (a tag, ``7``, ``v7`` or ``latest``) is read by
    ``goldset.services.version_tags.resolve_version``, so the cleaned value is the version the
    tag names at that moment. Every form that names a version uses it (scoring, tags, release
    reports, pairwise tasks). An optional field offers ``empty_label`` first (cleaned: None)."""

    def __init__(self, *args, empty_label: str | None = None, **kwargs):
        self.project = None
        self.empty_label = empty_label
        super().__init__(*args, **kwargs)

    def offer(self, project) -> None:
        """Offer ``project``'s versions and tags (read when the field is rendered)."""
        self.project = project
        empty = [("", self.empty_label)] if self.empty_label is not None else []

        def choices():
            versions, tags = version_choices(project=project)
            numbers = [(str(n), _version_choice(n, rows, note)) for n, rows, note in versions]
            by_tag = [(name, f"{name} → v{number}") for name, number in tags]
            # the newest version stays the first choice (the default), as before tags
            return (
                [*empty, ("Versions", numbers), ("Tags", by_tag)] if by_tag else [*empty, *numbers]
            )

        self.choices = choices

    def valid_value(self, value) -> bool:
        return True  # any reference; to_python resolves it (or says it names nothing)

    def to_python(self, value):
        text = super().to_python(value)
        if text in self.empty_values:
            return None
        try:
            return resolve_version(project=self.project, ref=text)
        except Http404 as exc:
            raise forms.ValidationError(str(exc), code="invalid_choice") from None

    def validate(self, value):
        if value is None and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")


def _version_choice(number: int, row_count: int, note: str) -> str:
    return f"v{number} · {row_count} triples" + (f" · {note[:40]}" if note else "")


class RunUploadForm(forms.Form):
    """A run to score: the versions and calibrations offered are the project's only."""

    version = VersionChoiceField(
        help_text="The frozen gold version to score against: a tag (its version now) or a number.",
    )
    name = forms.CharField(max_length=120, help_text="A name for this run, e.g. bm25-baseline.")
    file = forms.FileField(
        help_text="TREC run, JSONL run {query_id, results: [{doc_id, score}]}, "
        "or a RAG answer log (JSONL answer records).",
        allow_empty_file=True,  # refused by the upload service: 422 with the file's name
    )
    k = forms.IntegerField(min_value=1, max_value=1000, initial=10, label="Cut-off k")
    calibration = forms.ModelChoiceField(
        queryset=PcsCalibration.objects.none(),
        required=False,
        empty_label="PROBE defaults",
        label="PCS calibration",
        help_text="Answer logs only: score PCS with a fitted calibration instead of the defaults.",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].offer(project)
        self.fields["calibration"].queryset = PcsCalibration.objects.filter(
            project=project, status=CalibrationStatus.SUCCEEDED
        )

    metrics = forms.CharField(
        max_length=1000,
        required=False,
        label="Measures",
        help_text="Comma-separated, e.g. map,rprec,bpref,ndcg@20,precision@5,rbp(0.9) "
        "(name@k with a cut-off, the bare name over the whole ranking; trec_eval names work "
        "too). Empty: recall, precision, hit, MRR and nDCG at k, and MRR.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_RUN_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_RUN_BYTES // 2**20} MiB.")
        return upload

    def clean(self):
        data = super().clean()
        if data.get("metrics") and data.get("k"):
            try:
                data["metrics"] = check_measures(data["metrics"], k=data["k"])
            except BadMeasures as exc:
                self.add_error("metrics", str(exc))
        return data


class TagForm(forms.Form):
    """Create a tag or move it to a version (admins): the name, the version (a number, a tag
    or latest) and why."""

    name = forms.CharField(
        max_length=TAG_NAME_MAX,
        help_text="lowercase letters, digits, '-', '.' and '_', e.g. release-2026q4 or ci",
    )
    version = VersionChoiceField()
    note = forms.CharField(max_length=NOTE_MAX, required=False, help_text="Why (kept in history).")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].offer(project)


class TagDeleteForm(forms.Form):
    note = forms.CharField(max_length=NOTE_MAX, required=False)
