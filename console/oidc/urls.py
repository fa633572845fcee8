from django.urls import path

from console.oidc import views

urlpatterns = [
    path("start/", views.start, name="oidc_start"),
    path("callback/", views.callback, name="oidc_callback"),
]
