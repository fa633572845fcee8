"""Scopes (checklist §6, SC)."""

from __future__ import annotations

from dataclasses import replace

from storage import Binding, Invalid, NotFound, Scope, Store, Tx

from ..support import FakeClock, fails, ids, make_scope, make_work, tx

# ---------------------------------------------------------------------------------
# 6. Scopes (SC)
# ---------------------------------------------------------------------------------


def test_scope_round_trip(store: Store, clock: FakeClock) -> None:
    """SC-01, SC-04, SC-05: a Scope keeps parent, routes, bindings (with PassEnv),
    opaque config and secret references unchanged, with no workspace needed."""
    scope = Scope(
        id="s-child",
        parent_id="s-root",
        name="Child scope",
        routes=({"match": {"type": "github.issue.*"}, "work": "conduit.triage"}, "fallback"),
        bindings=(
            Binding(name="default", executor="shell", pass_env=("HOME", "GITHUB_TOKEN")),
            Binding(name="gpu", executor="k8s"),
        ),
        config={"nested": {"list": [1, 2.5, None, True]}, "unicode": "\u00e9\u00e8"},
        secret_refs=("vault:github/token", "env:API_KEY"),
    )

    def write(t: Tx) -> Scope:
        t.put_scope(make_scope("s-root"))
        return t.put_scope(scope)

    written = tx(store, write)
    read = tx(store, lambda t: t.scope("s-child"))
    assert read == written, "SC-04: the Scope read back differs from the one written"
    assert replace(read, revision=0, created_at=0, updated_at=0) == scope, (
        f"SC-04: Scope fields did not round-trip: {read}"
    )
    assert ids(tx(store, lambda t: t.scopes())) == ["s-child", "s-root"], "EN-01: scopes()"


def test_scope_parent_must_exist(store: Store, clock: FakeClock) -> None:
    """SC-02: a Scope whose parent does not exist is refused, on create and update."""
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(make_scope("s1", parent_id="ghost")),
        "SC-02 create with a missing parent",
    )
    s1 = tx(store, lambda t: t.put_scope(make_scope("s1")))
    fails(
        store,
        NotFound,
        lambda t: t.put_scope(replace(s1, parent_id="ghost")),
        "SC-02 update to a missing parent",
    )
    assert tx(store, lambda t: t.scopes()) == [s1], "SC-02: a Scope with a missing parent stored"


def test_parent_cycles(store: Store, clock: FakeClock) -> None:
    """Scenario "parent cycles" (SC-03, ID-12): Scope updates forming a cycle (self,
    A->B->A, longer) are Invalid and change nothing; an acyclic reparent is allowed;
    a Work cannot be its own parent."""

    def build(t: Tx) -> None:
        t.put_scope(make_scope("a"))
        t.put_scope(make_scope("b", parent_id="a"))
        t.put_scope(make_scope("c", parent_id="b"))
        t.put_scope(make_scope("d"))

    tx(store, build)
    before = tx(store, lambda t: t.scopes())
    for what, parent in [("self", "a"), ("two-cycle", "b"), ("three-cycle", "c")]:
        fails(
            store,
            Invalid,
            lambda t, p=parent: t.put_scope(replace(t.scope("a"), parent_id=p)),
            f"parent cycles: {what}",
        )
    assert tx(store, lambda t: t.scopes()) == before, "parent cycles: a refused cycle was stored"
    moved = tx(store, lambda t: t.put_scope(replace(t.scope("c"), parent_id="d")))
    assert moved.parent_id == "d", "parent cycles: an acyclic reparent was refused"
    # a -> d is acyclic now that c no longer hangs below a.
    tx(store, lambda t: t.put_scope(replace(t.scope("a"), parent_id="d")))
    fails(
        store,
        Invalid,
        lambda t: t.put_scope(replace(t.scope("d"), parent_id="b")),
        "parent cycles: d -> b -> a -> d",
    )
    fails(
        store,
        Invalid,
        lambda t: t.put_work(make_work("w1", parent_id="w1")),
        "parent cycles: Work parent itself",
    )
