"""Run-record test support: the JSON fixtures (``fixtures/runs/``) and hypothesis
strategies for arbitrary well-typed records, including what ``encode`` and ``decode``
refuse (negative integers, strings that are no enum member, unpaired surrogates,
unknown formats)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from storage.runs import (
    AttemptRecord,
    AttemptState,
    ManagedRecord,
    MessageAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    RunRecord,
    ScopeRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
    decode,
)

FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def valid_record() -> RunRecord:
    """The realistic format-2 record of ``fixtures/runs/valid.json``: it reports nothing."""
    return decode((FIXTURES / "valid.json").read_bytes())


# Arbitrary well-typed records. IDs and names come from small pools so that references
# resolve often enough to reach the deeper checks (groups, chains, containers).
IDS = st.sampled_from(["ab" * 16, "cd" * 16, "ef" * 16, "", "AB" * 16, "\ud800"])
NAMES = st.sampled_from(["a", "b", "", "retry@0"])
SMALL = st.integers(-1, 4)
DIGESTS = st.sampled_from(["", hashlib.sha256(b"").hexdigest(), hashlib.sha256(b"x").hexdigest()])


def _states(enum: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from([*enum, "bogus"])


VALUES = st.builds(
    ValueRecord,
    name=NAMES,
    type_id=NAMES,
    version=NAMES,
    state=_states(ValueState),
    digest=DIGESTS,
    data=st.sampled_from([b"", b"x"]),
    stream=st.none()
    | st.builds(
        StreamDescriptorRecord,
        source_id=IDS,
        writer_attempt=IDS,
        capacity=SMALL,
        terminal=_states(Terminal),
    ),
)
TUPLES = st.lists(VALUES, max_size=3).map(tuple)
NODES = st.builds(
    NodeRecord, node_id=NAMES, attempt=IDS, reason=_states(NodeReason), outputs=TUPLES
)
SCOPES = st.builds(
    ScopeRecord,
    graph=NAMES,
    path=NAMES,
    inputs=NAMES,
    nodes=st.dictionaries(NAMES, NODES, max_size=3),
    bindings=st.booleans(),
)
ATTEMPTS = st.builds(
    AttemptRecord,
    parent=IDS,
    node_id=NAMES,
    boundary=st.sampled_from(["", "retry@0", "retry@1"]),
    index=SMALL,
    limit=SMALL,
    state=_states(AttemptState),
)
STREAMS = st.builds(
    StreamRecord,
    scope=IDS,
    node_id=NAMES,
    key=NAMES,
    group=NAMES,
    generation=SMALL,
    source_id=IDS,
    resumable=st.booleans(),
    last_sequence=SMALL,
    acked_through=SMALL,
    pending=st.lists(
        st.builds(PendingMessage, sequence=SMALL, acked=st.booleans()), max_size=3
    ).map(tuple),
    cursor=NAMES,
)
MESSAGES = st.builds(
    MessageAttemptRecord,
    source=IDS,
    group=NAMES,
    sequence=SMALL,
    scope=IDS,
    parent=IDS,
    node_id=NAMES,
    index=SMALL,
    limit=SMALL,
    state=_states(AttemptState),
)
MANAGED = st.builds(
    ManagedRecord,
    scope=IDS,
    parent=IDS,
    node_id=NAMES,
    state=st.sampled_from([b"", b"{}"]),
    values=st.lists(VALUES, max_size=2).map(tuple),
)
RECORDS = st.builds(
    RunRecord,
    run_id=NAMES,
    revision=st.integers(0, 3),
    format=st.sampled_from([0, 1, 2, 3]),
    version=NAMES,
    definition=NAMES,
    inputs=NAMES,
    root_scope=IDS,
    scopes=st.dictionaries(IDS, SCOPES, max_size=3),
    attempts=st.dictionaries(IDS, ATTEMPTS, max_size=6),
    streams=st.dictionaries(NAMES, STREAMS, max_size=2),
    messages=st.dictionaries(NAMES, MESSAGES, max_size=3),
    managed=st.dictionaries(NAMES, MANAGED, max_size=2),
)
PROVIDES = st.none() | st.dictionaries(NAMES, st.frozensets(NAMES), max_size=3)
