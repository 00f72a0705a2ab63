"""An oversized record is a clear error, at produce() and from a running application,
and nothing of it is written (issue 11, item 7)."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Produced, Serdes, Streams, StreamsBuilder
from streamlib.topics import RecordTooLarge, open_backend
from engine import Workspace

S = Serdes.string()
MB = 1 << 20


def test_produce_refuses_a_record_over_max_message_bytes(tmp_path):
    backend = open_backend(f"local://{tmp_path}")
    backend.create_topic("t")
    backend.create_topic("big", config={"max.message.bytes": str(3 * MB)})
    with pytest.raises(RecordTooLarge, match=f"a record of {2 * MB} bytes exceeds topic 't'.*1048588"):
        backend.produce("t", value=b"x" * 2 * MB)
    backend.produce("big", value=b"x" * 2 * MB)
    backend.flush()
    assert backend.end_offsets("t") == {0: 0} and backend.end_offsets("big") == {0: 1}


def inflate():
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S))
     .map_values(lambda v: v * (2 * MB) if v == "x" else v)
     .to("out", produced=Produced.with_(S, S)))
    return builder.build()


def test_an_oversized_sink_record_stops_the_application_with_the_topic_named(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("in", [("a", "small"), ("b", "x")])
    with pytest.raises(RecordTooLarge, match="exceeds topic 'out' partition 0's max.message.bytes") as failure:
        Streams(inflate(), ws.config(), spark=spark).process_available()
    assert failure.value.__cause__ is not None
    assert ws.read("out") == []
