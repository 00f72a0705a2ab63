"""The exception a caller of process_available() catches is streamlib's own, with a
short message naming node, topic, partition and offset, and Spark's exception chained
underneath (issue 11, item 7)."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Produced, Serdes, Streams, StreamsBuilder
from streamlib.spark.query_errors import translate
from streamlib.processors.base import ProcessingError
from streamlib.processors.io import DeserializationFailure
from engine import Workspace

S = Serdes.string()


def _inverse(value: str) -> str:
    return str(1 / int(value))


def inverting():
    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(S, S)).map_values(_inverse)
     .to("out", produced=Produced.with_(S, S)))
    return builder.build()


def test_a_user_function_that_raises_is_a_short_processing_error(spark, tmp_path):
    ws = Workspace(tmp_path)
    ws.produce("in", [("a", "4"), ("b", "0"), ("c", "2")])
    with pytest.raises(ProcessingError) as failure:
        Streams(inverting(), ws.config(), spark=spark).process_available()
    message = str(failure.value)
    assert "ZeroDivisionError: division by zero" in message
    assert "KSTREAM-MAPVALUES" in message and "topic 'in' partition 0 offset 1" in message
    assert len(message) < 600 and "\n" not in message
    assert failure.value.__cause__ is not None, "Spark's exception is chained underneath"


def test_translate_finds_the_innermost_streamlib_error_in_a_spark_trace():
    trace = Exception("py4j.Py4JException: An exception was raised by the Python Proxy:\n"
                      "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                      "ValueError: invalid literal\n\nThe above exception was the direct cause:\n"
                      "streamlib.processors.io.DeserializationFailure: cannot deserialize the record at "
                      "topic 'in' partition 1 offset 7 in KSTREAM-SOURCE-0000000000: bad\n"
                      "org.apache.spark.SparkException: Job aborted ... 4 KB more")
    error = translate(trace)
    assert isinstance(error, DeserializationFailure)
    assert str(error) == ("cannot deserialize the record at topic 'in' partition 1 offset 7 in "
                          "KSTREAM-SOURCE-0000000000: bad")
    assert translate(Exception("no streamlib error here")) is None
