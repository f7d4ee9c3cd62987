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
