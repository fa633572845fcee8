"""The served OpenAPI document is valid OpenAPI 3.1 (openapi-spec-validator) and
describes exactly the API's routes."""

from __future__ import annotations

import re

from django.urls import URLPattern, get_resolver
from openapi_spec_validator import validate


def api_patterns() -> list[URLPattern]:
    """The patterns included under api/v1/, from the URLconf that serves them."""
    for outer in get_resolver().url_patterns:
        for inner in getattr(outer, "url_patterns", []):
            if str(inner.pattern) == "api/v1/":
                return list(inner.url_patterns)
    raise AssertionError("no api/v1/ in the URLconf")


def route_paths() -> set[str]:
    """The API's routes as OpenAPI paths, from the URLconf that serves them."""
    out = set()
    for pattern in api_patterns():
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        out.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return out


def test_the_served_document_is_valid_openapi(client):
    response = client.get("/api/v1/openapi.json")
    document = response.json()
    validate(document)
    assert document["servers"] == [{"url": "http://testserver/api/v1"}]


def test_every_route_is_in_the_document_and_nothing_else(client):
    document = client.get("/api/v1/openapi.json").json()
    assert set(document["paths"]) == route_paths()


def test_each_operation_names_its_errors_and_parameters_it_takes(client):
    document = client.get("/api/v1/openapi.json").json()
    for path, item in document["paths"].items():
        for name in re.findall(r"{(\w+)}", path):
            for operation in item.values():
                assert any(p["name"] == name and p["in"] == "path" for p in operation["parameters"])
        for method, operation in item.items():
            if path != "/openapi.json":
                assert "401" in operation["responses"], (method, path)
