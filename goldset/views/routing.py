from django.contrib import messages
from django.shortcuts import redirect, render

from goldset.forms.routing import RoutingRulesForm
from goldset.services.routing import (
    RoutingRulesUnchanged,
    get_active_rules,
    list_routing_rules,
    update_routing_rules,
)
from goldset.views.status import form_status
from workbench.roles import Role, role_required


@role_required(Role.ADMIN)
def routing_rules(request):
    project = request.project
    current = get_active_rules(project=project)
    form = RoutingRulesForm.for_rules(current, data=request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rules = update_routing_rules(
                project=project,
                actor=request.user,
                gold_task_types=data["gold_task_types"],
                uncertainty_threshold=data["uncertainty_threshold"],
                adversarial_routes_gold=data["adversarial_routes_gold"],
                gold_domains=[d.slug for d in data["gold_domains"]],
                note=data["note"],
            )
        except RoutingRulesUnchanged as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Routing rules v{rules.version} are in force for new cases. Existing cases keep their tier.",
            )
            return redirect("routing:rules")
    context = {
        "form": form,
        "current": current,
        "history": list_routing_rules(project=project)[:50],
    }
    return render(request, "routing/rules.html", context, status=form_status(request))
