import json

from django.contrib.auth import views as auth_views
from django.contrib.auth.models import Group, User
from django.http import JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.models import Application


@csrf_exempt
@require_POST
def set_user(request):
    """Create or update a user: {username, password, groups, email}."""
    body = json.loads(request.body)
    user, _ = User.objects.get_or_create(username=body["username"])
    if not user.check_password(body["password"]):  # a new hash would end the user's sessions
        user.set_password(body["password"])
    user.email = body.get("email", "")
    user.save()
    user.groups.set([Group.objects.get_or_create(name=g)[0] for g in body.get("groups", [])])
    return JsonResponse({"sub": str(user.pk)})


@csrf_exempt
@require_POST
def set_client(request):
    """Register (or re-register) the workbench: {client_id, client_secret, redirect_uri}."""
    body = json.loads(request.body)
    Application.objects.filter(client_id=body["client_id"]).delete()
    Application.objects.create(
        name="Goldset Workbench",
        client_id=body["client_id"],
        client_secret=body["client_secret"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=body["redirect_uri"],
        post_logout_redirect_uris=body.get("post_logout_redirect_uri", ""),
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    return JsonResponse({"ok": True})


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="registration/login.html"),
        name="login",
    ),
    path("test/users/", set_user),
    path("test/client/", set_client),
]
