"""Decoded values on the run page (console/run_records/values.py): each ready value restored with
the codecs ``CONSOLE_RUN_VALUES`` names (the demo's, as in ``make run``), beside the
restore check; a corrupt one says which check failed and is not decoded; an unregistered
codec says so and the digest stands in; long values fold into a "show all" <details>."""

from __future__ import annotations

import hashlib
import html as htmllib
import re
from dataclasses import replace

from console.run_records.values import PREVIEW_CHARS, check_run_values
from demo import values
from storage.run_records import DurableRunRecord, ValueRecord
from tests.console import run_record_factories as rf
from tests.console.conftest import DB

pytestmark = DB


def with_output(
    record: DurableRunRecord, node_id: str, name: str, value: ValueRecord
) -> DurableRunRecord:
    """``record`` with output ``name`` of root node ``node_id`` replaced."""
    root = record.scopes[record.root_scope]
    node = root.nodes[node_id]
    outputs = tuple(value if v.name == name else v for v in node.outputs)
    nodes = {**root.nodes, node_id: replace(node, outputs=outputs)}
    return replace(record, scopes={**record.scopes, record.root_scope: replace(root, nodes=nodes)})


def checkout_with(run_id: str, value: ValueRecord) -> DurableRunRecord:
    return rf.save(with_output(rf.until(run_id, rf.Plan("checkout")), "validate", "order", value))


def row_of(html: str, name: str) -> str:
    """The value table row of output ``name``."""
    match = re.search(rf'<tr>\s*<td class="mono">{re.escape(name)}</td>.*?</tr>', html, re.S)
    assert match is not None, f"no row for {name}"
    return match.group(0)


def decoded_cell(row: str) -> str:
    match = re.search(r'<td class="small decoded">(.*?)</td>\s*</tr>', row, re.S)
    assert match is not None
    return match.group(1)


def test_ready_values_are_shown_decoded_beside_their_restore_check(as_alice):
    record = rf.checkout("checkout/1")
    order = values.CODECS.for_type(values.Order)
    assert order is not None
    stored = record.scopes[record.root_scope].nodes["validate"].outputs[0]
    expected = order.decode(stored.data)

    html = as_alice.get("/run-records/checkout/1").content.decode()

    cell = decoded_cell(row_of(html, "order"))
    assert "✓ restores" in cell
    assert ">Order</span>" in cell  # checked against the type the demo declares
    assert htmllib.escape(f"order_id={expected.order_id!r}") in cell
    # The child graph's outputs are decoded too, and nothing is left undecoded.
    assert "✓ restores" in decoded_cell(row_of(html, "label"))
    assert '<td class="small decoded"><span class="muted">—</span>' not in html


def test_zero_bytes_and_skipped_values_restore_as_themselves(as_alice):
    rf.checkout("checkout/1")

    html = as_alice.get("/run-records/checkout/1").content.decode()

    warnings = decoded_cell(row_of(html, "warnings"))
    assert "✓ restores" in warnings
    assert "Warnings(items=())" in warnings  # a custom codec that wrote zero bytes
    assert "restores as skipped" in decoded_cell(row_of(html, "backorder"))


def test_a_decoded_value_is_escaped(as_alice):
    hostile = values.Order("o-1", (), "<b>10%</b>", "<script>alert(1)</script>")
    checkout_with("checkout/2", values.CODECS.ready_value("order", hostile))

    html = as_alice.get("/run-records/checkout/2").content.decode()

    cell = decoded_cell(row_of(html, "order"))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in cell
    assert "<script>alert" not in html
    assert "&lt;b&gt;10%&lt;/b&gt;" in cell


def test_a_long_value_is_cut_with_a_show_all_that_needs_no_script(as_alice):
    lines = tuple(values.Line(f"sku-{i:04d}", i, 100 + i) for i in range(120))
    checkout_with(
        "checkout/3", values.CODECS.ready_value("order", values.Order("o-9", lines, None, "end"))
    )

    html = as_alice.get("/run-records/checkout/3").content.decode()

    cell = decoded_cell(row_of(html, "order"))
    head, _, rest = cell.partition("<details")
    assert "…" in head
    assert "sku-0119" not in head  # the tail is only in "show all"
    assert "<summary>show all (" in rest
    assert "sku-0119" in rest
    assert "note=&#x27;end&#x27;" in rest
    shown = re.search(r'<pre class="json decoded-value">(.*?)</pre>', head, re.S)
    assert shown is not None
    assert len(htmllib.unescape(shown.group(1))) == PREVIEW_CHARS + 1  # and the "…"


