"""Forms of the inbox pages: notification settings and calibration retakes. They parse input;
the rules live in the services."""

from django import forms

from goldset.services.calibration import RETAKE_MESSAGE_MAX

DECISIONS = [("grant", "Grant the retake"), ("decline", "Decline")]


class NotificationSettingsForm(forms.Form):
    email = forms.BooleanField(
        required=False,
        label="Also send me each notification by e-mail",
    )


class RetakeRequestForm(forms.Form):
    message = forms.CharField(
        required=False,
        max_length=RETAKE_MESSAGE_MAX,
        label="Message to the leads (optional)",
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class RetakeDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=DECISIONS, widget=forms.RadioSelect)
    reason = forms.CharField(
        max_length=2000,
        label="Reason (the annotator reads it)",
        widget=forms.Textarea(attrs={"rows": 2}),
    )
