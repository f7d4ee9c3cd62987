"""Admin pages: customers and their logged permission grants and revocations."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from goldset.exceptions import GoldsetError
from goldset.forms.curation import CustomerForm, NoteForm
from goldset.selectors import curation as selectors
from goldset.services import customers as services
from workbench.roles import Role, role_required

PAGE_SIZE = 50


@role_required(Role.ADMIN)
def customers(request):
    form = CustomerForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            customer = services.create_customer(actor=request.user, **form.cleaned_data)
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"{customer.name} added. Grant a permission before using their questions."
            )
            return redirect("curation:customer", slug=customer.slug)
    page = selectors.list_customers(
        project=request.project, cursor=request.GET.get("after"), size=PAGE_SIZE
    )
    return render(request, "curation/customers.html", {"form": form, "page": page})


@role_required(Role.ADMIN)
def customer_detail(request, slug):
    customer = selectors.get_customer(slug=slug)
    context = {
        "customer": customer,
        "permissions": list(customer.permissions.all()),
        "note_form": NoteForm(),
    }
    return render(request, "curation/customer_detail.html", context)


@require_POST
@role_required(Role.ADMIN)
def grant(request, slug):
    customer = selectors.get_customer(slug=slug)
    form = NoteForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    services.grant_customer_permission(customer=customer, actor=request.user, note=note)
    messages.success(request, f"Permission granted for {customer.name}.")
    return redirect("curation:customer", slug=slug)


@require_POST
@role_required(Role.ADMIN)
def revoke(request, slug):
    customer = selectors.get_customer(slug=slug)
    form = NoteForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    try:
        revoked = services.revoke_customer_permission(
            customer=customer, actor=request.user, note=note
        )
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Permission revoked for {customer.name}: {len(revoked)} triples marked revoked and "
            "removed from the gold set and from every later export.",
        )
    return redirect("curation:customer", slug=slug)
