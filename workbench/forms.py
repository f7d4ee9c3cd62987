import secrets

from django import forms

INVALID_LOGIN = (
    "Please enter a correct username and password. Note that both fields may be case-sensitive."
)

PASSWORDS_OFF = "Password sign-in is switched off here: sign in with your identity provider."


class LoginForm(forms.Form):
    """Only the fields: authentication happens once, in ``log_in``, never in ``clean()`` (a second
    ``authenticate()`` would count a failure twice)."""

    username = forms.CharField(max_length=150)
    password = forms.CharField(strip=False, widget=forms.PasswordInput)


def new_form_token() -> str:
    return secrets.token_urlsafe(18)


class FormTokenForm(forms.Form):
    """A create form with a hidden token, new at every render: submitting the same rendered form
    twice (a double-click) creates once (workbench.services.idempotency.claim_form_token)."""

    form_token = forms.CharField(
        widget=forms.HiddenInput, required=False, max_length=64, initial=new_form_token
    )


class ApiTokenForm(FormTokenForm):
    name = forms.CharField(max_length=80)
    scope = forms.ChoiceField(choices=[("read", "Read (GET only)"), ("write", "Read and write")])
    expires_in_days = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        required=False,
        choices=[(30, "30 days"), (90, "90 days"), (365, "1 year"), ("", "Never")],
        initial=90,
    )

    project = forms.ChoiceField(
        required=False,
        label="Projects",
        help_text="One project, or every project you belong to (now and later).",
    )

    field_order = ["name", "project", "scope", "expires_in_days"]

    def __init__(self, *args, max_days: int = 0, projects=(), **kwargs):
        """``max_days`` (API_TOKEN_MAX_LIFETIME_DAYS; 0: none) removes the longer choices and
        "Never", offering the maximum itself instead. ``projects``: the projects the person
        belongs to, one of which the token may be limited to (``cleaned_data["project"]`` is
        that Project, or None for all of them)."""
        super().__init__(*args, **kwargs)
        self._projects = {p.slug: p for p in projects}
        self.fields["project"].choices = [("", "All my projects")] + [
            (p.slug, p.name) for p in projects
        ]
        if max_days:
            field = self.fields["expires_in_days"]
            kept = [(v, label) for v, label in field.choices if v != "" and int(v) <= max_days]
            if not any(int(v) == max_days for v, _ in kept):
                kept.append((max_days, f"{max_days} days (the longest allowed)"))
            field.choices = kept
            field.required = True
            field.initial = min(90, max_days) if any(int(v) == 90 for v, _ in kept) else max_days

    def clean_project(self):
        slug = self.cleaned_data.get("project") or ""
        return self._projects.get(slug) if slug else None
