"""The project's URLs plus the benchmark-only admin (bench.admin_site)."""

from django.urls import path

from bench.admin_site import shipped, site
from conduit.urls import urlpatterns as project_urls

urlpatterns = [
    path("bench-admin/", site.urls),
    path("bench-admin-shipped/", shipped.urls),
    *project_urls,
]
