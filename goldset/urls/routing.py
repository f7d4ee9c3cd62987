from django.urls import path

from goldset.views import promotion, routing

app_name = "routing"

urlpatterns = [
    path("", routing.routing_rules, name="rules"),
    path("reroute/", promotion.reroute, name="reroute"),
]
