from django.core.paginator import Paginator
from django.shortcuts import render

from goldset.forms.corpus import CorpusImportForm
from goldset.models import ImportKind
from goldset.selectors import corpus as selectors
from goldset.selectors.curation import newest_versions
from goldset.views.imports import submit_upload, upload_data, upload_page
from workbench.roles import ALL_ROLES, Role, role_required

PAGE_SIZE = 25


@role_required(*ALL_ROLES)
def document_list(request):
    domain, query = request.GET.get("domain", ""), request.GET.get("q", "").strip()
    page = selectors.documents_page(
        domain=domain, query=query, cursor=request.GET.get("after"), size=PAGE_SIZE
    )
    context = {
        "page": page,
        "domains": selectors.list_domains(project=request.project),
        "domain": domain,
        "q": query,
    }
    return render(request, "corpus/document_list.html", context)


@role_required(*ALL_ROLES)
def search(request):
    """Full-text search of block text: ranked, highlighted, paginated (``q``)."""
    query = request.GET.get("q", "").strip()[:200]
    page = Paginator(selectors.search_blocks(query=query), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    hits = selectors.search_hits(page.object_list, query=query)
    return render(request, "corpus/search.html", {"q": query, "page": page, "hits": hits})


@role_required(*ALL_ROLES)
def document_detail(request, document_id):
    document = selectors.get_document(project=request.project, document_id=document_id)
    page = Paginator(selectors.list_blocks_of(document=document), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    latest = selectors.latest_versions_for(page.object_list)
    rows = [(block, latest.get(block.pk)) for block in page.object_list]
    return render(
        request, "corpus/document_detail.html", {"document": document, "page": page, "rows": rows}
    )


@role_required(*ALL_ROLES)
def block_detail(request, block_id):
    block = selectors.get_block(block_id=block_id)
    versions = list(block.versions.all())
    by_number = {v.version: v for v in versions}
    diff = None
    if len(versions) > 1:
        old = by_number.get(_int(request.GET.get("a")), versions[-2])
        new = by_number.get(_int(request.GET.get("b")), versions[-1])
        diff = selectors.diff_versions(old, new)
    newest = newest_versions([block.pk]).get(block.pk)
    context = {"blk": block, "versions": versions, "diff": diff, "newest": newest}
    return render(request, "corpus/block_detail.html", context)


@role_required(Role.ADMIN)
def corpus_import(request):
    form = CorpusImportForm(*upload_data(request))
    if request.method == "POST" and form.is_valid():
        domain = form.cleaned_data["domain"]
        return submit_upload(
            request,
            kind=ImportKind.CORPUS,
            options={"domain": domain.slug if domain else None},
            template="corpus/import.html",
            context={"form": form},
        )
    return upload_page(request, "corpus/import.html", {"form": form, "errors": []})


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
