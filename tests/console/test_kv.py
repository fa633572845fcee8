"""The KV inspector (``/kv``, issue 32): the namespaces, keyset-paged; a namespace's keys
under a prefix, keyset-paged, each value as JSON, text or hex (cut when long) with the
write that set it (its attempt and Work, or the control plane; its Event and actor;
"before the log's horizon" without a row); as of a store version or a time, with the
keys deleted since; any name the store accepts in the URL; bad input a 400; the
queries pinned, whatever the store holds."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connections

from console.kv.values import HEAD_CHARS, HEX_MAX, TEXT_MAX, Shown, show
from storage import KV_VALUE_LIMIT, Execution, view
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.odd_ids import IDS, exactly_255_bytes

pytestmark = DB

NS = "recon/github.acme"


def page(client: Any, **query: str) -> str:
    answer = client.get("/kv?" + urlencode(query))
    assert answer.status_code == 200, (query, answer.content.decode()[-600:])
    return answer.content.decode()


def keys(text: str) -> list[str]:
    return [html.unescape(k) for k in re.findall(r'<tr id="kv-\d+" data-key="([^"]*)"', text)]


def namespaces(text: str) -> list[str]:
    listed = re.search(r'<ul class="kv-namespaces".*?</ul>', text, re.S)
    return (
        [html.unescape(n) for n in re.findall(r'">([^<]*)</a></li>', listed.group(0))]
        if listed
        else []
    )


def row(text: str, key: str) -> str:
    found = re.search(
        rf'<tr id="kv-\d+" data-key="{re.escape(html.escape(key))}">.*?</tr>', text, re.S
    )
    assert found is not None, key
    return found.group(0)


def link(text: str, label: str) -> str:
    found = re.search(rf'<a (?:rel="next" )?href="([^"]+)">{re.escape(label)}</a>', text)
    return html.unescape(found.group(1)) if found else ""


def running(work_id: str) -> Execution:
    f.work(work_id)
    return f.start(work_id)


# ---------------------------------------------------------------- values


def whole(shown: Shown) -> str:
    return shown.head + ("\n" if shown.rest else "") + shown.rest


def test_a_value_is_pretty_json_text_or_hex_and_a_long_one_says_it_is_cut() -> None:
    nested = show(b'{"b": [1, {"c": null}], "a": "\xc3\xa9"}')
    assert whole(nested) == json.dumps(
        {"b": [1, {"c": None}], "a": "é"}, indent=2, ensure_ascii=False
    )  # the stored order of keys, not sorted
    # The first 8 lines in the row, the rest folded away.
    assert nested.head.count("\n") == 7
    assert (nested.rest, nested.more_lines) == ("}", 1)
    assert show(b'"just a string"').form == "json"
    short = show(b"line one\n\tline two")
    assert (short.form, short.head, short.rest) == ("text", "line one\n\tline two", "")
    assert show(b"NaN").form == "text"  # Python's JSON, not JSON
    assert show(b"[" * 100_000).form == "text"  # too deep to parse: text, not a crash
    assert show(b"caf\xe9").form == "hex"  # not UTF-8
    assert show(b"bell\x07").form == "hex"  # UTF-8 that does not print
    assert show(bytes(range(20))).head == (
        "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n10 11 12 13"
    )
    assert show(b"").form == "empty"
    long_json = json.dumps({"items": list(range(5000))}).encode()
    cut = show(long_json)
    assert (cut.form, cut.cut, len(whole(cut))) == ("json", True, TEXT_MAX)
    assert cut.whole > TEXT_MAX
    one_line = show(b"x" * 5000)  # no line break: the head stops at HEAD_CHARS
    assert (len(one_line.head), len(one_line.rest), one_line.cut) == (
        HEAD_CHARS,
        TEXT_MAX - HEAD_CHARS,
        True,
    )
    blob = show(b"\xff" * KV_VALUE_LIMIT)
    assert (blob.cut, blob.size, whole(blob).count("\n")) == (
        True,
        KV_VALUE_LIMIT,
        HEX_MAX // 16 - 1,
    )


# ---------------------------------------------------------------- namespaces


def test_the_namespaces_are_listed_once_each_in_binary_order_and_page_by_keyset(
    as_alice,
) -> None:
    names = [f"ns-{n:02d}" for n in range(30)] + ["B", "a", "é", "Z"]
    for name in names:
        f.kv(name, {"k1": b"1", "k2": b"2"})
    first = page(as_alice, size="25")
    assert namespaces(first) == sorted(names)[:25]
    assert link(first, "Next →") == "/kv?" + urlencode({"size": "25", "after": sorted(names)[24]})
    rest = as_alice.get(link(first, "Next →")).content.decode()
    assert namespaces(rest) == sorted(names)[25:]
    assert "Next →</span>" in rest  # the last page: no link onward
    assert link(rest, "⇤ First") == "/kv?size=25"
    assert "No more namespaces." in page(as_alice, after="\U0010ffff")
    # as_of is carried into each namespace's link, and the page says what it lists.
    then = page(as_alice, as_of="v3")
    assert "The namespaces holding keys now; each opens as of" in then
    assert 'href="/kv?namespace=B&amp;as_of=v3"' in then


def test_no_namespace_yet_is_an_empty_page(as_alice) -> None:
    assert "No KV entries yet." in page(as_alice)


# ---------------------------------------------------------------- a namespace's keys


def test_a_namespace_shows_each_key_with_its_value_and_the_write_that_set_it(as_alice) -> None:
    x = running("w-recon")
    f.kv(
        NS,
        {"cursor": b'{"page": 2, "etag": "W/1"}', "blob": b"\x00\xff\x10", "note": b"a\nb"},
        by=x,
        event="e-kv",
        actor="operator:alice",
    )
    f.kv(NS, {"lock": b"", "pages": json.dumps(list(range(2000))).encode()})
    text = page(as_alice, namespace=NS)
    assert keys(text) == ["blob", "cursor", "lock", "note", "pages"]
    # A long value: its first lines, the rest folded away, and cut, which it says.
    pages = row(text, "pages")
    assert "<summary>" in pages
    assert re.search(r"<summary>[\d,]+ more lines</summary>", pages)
    assert "Cut: the first 4,000 of 14,892 characters shown." in pages
    cursor = row(text, "cursor")
    assert "JSON · 26 B" in cursor
    assert html.escape(json.dumps({"page": 2, "etag": "W/1"}, indent=2)) in cursor
    assert '<pre class="json kv-hex">00 ff 10</pre>' in row(text, "blob")
    assert '<pre class="json kv-text">a\nb</pre>' in row(text, "note")
    assert "empty (0 bytes)" in row(text, "lock")
    # The writer: the attempt whose lease the transaction held, its Work, its Event.
    assert 'href="/works/w-recon"' in cursor
    assert 'href="/attempts/w-recon-x1">attempt 1</a>' in cursor
    assert 'href="/events/e-kv">kv.written</a>' in cursor
    assert 'href="/operators/alice">operator:alice</a>' in cursor
    assert "<time datetime=" in cursor  # when, relative, as on other pages
    # A control-plane write names no attempt and no Event.
    lock = row(text, "lock")
    assert "control plane" in lock
    assert "/works/" not in lock
    assert "/events/" not in lock


def test_the_prefix_narrows_and_the_keys_page_by_keyset(as_alice) -> None:
    f.kv(NS, {f"obs/{n:03d}": b"%d" % n for n in range(60)} | {"cursor": b"1", "obsolete": b"x"})
    first = page(as_alice, namespace=NS, prefix="obs/")
    assert keys(first) == [f"obs/{n:03d}" for n in range(50)]
    onward = link(first, "Next →")
    assert onward == "/kv?" + urlencode({"namespace": NS, "prefix": "obs/", "after": "obs/049"})
    second = as_alice.get(onward).content.decode()
    assert keys(second) == [f"obs/{n:03d}" for n in range(50, 60)]
    assert "Next →</span>" in second
    assert keys(page(as_alice, namespace=NS, prefix="obs/", size="25", after="obs/010")) == [
        f"obs/{n:03d}" for n in range(11, 36)
    ]
    assert "No keys in this namespace starting with this prefix." in page(
        as_alice, namespace=NS, prefix="zzz"
    )


def test_an_unknown_namespace_is_just_empty(as_alice) -> None:
    assert "No keys in this namespace." in page(as_alice, namespace="never/written")


def test_a_key_last_written_before_the_logs_horizon_says_so(as_alice) -> None:
    f.kv(NS, {"old": b"1", "kept": b"1"})
    f.kv(NS, {"kept": b"2"})
    at = view(default_store(), None, lambda tx: tx.record_versions("kv", NS, "kept")[-1].at)
    f.transact(lambda tx: tx.prune_versions(at))  # the first write's rows go
    horizon = view(default_store(), None, lambda tx: tx.version_horizon())
    text = page(as_alice, namespace=NS)
    assert f"before the log's horizon (version {horizon})" in row(text, "old")
    kept = row(text, "kept")
    assert "before the log" not in kept
    # Just before its write is the horizon itself: known, the first write's value.
    before_it = re.search(r'href="([^"]+)">before it</a>', kept)
    assert before_it is not None
    then = as_alice.get(html.unescape(before_it.group(1))).content.decode()
    assert f"As of store version {horizon}</strong>" in then
    assert '<pre class="json kv-json">1</pre>' in row(then, "kept")


# ---------------------------------------------------------------- as of


def test_as_of_a_version_shows_the_values_then_with_keys_deleted_since(as_alice) -> None:
    x = running("w-recon")
    then = f.kv(NS, {"cursor": b'{"page": 1}', "gone": b"bye", "same": b"="}, by=x)
    f.kv(NS, {"cursor": b'{"page": 2}', "gone": None, "new": b"later"})
    now = page(as_alice, namespace=NS)
    assert keys(now) == ["cursor", "new", "same"]
    before_it = re.search(r'href="([^"]+)">before it</a>', row(now, "cursor"))
    assert before_it is not None
    assert html.unescape(before_it.group(1)) == "/kv?" + urlencode(
        {"namespace": NS, "as_of": f"v{then}"}
    )

    old = as_alice.get(html.unescape(before_it.group(1))).content.decode()
    assert keys(old) == ["cursor", "gone", "same"]
    assert html.escape('"page": 1') in row(old, "cursor")
    assert "bye" in row(old, "gone")
    assert f"As of store version {then}</strong>" in old
    assert f"The store is at version {then + 1} now." in old
    assert link(old, "Show the values now") == "/kv?" + urlencode({"namespace": NS})
    # Each value with the write that set it then: the attempt's.
    assert 'href="/works/w-recon"' in row(old, "cursor")
    assert f"version {then}<" in row(old, "cursor")
    assert "No keys in this namespace as of version 1." in page(as_alice, namespace=NS, as_of="v1")


def test_as_of_a_time_is_the_version_committed_by_then(as_alice) -> None:
    first = f.kv(NS, {"k": b"one"})
    f.kv(NS, {"k": b"two"})
    rows = view(default_store(), None, lambda tx: tx.record_versions("kv", NS, "k"))
    # The first write's time rounded up to the microsecond (an ISO time's finest),
    # before the second write's.
    micros = -(-rows[0].at // 1000)
    assert rows[0].at <= micros * 1000 < rows[1].at
    instant = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)).isoformat()
    text = page(as_alice, namespace=NS, as_of=instant)
    assert f"As of store version {first}</strong>" in text
    assert f'the last committed by <span class="mono">{html.escape(instant)}</span>' in text
    assert "one" in row(text, "k")
    assert "two" not in row(text, "k")
    assert keys(page(as_alice, namespace=NS, as_of="2001-01-01T00:00:00Z")) == []
    # A duration back from now, as the console's other time fields take it.
    assert "two" in row(page(as_alice, namespace=NS, as_of="0s"), "k")


def test_as_of_before_the_horizon_says_it_is_not_known(as_alice) -> None:
    early = f.kv(NS, {"k": b"1"})
    f.kv(NS, {"k": b"2"})
    at = view(default_store(), None, lambda tx: tx.record_versions("kv", NS, "k")[-1].at)
    f.transact(lambda tx: tx.prune_versions(at + 1))
    horizon = view(default_store(), None, lambda tx: tx.version_horizon())
    assert early < horizon
    text = page(as_alice, namespace=NS, as_of=f"v{early}")
    assert f"Not known as of store version {early}." in text
    assert f"The version log begins at version {horizon}" in text
    assert keys(text) == []
    assert "No keys in this namespace" not in text


# ---------------------------------------------------------------- odd names


ODD = {**IDS, "newline": "two\nlines", "tab-and-cr": "a\tb\rc", "amp-eq": "a=1&b=2;c"}


@pytest.mark.parametrize("name", list(ODD))
def test_any_name_the_store_accepts_works_in_the_url(as_alice, name: str) -> None:
    odd = ODD[name]
    f.kv(odd, {odd: b"value of " + odd.encode(), f"{odd}/2": b"2", "zz": b"z"})
    # The namespaces page links it by a URL that gives it back exactly.
    opened = "/kv?" + urlencode({"namespace": odd})
    assert f'href="{html.escape(opened)}"' in page(as_alice)
    text = as_alice.get(opened).content.decode()
    assert keys(text) == sorted([odd, f"{odd}/2", "zz"])
    assert link(text, "Every namespace") == "/kv"
    # The name as a prefix, and as the cursor of the page after it.
    assert keys(page(as_alice, namespace=odd, prefix=odd)) == [odd, f"{odd}/2"]
    later = sorted(k for k in (f"{odd}/2", "zz") if k > odd)
    assert keys(page(as_alice, namespace=odd, after=odd)) == later


def test_names_at_the_stores_limits_work_too(as_alice) -> None:
    namespace, key = exactly_255_bytes("ns-"), "k" * 1024
    f.kv(namespace, {key: b"1"})
    assert keys(page(as_alice, namespace=namespace, prefix=key, after="k" * 1023)) == [key]
    assert namespaces(page(as_alice, after=namespace[:-1])) == [namespace]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "query",
    [
        {"namespace": "a\x00b"},
        {"namespace": "n" * 256},
        {"namespace": "€" * 86},  # 258 bytes
        {"namespace": NS, "prefix": "p\x00"},
        {"namespace": NS, "prefix": "p" * 1025},
        {"prefix": "obs/"},  # a prefix of which namespace?
        {"namespace": NS, "after": "k\x00"},
        {"namespace": NS, "after": "k" * 1025},
        {"after": "n" * 256},  # a namespace cursor is at most a namespace
        {"namespace": NS, "as_of": "yesterday"},
        {"namespace": NS, "as_of": "-1"},
        {"namespace": NS, "as_of": "1.5"},
        {"namespace": NS, "as_of": "9223372036854775808"},  # 2^63
        {"namespace": NS, "as_of": "9" * 5000},
        {"namespace": NS, "as_of": "v9223372036854775807"},  # a version still to come
        {"namespace": NS, "as_of": "²"},
        {"as_of": "not a time"},
        {"as_of": "v9223372036854775807"},  # on the namespaces page too
        {"size": "7"},
        {"namespace": NS, "size": "99999999999999999999999"},
    ],
)
def test_bad_input_is_a_400_naming_it(as_alice, query: dict[str, str]) -> None:
    f.kv(NS, {"k": b"v"})
    answer = as_alice.get("/kv?" + urlencode(query))
    assert answer.status_code == 400, query
    text = answer.content.decode()
    if any("\x00" in v for v in query.values()):
        # Refused before any view: no ID or text may hold a NUL (console.middleware).
        assert "holds a NUL character" in text
    else:
        assert 'class="field-error"' in text
        assert "Every namespace</a>" in text


# ---------------------------------------------------------------- queries


def test_a_page_costs_the_same_whatever_the_store_holds(
    as_alice, django_assert_num_queries
) -> None:
    """The namespaces: BEGIN, the View's clock, the seeks (one statement), COMMIT: 4.
    A namespace's keys: BEGIN, the clock (with the store's version), the horizon, the
    keys, COMMIT (5), each key's last write (n), each distinct attempt and Event (here
    one each: 2). As of a version: the horizon again and the changed keys' first rows
    (2 more); as of a time: the version then (1 more)."""
    x = running("w-recon")
    then = f.kv(NS, {f"k{n}": b"%d" % n for n in range(5)}, by=x, event="e-1")
    f.kv(NS, {"k0": b"changed"}, by=x, event="e-2")
    viewed = connections["view"]
    with django_assert_num_queries(4, connection=viewed):
        page(as_alice)
    with django_assert_num_queries(5 + 5 + 1 + 2, connection=viewed):
        page(as_alice, namespace=NS)
    with django_assert_num_queries(7 + 5 + 1 + 1, connection=viewed):
        page(as_alice, namespace=NS, as_of=f"v{then}")  # only e-1 then
    # Much more in the store, the namespace and the log: the same.
    for n in range(40):
        f.kv(f"other-{n}", {f"k{m}": b"x" for m in range(20)})
    for n in range(30):
        f.kv(NS, {f"k{m}": b"%d" % n for m in range(5, 60)})
    with django_assert_num_queries(4, connection=viewed):
        assert len(namespaces(page(as_alice, size="25"))) == 25
    # 25 keys: k0 (the attempt, e-2), k1 to k4 (the attempt, e-1), the control plane's.
    with django_assert_num_queries(5 + 25 + 1 + 2, connection=viewed):
        assert len(keys(page(as_alice, namespace=NS, prefix="k", size="25", after="j"))) == 25
    # A time after every commit: version_at answers with the store's version, which
    # the View read with its clock (no statement more).
    with django_assert_num_queries(8 + 25 + 1 + 2, connection=viewed):
        text = page(as_alice, namespace=NS, as_of="2100-01-01T00:00:00Z", prefix="k", size="25")
        assert len(keys(text)) == 25
