from django.urls import path

from goldset.views import curation_authoring as authoring
from goldset.views import curation_customers as customers
from goldset.views import curation_leads as leads
from goldset.views import curation_reviews as reviews

app_name = "curation"

urlpatterns = [
    path("triples/", authoring.my_triples, name="triples"),
    path("triples/new/", authoring.write_triple, name="write"),
    path("triples/<int:pk>/", authoring.triple_detail, name="triple"),
    path("triples/<int:pk>/messages/", authoring.post_message, name="message"),
    path("triples/<int:pk>/revise/", authoring.revise, name="revise"),
    path("triples/<int:pk>/split/", authoring.split, name="split"),
    path("triples/<int:pk>/drop/", authoring.drop, name="drop"),
    path("triples/<int:pk>/verify/", authoring.verify, name="verify"),
    path("blocks/", authoring.block_search, name="blocks"),
    path("reviews/", reviews.queue, name="queue"),
    path("reviews/next/", reviews.next_item, name="next"),
    path("reviews/<int:pk>/", reviews.review, name="review"),
    path("reviews/<int:pk>/skip/", reviews.skip, name="review_skip"),
    path("reviews/undo/", reviews.undo, name="review_undo"),
    path("leads/", leads.dashboard, name="dashboard"),
    path("leads/rereview/", leads.rereview, name="rereview"),
    path("leads/rereview/<int:pk>/repin/", leads.repin, name="repin"),
    path("leads/rereview/<int:pk>/retire/", leads.retire, name="retire"),
    path("leads/slices/", leads.slices, name="slices"),
    path("leads/slices/<str:quarter>/", leads.slice_detail, name="slice"),
    path("leads/spot-checks/", leads.spot_checks, name="spot_checks"),
    path("leads/quality/", leads.quality, name="quality"),
    path("import/", leads.import_page, name="import"),
    path("customers/", customers.customers, name="customers"),
    path("customers/<slug:slug>/", customers.customer_detail, name="customer"),
    path("customers/<slug:slug>/grant/", customers.grant, name="grant"),
    path("customers/<slug:slug>/revoke/", customers.revoke, name="revoke"),
]
