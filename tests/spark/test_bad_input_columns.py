"""Column steps do not skip the deserialization handler: keys and values that are not
valid UTF-8 go to it at every setting, as they do for Python steps (issue 11, item 7)."""
from __future__ import annotations

import pytest

from streamlib import Serdes, Streams
from streamlib.processors.io import DeserializationFailure
from engine import Workspace, latest_per_key, python_count
from test_column_steps import column_wordcount

B = Serdes.bytes()
GOOD = ["hello world", "the fox", "hello fox"]
BAD = [(None, b"caf\xe9 latin-1"), (b"\xff\xfe", b"valid value, bad key"), (None, b"\xc3\x28")]


@pytest.fixture
def ws(tmp_path):
    ws = Workspace(tmp_path)
    records = [(None, GOOD[0].encode()), BAD[0], (None, GOOD[1].encode()), BAD[1], BAD[2],
               (None, GOOD[2].encode())]
    ws.produce("lines", records, partitions=2, key_serde=B, value_serde=B)
    return ws


def _raw(ws, topic):
    return [r for p, end in sorted(ws.backend.end_offsets(topic).items()) for r in ws.backend.read(topic, p, 0, end)]


def test_fail_raises_deserialization_failure_naming_the_record(spark, ws):
    app = Streams(column_wordcount(), ws.config(), spark=spark)
    with pytest.raises(DeserializationFailure) as failure:
        app.process_available()
    message = str(failure.value)
    bad = {(r.key, r.value): (r.partition, r.offset) for r in _raw(ws, "lines")}
    assert any(f"topic 'lines' partition {p} offset {o}" in message
               for (k, v), (p, o) in bad.items() if (k, v) in BAD), message
    assert "string()" in message and len(message) < 600
    assert failure.value.__cause__ is not None


def test_log_and_continue_skips_and_counts(spark, ws):
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="log_and_continue")
    expected = dict(python_count(GOOD))
    assert dict(app.store("counts").all()) == expected
    assert app.metrics()["skipped_records"] == len(BAD)
    app.stop()


def test_dead_letter_keeps_the_original_bytes(spark, ws):
    app = ws.run(spark, column_wordcount(), deserialization_exception_handler="dead_letter")
    expected = dict(python_count(GOOD))
    assert dict(app.store("counts").all()) == expected
    assert latest_per_key(ws.read("counts-out", value_serde=Serdes.long())) == expected
    assert app.metrics()["dead_letter_records"] == len(BAD)
    app.stop()
    dead = _raw(ws, "app-dlq")
    assert sorted((r.key or b"", r.value) for r in dead) == sorted((k or b"", v) for k, v in BAD)
    assert all(dict(r.headers)["streamlib.topic"] == b"lines" for r in dead)
