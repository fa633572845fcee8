"""What every operator action request shares, Work and routed alike: the form's
idempotency token, the reason and its text rules, and the result message's wording.

One check (``check_request``) before an action writes anything: a username, a reason
of 1..``REASON_MAX`` characters that every backend can store as it is (no NUL, no
lone surrogate: PostgreSQL refuses the first and the UTF-8 codec the second, so
either would be a 500 at commit), and a well-formed token. Its ``Invalid`` names the
field, for the form's 400 and the command's error.
"""

from __future__ import annotations

import re
import secrets

from storage import Invalid
from storage.tx.fields import require_text

REASON_MAX = 500
# After each of its transactions a bulk action (Work or routed) sleeps as long as that
# transaction held the write lock (at most this long), so a waiting writer's next poll
# finds it free.
BULK_YIELD_MAX = 0.1
# A token is what ``new_token`` makes (24 characters) or a command's own (16-64).
TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
ALREADY_SUBMITTED = "This form was already submitted, nothing was done twice."

__all__ = [
    "ALREADY_SUBMITTED",
    "BULK_YIELD_MAX",
    "REASON_MAX",
    "TOKEN",
    "check_request",
    "new_token",
    "said",
]


def new_token() -> str:
    """An idempotency token for one rendered form."""
    return secrets.token_urlsafe(18)


def check_request(username: str, reason: str, token: str) -> str:
    """The request's reason, stripped, or ``Invalid`` naming what is wrong."""
    if not username:
        raise Invalid("an operator action needs the operator's username")
    reason = reason.strip()
    if not reason:
        raise Invalid("give a reason for the action")
    if len(reason) > REASON_MAX:
        raise Invalid(f"the reason is {len(reason)} characters; at most {REASON_MAX}")
    # Storable as it is on every backend; 4 bytes a character at most.
    require_text(reason, "the reason", 4 * REASON_MAX)
    if not TOKEN.match(token):
        raise Invalid("the form's idempotency token is malformed; reload the page")
    return reason


def said(text: str, *, duplicate: bool) -> str:
    """A result as the operator reads it (flash message, command output): a replayed
    form says so first."""
    return f"{ALREADY_SUBMITTED} {text}" if duplicate else text
