from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """The request type of console views: django-htmx's middleware attaches `htmx`."""

    htmx: HtmxDetails
