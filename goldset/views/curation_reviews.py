"""Reviewer pages: the queue, "next item", and the blind, keyboard-first review page."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, push_url

from goldset.exceptions import GoldsetError
from goldset.forms.curation import ReviewForm
from goldset.forms.time_on_item import timing_from
from goldset.models import DecisionKind
from goldset.selectors import curation as selectors
from goldset.selectors.guidelines import TRIPLE_REVIEW
from goldset.selectors.positions import get_review_position
from goldset.services.locking import SubmitBusy
from goldset.services.reviews import (
    ReviewSkipRefused,
    ReviewUndoRefused,
    claim_next_assignment,
    skip_review,
    submit_review,
    undo_last_review,
)
from goldset.views.busy import as_busy
from goldset.views.guidelines import task_panel
from goldset.views.htmx import wants_fragment
from workbench.roles import Role, role_required
from workbench.services.audit import record_event


@role_required(Role.ANNOTATOR)
def queue(request):
    project, reviewer = request.project, request.user
    available, at_least = selectors.count_claimable_revisions(project=project, reviewer=reviewer)
    context = {
        "open": list(selectors.open_assignments(project=project, reviewer=reviewer)),
        "available": available,
        "at_least": at_least,
        "recent": list(selectors.list_recent_reviews(project=project, reviewer=reviewer)),
    }
    return render(request, "curation/queue.html", context)


@require_POST
@role_required(Role.ANNOTATOR)
def next_item(request):
    assignment = claim_next_assignment(project=request.project, reviewer=request.user)
    if assignment is None:
        messages.info(request, "Nothing is waiting for your review right now.")
        return redirect("curation:queue")
    return redirect("curation:review", pk=assignment.pk)


def _review_context(request, assignment, *, own=None, form=None) -> dict:
    return {
        "undoable": selectors.get_undoable_review(
            project=request.project, reviewer=assignment.reviewer
        ),
        "assignment": assignment,
        "revision": assignment.revision,
        "version": assignment.revision.expected_block_version,
        "review": own,
        "form": form or ReviewForm(),
        "takes_reviews": own is None and selectors.takes_reviews(assignment=assignment),
        "position": None if own else get_review_position(assignment=assignment),
        **task_panel(
            request,
            kind=DecisionKind.REVIEW,
            object_id=assignment.pk,
            task=TRIPLE_REVIEW,
            domain_id=assignment.revision.triple.domain_id,
        ),
    }


@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def review(request, pk):
    assignment = selectors.get_assignment_for(project=request.project, user=request.user, pk=pk)
    own = selectors.get_own_review(assignment=assignment)
    form = ReviewForm(request.POST or None)
    busy = None
    if request.method == "POST" and own is None and form.is_valid():
        try:
            own = submit_review(
                reviewer=request.user,
                revision=assignment.revision,
                **form.cleaned_data,
                timing=timing_from(
                    request.POST,
                    kind=DecisionKind.REVIEW,
                    object_id=assignment.pk,
                    user_id=request.user.pk,
                ),
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        except SubmitBusy as exc:
            form.add_error(None, str(exc))
            busy = exc
        else:
            if wants_fragment(request, "review-item"):
                return _next_review(request, done=assignment, own=own)
    elif request.method == "GET":
        record_event(actor=request.user, verb="revision_viewed", obj=assignment.revision)
    context = _review_context(request, assignment, own=own, form=form)
    partial = next(
        (f"#{name}" for name in ("review-card", "review-item") if wants_fragment(request, name)), ""
    )
    response = render(request, f"curation/review.html{partial}", context)
    return as_busy(response, busy) if busy else response


def _as_on_its_page(request, assignment):
    """The assignment as the review page reads it (its revision, pinned text and the block's
    newest version), for cards that htmx brings without a page load: a claim's bare row has no
    ``newest_version``, and the superseded badge would silently go missing."""
    return selectors.get_assignment_for(
        project=request.project, user=request.user, pk=assignment.pk
    )


def _next_review(request, *, done, own):
    """One motion per item: a submitted review answers with the next revision to review (its
    URL pushed), or with the recorded review when nothing else is waiting."""
    following = claim_next_assignment(project=request.project, reviewer=request.user)
    messages.success(request, "Review saved.")
    if following is None:
        messages.info(request, "Nothing else is waiting for your review right now.")
        return render(
            request, "curation/review.html#review-item", _review_context(request, done, own=own)
        )
    context = _review_context(request, _as_on_its_page(request, following))
    response = render(request, "curation/review.html#review-item", context)
    return push_url(response, redirect("curation:review", pk=following.pk).url)


def _queue_redirect(request):
    target = redirect("curation:queue")
    return HttpResponseClientRedirect(target.url) if request.htmx else target


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def skip(request, pk):
    """Skip with a reason: the slot goes back to the pool, and the next revision follows."""
    assignment = selectors.get_assignment_for(project=request.project, user=request.user, pk=pk)
    try:
        skip_review(assignment=assignment, reason=request.POST.get("reason", ""))
    except ReviewSkipRefused as exc:
        messages.error(request, str(exc))
        own = selectors.get_own_review(assignment=assignment)
        partial = "#review-item" if wants_fragment(request, "review-item") else ""
        context = _review_context(request, assignment, own=own)
        return render(request, f"curation/review.html{partial}", context, status=422)
    messages.info(request, "Review skipped; the revision went back to the pool.")
    following = claim_next_assignment(project=request.project, reviewer=request.user)
    if following is None:
        messages.info(request, "Nothing else is waiting for your review right now.")
        return _queue_redirect(request)
    url = redirect("curation:review", pk=following.pk).url
    if request.htmx:
        context = _review_context(request, _as_on_its_page(request, following))
        return push_url(render(request, "curation/review.html#review-item", context), url)
    return redirect(url)


@require_POST
@role_required(Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def undo(request):
    """Withdraw the last review while its triple is unresolved; the review form comes back
    filled with the withdrawn values."""
    try:
        assignment = undo_last_review(project=request.project, reviewer=request.user)
    except ReviewUndoRefused as exc:
        messages.error(request, str(exc))
        return _queue_redirect(request)
    messages.info(request, "Your last review was withdrawn; change it and submit again.")
    context = _review_context(
        request, _as_on_its_page(request, assignment), form=ReviewForm(initial=assignment.withdrawn)
    )
    if request.htmx:
        response = render(request, "curation/review.html#review-item", context)
        return push_url(response, redirect("curation:review", pk=assignment.pk).url)
    return render(request, "curation/review.html", context)
