"""Benchmark 3's baseline: Django admin's changelist over the same Work table, with
list filters and facet counts, on its own AdminSite so the product's admin is unchanged.

The admin needs a model, so it takes storage's documented read-only handle
(``storage.tooling.work_table``) rather than the ORM backend's private models; the
changelist only reads.
"""

from __future__ import annotations

from django.contrib import admin

from storage.tooling import work_table

site = admin.AdminSite(name="bench_admin")


class WorkRowAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "kind", "state", "scope_id", "source", "latest_executor", "updated_ns")
    list_filter = ("state", "kind", "scope_id", "source", "latest_executor")
    show_facets = admin.ShowFacets.ALWAYS
    # The console's default order (newest first), so both pages read the same rows.
    ordering = ("-created_ns", "-id")
    list_per_page = 50


site.register(work_table(), WorkRowAdmin)
