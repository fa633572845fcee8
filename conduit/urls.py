from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from console.oidc import views as oidc_views

urlpatterns = [
    path("accounts/login/", oidc_views.login, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("oidc/", include("console.oidc.urls")),
    path("admin/login/", oidc_views.admin_login),
    path("admin/", admin.site.urls),
    path("", include("console.urls")),
]
