"""A real OpenID Connect provider for the test suite: django-oauth-toolkit's, in a
Django project of its own, served by gunicorn in its own process (tests/support/oidc.py
starts it). Its users, passwords and groups live in its own SQLite file; the groups
claim is the user's Django groups there, so a test removes a group at the provider the
way a directory administrator would, and the console sees it at the next sign-in.

Nothing here is imported by the console or by its test process: only gunicorn loads it.
"""
