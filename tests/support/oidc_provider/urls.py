import json
import secrets

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import Group, User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.models import Application


def _admitted(request: HttpRequest) -> bool:
    token = "Bearer " + settings.ADMIN_TOKEN
    return secrets.compare_digest(request.headers.get("Authorization", ""), token)


@csrf_exempt
@require_POST
def directory_user(request: HttpRequest) -> HttpResponse:
    """Create or change a user: {"username", "password", "email", "groups": [...]}.
    The directory administrator's hand, for the tests."""
    if not _admitted(request):
        return HttpResponse(status=403)
    body = json.loads(request.body)
    user, _ = User.objects.get_or_create(username=body["username"])
    user.set_password(body["password"])
    user.email = body.get("email", "")
    user.save()
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in body["groups"]])
    return JsonResponse({"id": user.pk})


@csrf_exempt
@require_POST
def directory_client(request: HttpRequest) -> HttpResponse:
    """Register (or re-register) the console: {"client_id", "secret", "redirect_uris"}."""
    if not _admitted(request):
        return HttpResponse(status=403)
    body = json.loads(request.body)
    app = Application.objects.filter(client_id=body["client_id"]).first() or Application(
        client_id=body["client_id"]
    )
    app.name = "Conduit Console"
    app.client_secret = body["secret"]
    app.client_type = Application.CLIENT_CONFIDENTIAL
    app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    app.redirect_uris = " ".join(body["redirect_uris"])
    app.algorithm = Application.RS256_ALGORITHM
    app.skip_authorization = True
    app.save()
    return JsonResponse({"id": app.pk})


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("login/", auth_views.LoginView.as_view(template_name="provider_login.html")),
    path("directory/user/", directory_user),
    path("directory/client/", directory_client),
    path("up/", lambda request: HttpResponse("up")),
]
