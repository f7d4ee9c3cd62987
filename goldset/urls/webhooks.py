from django.urls import path

from goldset.views import webhooks

app_name = "webhooks"

urlpatterns = [
    path("", webhooks.endpoint_list, name="endpoints"),
    path("<int:pk>/", webhooks.endpoint_detail, name="endpoint"),
    path("<int:pk>/enabled/", webhooks.endpoint_enabled, name="enabled"),
    path("<int:pk>/test/", webhooks.endpoint_test, name="test"),
    path("deliveries/<int:pk>/redeliver/", webhooks.redeliver, name="redeliver"),
]
