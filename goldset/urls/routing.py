from django.urls import path

from goldset.views import routing

app_name = "routing"

urlpatterns = [
    path("", routing.routing_rules, name="rules"),
]
