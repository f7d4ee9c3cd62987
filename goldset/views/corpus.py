from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from goldset.exceptions import ImportRejected
from goldset.forms.corpus import CorpusImportForm
from goldset.selectors import corpus as selectors
from goldset.services.corpus import import_corpus
from workbench.roles import ALL_ROLES, Role, role_required

PAGE_SIZE = 25


@role_required(*ALL_ROLES)
def document_list(request):
    domain, query = request.GET.get("domain", ""), request.GET.get("q", "").strip()
    page = Paginator(selectors.list_documents(domain=domain, query=query), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "domains": selectors.list_domains(), "domain": domain, "q": query}
    return render(request, "corpus/document_list.html", context)


@role_required(*ALL_ROLES)
def document_detail(request, document_id):
    document = selectors.get_document(document_id=document_id)
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
    context = {"blk": block, "versions": versions, "diff": diff}
    return render(request, "corpus/block_detail.html", context)


@role_required(Role.ADMIN)
def corpus_import(request):
    form = CorpusImportForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        domain = form.cleaned_data["domain"]
        try:
            summary = import_corpus(
                text=form.cleaned_data["file"],
                actor=request.user,
                source_name=request.FILES["file"].name,
                default_domain=domain.slug if domain else None,
            )
        except ImportRejected as exc:
            errors = exc.errors
        else:
            counts = summary.as_dict()
            messages.success(
                request,
                "Imported {format}: {documents_created} new documents, {blocks_created} new blocks, "
                "{versions_created} new versions ({superseding_versions} superseding), "
                "{versions_unchanged} unchanged.".format(**counts),
            )
            return redirect("corpus:import")
    return render(request, "corpus/import.html", {"form": form, "errors": errors})


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
