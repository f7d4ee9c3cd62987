from django import forms
from django.contrib.auth import get_user_model

from goldset.models import Project
from workbench.roles import Role


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=64, help_text="In every URL of the project: /p/<slug>/. Cannot change later."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    copy_from = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        required=False,
        empty_label="— start from the installation defaults —",
        help_text="Start from that project's settings, guidelines and routing rules.",
    )

    def __init__(self, *args, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["copy_from"].queryset = Project.objects.filter(pk__in=[p.pk for p in projects])


class ProjectDetailsForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise forms.ValidationError("No active user has this username.")
        self.cleaned_data["user"] = user
        return username


class ProjectSettingsForm(forms.Form):
    """One text field per per-project tunable (``names``): the project's value as the
    environment's text, empty for the installation default. Parsing and the rules are the
    service's (goldset.services.project_settings), which names the setting it refuses."""

    def __init__(self, *args, names=(), **kwargs):
        super().__init__(*args, **kwargs)
        for name in names:
            self.fields[name] = forms.CharField(required=False, strip=True, label=name)
