"""Bad input through Spark: each deserialization handler, a poison record that stops
the query without committing its batch, and null keys dropped by aggregations."""
from __future__ import annotations

import struct
from collections import Counter

import pytest

from streamlib import Consumed, Grouped, Materialized, Produced, Serde, Serdes, Streams, StreamsBuilder
from engine import Workspace

S, I, L, B = Serdes.string(), Serdes.integer(), Serdes.long(), Serdes.bytes()
GOOD = [(f"k{i % 4}".encode(), struct.pack(">i", i)) for i in range(12)]
BAD = [(b"k1", b"xyz"), (b"k2", b"\x00"), (b"k9", b"seventeen")]
NULL_KEY = (None, struct.pack(">i", 99))


def counting(value_serde: Serde = I):
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, value_serde))
     .group_by_key(Grouped.with_(S, value_serde))
     .count(Materialized.as_("counts"))
     .to_stream().to("counts-out", produced=Produced.with_(S, L)))
    return builder.build()


def good_counts(records) -> dict:
    return dict(Counter(key.decode() for key, _ in records if key is not None))


@pytest.fixture
def workspace(tmp_path):
    workspace = Workspace(tmp_path)
    records = GOOD[:5] + BAD[:2] + GOOD[5:] + [NULL_KEY] + BAD[2:]
    workspace.produce("in", records, partitions=2, key_serde=B, value_serde=B)
    return workspace


def raw_records(workspace: Workspace, topic: str) -> list:
    return [r for p, end in sorted(workspace.backend.end_offsets(topic).items())
            for r in workspace.backend.read(topic, p, 0, end)]


def test_dead_letter_keeps_every_bad_record_with_its_bytes_and_origin(spark, workspace):
    app = workspace.run(spark, counting(), deserialization_exception_handler="dead_letter")
    assert dict(app.store("counts").all()) == good_counts(GOOD)
    metrics = app.metrics()
    app.stop()
    # dropped: the null key, and (as Kafka counts them) the records the handler took
    assert (metrics["dead_letter_records"], metrics["dropped_records"]) == (len(BAD), len(BAD) + 1)
    dead = raw_records(workspace, "app-dlq")
    assert sorted((r.key, r.value) for r in dead) == sorted(BAD)
    origin = {(r.partition, r.offset): (r.key, r.value) for r in raw_records(workspace, "in")}
    for record in dead:
        headers = dict(record.headers)
        assert headers["streamlib.topic"] == b"in"
        where = (struct.unpack(">q", headers["streamlib.partition"])[0],
                 struct.unpack(">q", headers["streamlib.offset"])[0])
        assert origin[where] == (record.key, record.value)
        assert b"integer()" in headers["streamlib.error"]


def test_log_and_continue_skips_and_counts_bad_records(spark, workspace):
    app = workspace.run(spark, counting(), deserialization_exception_handler="log_and_continue")
    assert dict(app.store("counts").all()) == good_counts(GOOD)
    metrics = app.metrics()
    app.stop()
    assert (metrics["skipped_records"], metrics["dropped_records"], metrics["dead_letter_records"]) == \
        (len(BAD), len(BAD) + 1, 0)
    assert "app-dlq" not in workspace.backend.list_topics()


def _int_or_text(data: bytes) -> int:
    return struct.unpack(">i", data)[0] if len(data) == 4 else len(data)


#: the fix for the poison records: 4-byte ints as before, anything else read as its length
LENIENT = Serde("lenient-integer()", lambda v: struct.pack(">i", v), _int_or_text)


def test_poison_record_stops_the_query_without_committing_and_a_fixed_serde_resumes(spark, workspace):
    app = Streams(counting(), workspace.config(), spark=spark)
    with pytest.raises(Exception) as failure:
        app.process_available()
    message = str(failure.value)
    poison = [f"cannot deserialize the record at topic 'in' partition {r.partition} offset {r.offset}"
              for r in raw_records(workspace, "in") if (r.key, r.value) in BAD]
    assert any(where in message for where in poison) and "serde integer()" in message

    app = workspace.run(spark, counting(LENIENT))  # same application id and checkpoint
    expected = good_counts(GOOD + BAD)
    assert dict(app.store("counts").all()) == expected  # the failed batch re-ran, once
    app.stop()
    # One cached commit: one update per key, even if a task of the failed attempt had
    # already appended its rows (the re-run's identical append is skipped).
    output = [(r.key.decode(), L.deserialize(r.value)) for r in raw_records(workspace, "counts-out")]
    assert sorted(output) == sorted(expected.items())
