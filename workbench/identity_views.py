"""The identity page of installation admins (``/identity/``): the directory's SCIM tokens and,
per person, ending their sessions, revoking their API tokens, deactivating or reactivating
them (:mod:`workbench.services.identity`). Project admins who are not installation admins get
403: the page acts across every project."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from workbench.models import ScimToken
from workbench.roles import Role, is_installation_admin, role_required
from workbench.services import identity
from workbench.services.scim import create_scim_token, revoke_scim_token

PAGE_SIZE = 50


def _refused(request):
    return render(request, "403.html", {"needed": ["Installation admin"]}, status=403)


@never_cache
@role_required(Role.ADMIN)
def identity_page(request):
    if not is_installation_admin(request.user):
        return _refused(request)
    created = None
    if request.method == "POST":
        _, created = create_scim_token(by=request.user, name=request.POST.get("name", ""))
    query = request.GET.get("q", "").strip()[:150]
    people = get_user_model().objects.annotate(
        live_tokens=Count("api_tokens", filter=Q(api_tokens__revoked_at=None), distinct=True)
    )
    if query:
        people = people.filter(Q(username__icontains=query) | Q(email__icontains=query))
    page = Paginator(people.select_related("scim").order_by("username", "pk"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "created": created,
        "scim_tokens": ScimToken.objects.select_related("created_by"),
        "page": page,
        "q": query,
    }
    return render(request, "workbench/identity.html", context)


@require_POST
@role_required(Role.ADMIN)
def scim_token_revoke(request, pk):
    if not is_installation_admin(request.user):
        return _refused(request)
    get_object_or_404(ScimToken, pk=pk)
    token = revoke_scim_token(by=request.user, token_id=pk)
    messages.success(request, f"SCIM token {token.prefix} is revoked.")
    return redirect("identity:page")


ACTIONS = {
    "end-sessions": (identity.end_sessions, "Sessions of {} ended."),
    "revoke-tokens": (identity.revoke_tokens_of, "API tokens of {} revoked."),
    "deactivate": (identity.deactivate_user, "{} is deactivated."),
    "reactivate": (identity.reactivate_user, "{} may sign in again."),
}


@require_POST
@role_required(Role.ADMIN)
def person_action(request, pk, action):
    if not is_installation_admin(request.user):
        return _refused(request)
    if action not in ACTIONS:
        raise Http404("No such action.")
    person = get_object_or_404(get_user_model(), pk=pk)
    service, done = ACTIONS[action]
    try:
        service(user=person, by=request.user, reason=f"admin:{action}")
    except identity.IdentityRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done.format(person.username))
    return redirect("identity:page")
