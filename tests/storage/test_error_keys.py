"""``storage.meaning.triage.error_key``: the error group of a failure message.

Two failures that differ only in their numbers, UUIDs, hex strings or IDs share a
group; the words around them keep groups apart; a key is short, holds no digit and is
its own key.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from storage import error_key
from storage.meaning.triage import MAX_ERROR_KEY

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
# One kind of variable part each: a key names the kind it stripped (<n>, <uuid>...).
kinds = [
    st.integers(-(10**12), 10**12).map(str),
    st.uuids().map(str),
    st.binary(min_size=4, max_size=16).map(lambda b: "a" + b.hex() + "0"),
    st.tuples(st.sampled_from(["evt_", "w", "ord-"]), st.integers(0, 10**9)).map(
        lambda p: f"{p[0]}{p[1]}"
    ),
]
variable = st.one_of(*kinds)
# Two values of one kind, for the same slot of two messages.
pairs = st.one_of(*(st.tuples(kind, kind) for kind in kinds))


@given(st.text(max_size=400))
def test_a_key_is_its_own_key_and_holds_no_digit(message: str) -> None:
    key = error_key(message)
    assert error_key(key) == key
    assert not any(c in "0123456789" for c in key)
    assert len(key) <= MAX_ERROR_KEY
    assert key == key.strip()


@given(st.lists(st.tuples(words, pairs), min_size=1, max_size=6))
def test_messages_differing_only_in_their_variable_parts_share_a_key(
    parts: list[tuple[str, tuple[str, str]]],
) -> None:
    one = " ".join(f"{w} {a}" for w, (a, _) in parts)
    other = " ".join(f"{w} {b}" for w, (_, b) in parts)
    assert error_key(one) == error_key(other)


@given(words, words, variable)
def test_the_words_around_the_variable_parts_keep_groups_apart(a: str, b: str, value: str) -> None:
    if a != b:
        assert error_key(f"{a} failed for {value}") != error_key(f"{b} failed for {value}")


def test_it_names_what_it_stripped() -> None:
    request = uuid.UUID(int=7)
    assert error_key(f"charge 4242 declined for {request}") == "charge <n> declined for <uuid>"
    assert error_key("bad digest 0xdeadbeef, want 3f9a0c1e77ab") == ("bad digest <hex>, want <hex>")
    assert error_key("Work w000123 not found after 3 tries.") == (
        "Work <id> not found after <n> tries."
    )
    assert error_key("  connection\n reset   by peer ") == "connection reset by peer"
    assert error_key(" \t") == ""
