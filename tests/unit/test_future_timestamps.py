"""The local log refuses records whose timestamp is too far ahead of now, as Kafka's
broker does (``message.timestamp.after.max.ms``, KIP-937; one hour by default since
Kafka 4.0): a year-9999 record would move stream time there and make every later
record late. No Spark."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from streamlib.spark.query_errors import translate
from streamlib.topics import InvalidTimestamp, open_backend
from streamlib.topics.base import HEADER_TYPE

YEAR_9999 = 253402300799999


def rows(*timestamps):
    n = len(timestamps)
    return pa.table({"timestamp": pa.array(timestamps, pa.int64()), "key": [b"k"] * n, "value": [b"v"] * n,
                     "headers": pa.array([[]] * n, HEADER_TYPE)})


def test_produce_refuses_a_far_future_timestamp(local_backend):
    local_backend.create_topic("t")
    with pytest.raises(InvalidTimestamp, match=r"topic 't'.*timestamp 253402300799999 is \d+ ms ahead of now.*"
                                               r"message.timestamp.after.max.ms 3600000"):
        local_backend.produce("t", b"k", b"v", timestamp=YEAR_9999)
    local_backend.produce("t", b"k", b"v", timestamp=int(time.time() * 1000) + 60_000)  # a minute: fine
    local_backend.flush()
    assert local_backend.end_offsets("t") == {0: 1}


def test_append_refuses_the_whole_append(local_backend):
    local_backend.create_topic("t")
    with pytest.raises(InvalidTimestamp, match="topic 't' partition 0"):
        local_backend.append("t", 0, rows(1, 2, YEAR_9999))
    assert local_backend.end_offsets("t") == {0: 0}


def test_the_limit_is_a_topic_config(local_backend):
    local_backend.create_topic("t", config={"message.timestamp.after.max.ms": str(2 ** 62)})
    local_backend.append("t", 0, rows(YEAR_9999))
    local_backend.create_topic("strict", config={"message.timestamp.after.max.ms": "0"})
    with pytest.raises(InvalidTimestamp):
        local_backend.produce("strict", b"k", b"v", timestamp=int(time.time() * 1000) + 5_000)


def test_the_error_survives_a_spark_trace():
    error = translate(RuntimeError("...\nstreamlib.topics.base.InvalidTimestamp: topic 't': a record's timestamp "
                                   "9 is 1 ms ahead of now (8)\n..."))
    assert isinstance(error, InvalidTimestamp)
