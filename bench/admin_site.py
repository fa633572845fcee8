"""Benchmark 3's baseline: Django admin's changelist over the same Work table, with
list filters and facet counts, on its own AdminSite so the product's admin is unchanged.
Two of them: ``site`` shows the facet counts always (``ShowFacets.ALWAYS``: a count
per filter value, over the whole table, on every page) and ``shipped`` is the same
changelist as Django ships it (``ShowFacets.ALLOW``: counts only when asked for with
``?_facets``), the baseline issue 22 compares the console's Work list with.

The admin needs a model, so it takes storage's documented read-only handle
(``storage.tooling.work_table``) rather than the ORM backend's private models; the
changelist only reads.
"""

from __future__ import annotations

from django.contrib import admin

from storage.tooling import work_table

site = admin.AdminSite(name="bench_admin")
shipped = admin.AdminSite(name="bench_admin_shipped")


class ShippedWorkRowAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "kind", "state", "scope_id", "source", "latest_executor", "updated_ns")
    list_filter = ("state", "kind", "scope_id", "source", "latest_executor")
    # The console's default order (newest first), so both pages read the same rows.
    ordering = ("-created_ns", "-id")
    list_per_page = 50


class WorkRowAdmin(ShippedWorkRowAdmin):
    show_facets = admin.ShowFacets.ALWAYS


site.register(work_table(), WorkRowAdmin)
shipped.register(work_table(), ShippedWorkRowAdmin)
