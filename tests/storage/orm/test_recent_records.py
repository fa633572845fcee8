"""The ORM's per-process record cache (``RecentRecords``) stays within its stated caps
in records and in bytes however many or however large the records it sees."""

from storage import Payload, Work, codec
from storage.orm.writebehind import RecentRecords


def text_of(i: int, context: bytes = b"") -> str:
    payload = Payload("test", context) if context else None
    return codec.encode(Work(id=f"w{i:06d}", kind="test.kind", context=payload))


def test_it_keeps_at_most_two_generations_of_records():
    recent = RecentRecords()

    for i in range(3 * RecentRecords.LIMIT):
        recent.decode(Work, text_of(i))

    assert len(recent) <= 2 * RecentRecords.LIMIT
    # The newest are still there: a reread of one costs no decode.
    newest = text_of(3 * RecentRecords.LIMIT - 1)
    assert recent.decode(Work, newest) is recent.decode(Work, newest)


def test_it_holds_at_most_its_byte_cap_of_large_records():
    recent = RecentRecords()
    context = b"x" * (RecentRecords.LARGEST // 2)  # large, still kept

    for i in range(3 * RecentRecords.BYTES // len(context)):
        recent.decode(Work, text_of(i, context))

    assert recent.text_size() <= 2 * RecentRecords.BYTES
    assert len(recent) < 2 * RecentRecords.LIMIT  # the bytes, not the count, bound it


def test_it_never_keeps_a_record_larger_than_its_largest():
    recent = RecentRecords()
    text = text_of(1, b"x" * RecentRecords.LARGEST)

    first = recent.decode(Work, text)

    assert len(recent) == 0
    assert recent.decode(Work, text) == first
