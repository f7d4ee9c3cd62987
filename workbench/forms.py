from django import forms

INVALID_LOGIN = (
    "Please enter a correct username and password. Note that both fields may be case-sensitive."
)


class LoginForm(forms.Form):
    """Only the fields: authentication happens once, in ``log_in``, never in ``clean()`` (a second
    ``authenticate()`` would count a failure twice)."""

    username = forms.CharField(max_length=150)
    password = forms.CharField(strip=False, widget=forms.PasswordInput)
