from django.urls import path

from goldset.views import corpus

app_name = "corpus"

urlpatterns = [
    path("", corpus.document_list, name="documents"),
    path("import/", corpus.corpus_import, name="import"),
    path("search/", corpus.search, name="search"),
    path("documents/<path:document_id>/", corpus.document_detail, name="document"),
    path("blocks/<path:block_id>/", corpus.block_detail, name="block"),
]
