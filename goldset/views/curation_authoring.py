"""Author pages: write a triple, my triples, a triple with its revisions and discussion, and the
discussion outcomes (revise, split, drop) plus LLM verification."""

import re

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.forms.curation import (
    ConfirmReasonForm,
    MessageForm,
    RevisionForm,
    SplitForm,
    TripleForm,
)
from goldset.models import TripleState
from goldset.selectors import curation as selectors
from goldset.services import resolution
from goldset.services.notifications import mark_discussion_read
from goldset.services.triples import SupersededPin, create_triple
from goldset.views.htmx import wants_fragment
from goldset.views.status import form_status
from workbench.roles import ALL_ROLES, Role, role_required
from workbench.services.audit import record_event

PAGE_SIZE = 25
TARGET_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@role_required(Role.ANNOTATOR)
def my_triples(request):
    state = request.GET.get("state", "")
    triples = selectors.list_triples_by(project=request.project, author=request.user, state=state)
    page = Paginator(triples, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "state": state, "states": TripleState.choices}
    return render(request, "curation/my_triples.html", context)


@role_required(*ALL_ROLES)
@vary_on_headers("HX-Request")
def block_search(request):
    query = request.GET.get("q", "").strip()
    target = request.GET.get("target", "")
    context = {
        "q": query,
        "target": target if TARGET_ID.match(target) else "id_block_version",
        "results": list(selectors.search_block_versions(project=request.project, query=query)),
    }
    partial = "#block-results" if wants_fragment(request, "block-results") else ""
    return render(request, f"curation/blocks.html{partial}", context)


@role_required(Role.ANNOTATOR)
def write_triple(request):
    customers = selectors.list_active_customers(project=request.project)
    form = TripleForm(
        request.POST or None,
        initial=request.GET.dict(),
        customers=customers,
        project=request.project,
    )
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        try:
            triple = create_triple(
                project=request.project,
                author=request.user,
                block_version=data.pop("block_version"),
                **data,
            )
        except SupersededPin as exc:
            form.add_error("superseded_reason", str(exc))
        except GoldsetError as exc:  # a CrossProjectReference too: the message says which
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"{triple.external_id} is routed to {triple.get_tier_display()} "
                f"(rule: {triple.routing_rule}) and waits for review.",
            )
            return redirect("curation:triple", pk=triple.pk)
    return render(request, "curation/write.html", {"form": form}, status=form_status(request))


def detail_context(request, triple, *, message_form=None) -> dict:
    return {
        "triple": triple,
        "history": selectors.revision_history(triple=triple),
        "thread": list(selectors.list_messages(triple=triple)),
        "message_form": message_form or MessageForm(),
        **selectors.triple_actions_for(user=request.user, triple=triple),
        "children": list(triple.children.order_by("pk")),
    }


@role_required(*ALL_ROLES)
def triple_detail(request, pk):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    record_event(actor=request.user, verb="triple_viewed", obj=triple)
    mark_discussion_read(user=request.user, triple=triple)
    return render(request, "curation/triple_detail.html", detail_context(request, triple))


@require_POST
@role_required(*ALL_ROLES)
@vary_on_headers("HX-Request")
def post_message(request, pk):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    form = MessageForm(request.POST)
    if form.is_valid():
        try:
            resolution.post_message(
                triple=triple, author=request.user, body=form.cleaned_data["body"]
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            form = None
    if wants_fragment(request, "discussion"):
        context = detail_context(request, triple, message_form=form)
        return render(request, "curation/triple_detail.html#discussion", context)
    if form is not None:
        messages.error(request, " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("curation:triple", pk=triple.pk)


@role_required(*ALL_ROLES)
def revise(request, pk):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    current = triple.current_revision
    initial = {
        "question": current.question,
        "block_version": current.expected_block_version,
        "expected_answer": current.expected_answer,
    }
    form = RevisionForm(request.POST or None, initial=initial, project=request.project)
    if request.method == "POST" and form.is_valid():
        try:
            revision = resolution.revise_triple(
                triple=triple, actor=request.user, **form.cleaned_data
            )
        except SupersededPin as exc:
            form.add_error("superseded_reason", str(exc))
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"Revision {revision.number} re-enters review with fresh reviewers."
            )
            return redirect("curation:triple", pk=triple.pk)
    context = {
        "triple": triple,
        "form": form,
        "reviews": selectors.reviews_to_answer(triple=triple),
    }
    return render(request, "curation/revise.html", context, status=form_status(request))


@role_required(*ALL_ROLES)
def split(request, pk):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    form = SplitForm(request.POST or None, project=request.project)
    if request.method == "POST" and form.is_valid():
        reason = form.cleaned_data["superseded_reason"]
        parts = [resolution.SplitPart(q, bv, a, reason) for q, bv, a in form.cleaned_data["parts"]]
        try:
            children = resolution.split_triple(triple=triple, actor=request.user, parts=parts)
        except SupersededPin as exc:
            form.add_error("superseded_reason", str(exc))
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            ids = ", ".join(c.external_id for c in children)
            messages.success(request, f"Split into {len(children)} atomic triples: {ids}.")
            return redirect("curation:triple", pk=triple.pk)
    context = {
        "triple": triple,
        "form": form,
        "reviews": selectors.reviews_to_answer(triple=triple),
    }
    return render(request, "curation/split.html", context, status=form_status(request))


@require_POST
@role_required(*ALL_ROLES)
def drop(request, pk):
    """Drop asks first: the POST from the triple page shows a confirmation with the reason; the
    confirmed POST (``confirm``) drops. An empty reason is a form error, never a drop."""
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    form = ConfirmReasonForm(request.POST)
    if form.is_valid() and form.cleaned_data["confirm"]:
        try:
            resolution.drop_triple(
                triple=triple, actor=request.user, reason=form.cleaned_data["note"]
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{triple.external_id} is dropped.")
            return redirect("curation:triple", pk=triple.pk)
    return confirm_page(
        request,
        form,
        triple=triple,
        action=reverse("curation:drop", args=[triple.pk]),
        verb="Drop",
        explain="A dropped triple leaves review for good; it cannot be reopened.",
        back=reverse("curation:triple", args=[triple.pk]),
    )


def confirm_page(request, form, *, triple, action, verb, explain, back, extra=None):
    """The confirmation step of an irreversible action (status 200 with field errors)."""
    context = {
        "form": form,
        "triple": triple,
        "action": action,
        "verb": verb,
        "explain": explain,
        "back": back,
        "extra": extra or {},
    }
    return render(request, "curation/confirm.html", context)


@require_POST
@role_required(*ALL_ROLES)
def verify(request, pk):
    triple = selectors.get_triple_for(project=request.project, user=request.user, pk=pk)
    try:
        triple = resolution.verify_llm_triple(triple=triple, verifier=request.user)
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Verified by {request.user.username}; state: {triple.get_state_display()}."
        )
    return redirect("curation:triple", pk=triple.pk)
