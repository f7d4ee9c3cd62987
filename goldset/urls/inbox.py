from django.urls import path

from goldset.views import inbox

app_name = "inbox"

urlpatterns = [
    path("", inbox.notifications, name="notifications"),
    path("badge/", inbox.badge, name="badge"),
    path("<int:pk>/open/", inbox.open_notification, name="open"),
    path("<int:pk>/read/", inbox.mark_read, name="mark_read"),
    path("read-all/", inbox.mark_all_read, name="mark_all_read"),
    path("settings/", inbox.notification_settings, name="settings"),
    path("retakes/", inbox.retakes, name="retakes"),
    path("retakes/<int:pk>/", inbox.decide_retake, name="retake_decide"),
    path("calibration/<slug:domain>/retake/", inbox.request_retake, name="retake_request"),
]
