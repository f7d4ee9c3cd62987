from django import forms

from goldset.models import Domain


class CorpusImportForm(forms.Form):
    file = forms.FileField(
        help_text="A JSONL document manifest or an Unrag dataset JSON v1 file.",
        allow_empty_file=True,  # refused by the upload service: 422 with the file's name
    )
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.none(),
        to_field_name="slug",
        required=False,
        help_text="Unrag files only: the domain of documents whose metadata names none.",
    )

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["domain"].queryset = Domain.objects.filter(project=project).order_by("slug")
