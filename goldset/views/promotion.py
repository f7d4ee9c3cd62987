"""Re-route preview (admin) and promotion TRIAGE → GOLD (lead or admin): thin views over
``goldset.services.promotion`` and ``goldset.selectors.promotion``."""

from django.contrib import messages
from django.shortcuts import redirect, render

from goldset.exceptions import GoldsetError
from goldset.forms.promotion import (
    BatchFilterForm,
    BatchPromoteForm,
    ReasonForm,
    RecordTripleForm,
    RerouteConfirmForm,
)
from goldset.selectors import promotion as selectors
from goldset.services import promotion as services
from goldset.services.gold_promotion import promote_record_to_triple
from workbench.roles import Role, role_required
from workbench.services.audit import record_event

PAGE_SIZE = 50


@role_required(Role.ADMIN)
def reroute(request):
    form = RerouteConfirmForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            applied = services.apply_reroute(
                project=request.project, actor=request.user, token=form.cleaned_data["token"]
            )
        except services.PreviewChanged as exc:
            messages.warning(request, str(exc))
            preview = exc.preview
        else:
            messages.success(request, f"Re-routed {len(applied.changes)} open case(s).")
            return redirect("routing:reroute")
    else:
        preview = services.preview_reroute(project=request.project)
    return render(request, "routing/reroute.html", {"preview": preview})


@role_required(Role.LEAD, Role.ADMIN)
def index(request):
    project = request.project
    filters = BatchFilterForm(request.GET or {"kind": services.TRIPLE}, project=project)
    chosen = filters.filters() if filters.is_valid() else {"kind": services.TRIPLE}
    form = BatchPromoteForm(request.POST or None)
    if request.method == "POST" and filters.is_valid() and form.is_valid():
        try:
            result = services.promote_batch(
                project=project, actor=request.user, **chosen, **form.cleaned_data
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Promoted {len(result.cases)} case(s) to GOLD.")
            return redirect(request.get_full_path())
    context = {
        "filters": filters,
        "form": form,
        "kind": chosen["kind"],
        "page": selectors.list_promotable(
            project=project, **chosen, cursor=request.GET.get("after"), size=PAGE_SIZE
        ),
        "batch": services.preview_batch(project=project, **chosen),
        "recent": selectors.list_recent_promotions(project=project),
    }
    return render(request, "promotion/index.html", context)


@role_required(Role.LEAD, Role.ADMIN)
def triple(request, pk):
    case = selectors.get_triple_for_promotion(project=request.project, pk=pk)
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.promote_triple(actor=request.user, triple=case, **form.cleaned_data)
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"{case.external_id} is GOLD now and needs its second review."
            )
            return redirect("promotion:triple", pk=case.pk)
    record_event(actor=request.user, verb="triple_tier_viewed", obj=case)
    context = {"case": case, "form": form, "history": selectors.tier_history(obj=case)}
    return render(request, "promotion/triple.html", context)


@role_required(Role.LEAD, Role.ADMIN)
def record(request, public_id):
    case = selectors.get_record_for_promotion(project=request.project, public_id=public_id)
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.promote_answer_record(actor=request.user, record=case, **form.cleaned_data)
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{case.public_id} is GOLD now and needs three labels.")
            return redirect("promotion:record", public_id=case.public_id)
    record_event(actor=request.user, verb="answer_record_tier_viewed", obj=case)
    context = {"case": case, "form": form, "history": selectors.tier_history(obj=case)}
    return render(request, "promotion/record.html", context)


@role_required(Role.LEAD, Role.ADMIN)
def record_triple(request, public_id):
    """A labeled production record → a gold triple, in one step (issue 28)."""
    case = selectors.get_record_for_promotion(project=request.project, public_id=public_id)
    candidates = selectors.governing_candidates(case)
    form = RecordTripleForm(request.POST or None, record=case, candidates=candidates)
    if request.method == "POST" and form.is_valid():
        try:
            made = promote_record_to_triple(
                actor=request.user,
                project=request.project,
                record=case,
                block_version_id=form.cleaned_data["block_version"],
                expected_answer=form.cleaned_data["expected_answer"],
                source=form.cleaned_data["source"],
            )
        except GoldsetError as exc:
            form.add_service_error(str(exc))
        else:
            messages.success(request, f"{made.external_id} is written and waits for its reviews.")
            return redirect("curation:triple", pk=made.pk)
    context = {"case": case, "form": form, "candidates": candidates}
    return render(request, "promotion/record_triple.html", context)