def test_a_corrupt_value_names_the_failed_check_and_is_not_decoded(as_alice):
    record = rf.until("checkout/4", rf.Plan("checkout"))
    good = record.scopes[record.root_scope].nodes["validate"].outputs[0]
    rf.save(with_output(record, "validate", "order", replace(good, data=good.data + b" ")))

    html = as_alice.get("/run-records/checkout/4").content.decode()

    cell = decoded_cell(row_of(html, "order"))
    assert '✗ <span class="mono">digest-mismatch</span>' in cell
    assert "decoded-value" not in cell  # corrupt bytes are never shown as a value
    assert "✓ restores" not in cell
    assert "value-digest" in html  # the validator says so at the top as well


def test_an_unregistered_codec_says_so_and_the_digest_stands_in(as_alice):
    data = b'{"legacy":true}'
    unknown = values.CODECS.ready_value("order", values.Order("o", (), None, ""))
    unknown = replace(unknown, type_id="acme.legacy_order", version="3", data=data)
    unknown = replace(unknown, digest=hashlib.sha256(data).hexdigest())
    checkout_with("checkout/5", unknown)

    html = as_alice.get("/run-records/checkout/5").content.decode()

    row = row_of(html, "order")
    cell = decoded_cell(row)
    assert 'codec <span class="mono">acme.legacy_order</span> is not registered here' in cell
    assert "restore-finding" not in cell  # nothing else is wrong with it
    assert "decoded-value" not in cell
    assert f'title="{unknown.digest}"' in row  # the digest, checked, is what is shown
    assert '<span class="check-ok" title="SHA-256 of the Data matches">✓</span>' in row


def test_a_value_of_another_type_than_declared_is_a_type_mismatch(as_alice):
    other = values.CODECS.ready_value("order", values.Output("validate", "order", 7))
    checkout_with("checkout/6", other)

    html = as_alice.get("/run-records/checkout/6").content.decode()

    cell = decoded_cell(row_of(html, "order"))
    assert '✗ <span class="mono">type-mismatch</span>' in cell
    assert "decoded a Output, the declared type is Order" in cell
    assert "Output(node=&#x27;validate&#x27;" in cell  # still shown, as what it decodes to


def test_managed_values_of_a_stream_run_are_decoded(as_alice):
    rf.sparse_feed("feed/1")

    html = as_alice.get("/run-records/feed/1").content.decode()

    managed = html[html.index('id="run-managed"') :]
    assert "Total(processed=" in decoded_cell(row_of(managed, "total"))


def test_without_the_hosts_codecs_the_page_falls_back_to_digests(as_alice, settings):
    settings.CONSOLE_RUN_VALUES = ""  # the built-in codecs only
    rf.checkout("checkout/1")

    html = as_alice.get("/run-records/checkout/1").content.decode()

    assert "demo.order</span> is not registered here" in decoded_cell(row_of(html, "order"))


def test_a_setting_that_does_not_load_is_a_notice_and_a_check_error(as_alice, settings):
    settings.CONSOLE_RUN_VALUES = "demo.nowhere.run_values"
    rf.checkout("checkout/1")

    response = as_alice.get("/run-records/checkout/1")

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="values-error"' in html
    assert "demo.nowhere.run_values does not load" in html
    assert [e.id for e in check_run_values()] == ["console.E101"]
    settings.CONSOLE_RUN_VALUES = "demo.graphs.run_values"
    assert check_run_values() == []


def test_a_stream_value_shows_its_element_codec_not_a_decoded_value(as_alice):
    rf.save(rf.until("feed/2", rf.Plan("feed", messages=3)))

    html = as_alice.get("/run-records/feed/2").content.decode()

    cell = decoded_cell(row_of(html, "events"))
    assert "✓ restores" in cell
    assert "stream: element codec registered" in cell
    assert "decoded-value" not in cell
