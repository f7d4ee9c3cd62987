from django import forms

from goldset.models import WebhookEvent
from workbench.forms import FormTokenForm


class WebhookEndpointForm(forms.Form):
    """An endpoint's URL, events, description and enabled flag. Whether the URL may receive
    webhooks (its addresses) is the service's check, reported on the ``url`` field."""

    url = forms.URLField(
        max_length=2000,
        assume_scheme="https",
        label="URL",
        help_text="Where events are posted (https:// recommended).",
    )
    events = forms.MultipleChoiceField(
        choices=WebhookEvent.choices, widget=forms.CheckboxSelectMultiple, label="Events"
    )
    description = forms.CharField(max_length=200, required=False)
    enabled = forms.BooleanField(required=False, initial=True)

    @classmethod
    def for_endpoint(cls, endpoint, *, data=None):
        initial = {
            "url": endpoint.url,
            "events": endpoint.events,
            "description": endpoint.description,
            "enabled": endpoint.enabled,
        }
        return cls(data=data, initial=initial)


class NewWebhookEndpointForm(FormTokenForm, WebhookEndpointForm):
    """Registering an endpoint: a double-submitted form registers it once."""
