"""manage.py console_action: the same operator actions from the shell."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

import storage
from storage import WorkState
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def read(fn):
    return storage.view(default_store(), None, fn)


def test_an_operator_cancels_from_the_shell(alice):
    f.work("w1")
    out = StringIO()

    call_command("console_action", "cancel", "w1", "--user", "alice", "--reason", "cli", stdout=out)

    assert "Cancelled Work w1." in out.getvalue()
    assert read(lambda tx: tx.work("w1")).state is WorkState.CANCELLED
    [stored] = [e for e in read(lambda tx: tx.events()) if e.event.source == MANUAL_SOURCE]
    assert stored.event.actor == "operator:alice"


def test_a_token_makes_a_repeated_command_idempotent(alice):
    f.exhausted("w1")
    args = ["retry", "w1", "--user", "alice", "--reason", "r", "--token", "cli-token-0123456789"]

    call_command("console_action", *args, stdout=StringIO())
    call_command("console_action", *args, stdout=StringIO())

    assert len(read(lambda tx: tx.executions("w1"))) == 2


def test_a_refused_action_fails_with_the_reason(alice):
    f.completed("w1")

    with pytest.raises(CommandError, match="Work is already completed"):
        call_command("console_action", "cancel", "w1", "--user", "alice", "--reason", "x")


@pytest.mark.parametrize("user", ["bob", "nobody"])
def test_only_an_operator_may_act(bob, user):
    f.work("w1")

    with pytest.raises(CommandError, match="not an active operator"):
        call_command("console_action", "cancel", "w1", "--user", user, "--reason", "x")


def test_read_only_mode_refuses_the_command(alice, settings):
    settings.CONSOLE_READ_ONLY = True
    f.work("w1")

    with pytest.raises(CommandError, match="read-only"):
        call_command("console_action", "cancel", "w1", "--user", "alice", "--reason", "x")


def test_an_unknown_work_fails_cleanly(alice):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("console_action", "retry", "ghost", "--user", "alice", "--reason", "x")
