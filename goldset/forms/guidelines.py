from django import forms


class GuidelineForm(forms.Form):
    body = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 16}),
        label="Guideline (Markdown)",
        help_text="Markdown; raw HTML is shown as text. Saving creates a new version.",
    )
    note = forms.CharField(max_length=200, required=False, label="What changed (optional)")
