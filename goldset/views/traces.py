"""The traces pages (admins): what a project's OTLP receiver took in and what became of it, and
the sampling rules that decide which traces become answer records."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from goldset.exceptions import GoldsetError
from goldset.forms.sampling import FIELDS, SamplingRuleForm
from goldset.models import TraceStatus
from goldset.selectors import traces as selectors
from goldset.services.sampling import create_sampling_rule, sampling_day, update_sampling_rule
from workbench.roles import Role, role_required


@role_required(Role.ADMIN)
def overview(request):
    status = request.GET.get("status", "")
    if status not in TraceStatus.values:
        status = ""
    project = request.project
    by_status = selectors.count_traces_by_status(project=project)
    context = {
        "by_status": by_status,
        "received": sum(by_status.values()),
        "spans": selectors.count_spans(project=project),
        "rules": selectors.list_sampling_rules(project=project, today=sampling_day()),
        "reasons": selectors.count_rejection_reasons(project=project),
        "traces": selectors.list_recent_traces(project=project, status=status),
        "status": status,
        "statuses": TraceStatus.values,
        "endpoint": request.build_absolute_uri(f"/api/v1/projects/{project.slug}/otlp/v1/traces"),
    }
    return render(request, "traces/overview.html", context)


@role_required(Role.ADMIN)
def trace_detail(request, trace_id):
    trace, spans = selectors.get_trace_for(project=request.project, trace_id=trace_id)
    return render(request, "traces/trace.html", {"trace": trace, "spans": spans})


@role_required(Role.ADMIN)
def sampling_rules(request):
    project = request.project
    form = SamplingRuleForm(data=request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rule = create_sampling_rule(
                project=project,
                actor=request.user,
                **{name: data[name] for name in FIELDS},
                note=data["note"],
            )
        except GoldsetError as exc:
            form.add_service_error(str(exc))
        else:
            messages.success(request, f"Sampling rule {rule.name} is in force for new traces.")
            return redirect("traces:sampling")
    rules = selectors.list_sampling_rules(project=project, today=sampling_day())
    return render(request, "traces/sampling.html", {"form": form, "rules": rules})


@role_required(Role.ADMIN)
def sampling_rule(request, pk):
    rule = selectors.get_sampling_rule_for(project=request.project, rule_id=pk)
    form = SamplingRuleForm.for_rule(rule, data=request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rule = update_sampling_rule(
                project=request.project,
                actor=request.user,
                rule_id=rule.pk,
                note=data["note"],
                **{name: data[name] for name in FIELDS},
            )
        except GoldsetError as exc:
            form.add_service_error(str(exc))
        else:
            messages.success(request, f"Sampling rule {rule.name} is now version {rule.version}.")
            return redirect("traces:sampling")
    return render(request, "traces/sampling_rule.html", {"form": form, "rule": rule})


@require_POST
@role_required(Role.ADMIN)
def sampling_rule_enabled(request, pk):
    rule = selectors.get_sampling_rule_for(project=request.project, rule_id=pk)
    enabled = request.POST.get("enabled") == "1"
    try:
        rule = update_sampling_rule(
            project=request.project, actor=request.user, rule_id=rule.pk, enabled=enabled
        )
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{rule.name} is {'enabled' if enabled else 'disabled'}.")
    return redirect("traces:sampling")
