"""The first minute of `make run`: no 404 for the favicon, each 4xx logged once."""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_favicon_ico_redirects_to_the_static_icon_without_signing_in(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].endswith(".svg")
    assert "favicon" in response["Location"]
    assert "max-age=86400" in response["Cache-Control"]


@override_settings(DEBUG=True)
def test_a_404_is_written_by_one_handler_even_under_debug():
    # Django's own config hangs a DEBUG-only console handler on the "django" logger;
    # with the root handler as well, every 4xx ("Not Found: /x") was printed twice.
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Not Found: %s", ("/x",), None
    )
    assert len(_writers_of(record)) == 1


def test_django_records_still_reach_the_root_handler():
    django_logger = logging.getLogger("django")
    assert django_logger.handlers == []
    assert django_logger.propagate
    assert logging.getLogger().handlers


def _writers_of(record: logging.LogRecord) -> list[logging.Handler]:
    """The handlers of ours that would write ``record``: the logger hierarchy walked as
    ``Logger.callHandlers`` does, leaving out pytest's own capture handlers."""
    writers = []
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None:
        for handler in logger.handlers:
            ours = not type(handler).__module__.startswith("_pytest")
            if ours and record.levelno >= handler.level and handler.filter(record):
                writers.append(handler)
        logger = logger.parent if logger.propagate else None
    return writers
