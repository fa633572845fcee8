"""Sign-in through the company's identity provider (OpenID Connect, docs/oidc.md).

``backend.py`` is mozilla-django-oidc's authentication backend with the console's
rules: who a provider user is (one username claim), first sign-in creates the user,
and every sign-in re-syncs the console groups the provider's group claim maps to
(``groups.py``). ``views.py`` holds the login page (passwords and/or the provider)
and the two OIDC views, wrapped so a bad callback is a 4xx page, never a 500.
"""
