from django.urls import path

from goldset.views import promotion

app_name = "promotion"

urlpatterns = [
    path("", promotion.index, name="index"),
    path("triples/<int:pk>/", promotion.triple, name="triple"),
    path("records/<str:public_id>/", promotion.record, name="record"),
    path("records/<str:public_id>/triple/", promotion.record_triple, name="record_triple"),
]
