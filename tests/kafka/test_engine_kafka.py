"""The engine on the Kafka backend: wordcount through Spark against a real broker,
its input read by Spark's own Kafka source (``spark-sql-kafka-0-10``)."""
from __future__ import annotations

import uuid

from streamlib import Serdes, Streams, StreamsConfig
from streamlib.spark.kafka_source import read_kafka_stream
from streamlib.topics import open_backend
from engine import latest_per_key, python_count, wordcount_topology
from test_engine_spark import random_lines


def _produce(backend, topic, lines):
    for line in lines:
        backend.produce(topic, value=line.encode())
    backend.flush()


def test_wordcount_on_kafka_counts_exactly_and_a_restart_continues(spark, kafka_bootstrap, tmp_path):
    url = f"kafka://{kafka_bootstrap}"
    suffix = uuid.uuid4().hex[:8]  # the broker lives for the whole test session
    app_id, topic = f"wc-{suffix}", f"lines-{suffix}"
    backend = open_backend(url)
    backend.create_topic(topic, partitions=2)
    first, second = random_lines(400, 11), random_lines(150, 12)
    _produce(backend, topic, first)
    config = StreamsConfig(application_id=app_id, bootstrap=url, state_dir=str(tmp_path / "state"),
                           checkpoint_location=str(tmp_path / "checkpoint"))
    topology = wordcount_topology(source=topic, output=f"{topic}-counts")  # one broker per session
    app = Streams(topology, config, spark=spark)
    app.process_available()
    assert dict(app.store("counts").all()) == dict(python_count(first))
    # A new run of the same application continues from the offsets in Spark's checkpoint.
    _produce(backend, topic, second)
    app = Streams(topology, config, spark=spark)
    app.process_available()
    expected = dict(python_count(first + second))
    assert dict(app.store("counts").all()) == expected
    app.stop()
    output = [(Serdes.string().deserialize(r.key), Serdes.long().deserialize(r.value), r.timestamp)
              for p, end in sorted(backend.end_offsets(f"{topic}-counts").items())
              for r in backend.read(f"{topic}-counts", p, 0, end)]
    assert latest_per_key(output) == expected
    assert f"{app_id}-counts-changelog" in backend.list_topics()


def test_spark_kafka_source_rows_match_our_data_source(spark, kafka_bootstrap):
    url = f"kafka://{kafka_bootstrap}"
    topic = f"rows-{uuid.uuid4().hex[:8]}"
    backend = open_backend(url)
    backend.create_topic(topic, partitions=2)
    backend.produce(topic, key=b"k", value=b"v", timestamp=1234, headers=[("h", b"x")])
    backend.produce(topic, key=None, value=b"w", timestamp=1235, partition=1)
    backend.flush()
    theirs = (read_kafka_stream(spark, url, {topic: 2}).writeStream.format("memory")
              .queryName(f"q_{topic.replace('-', '_')}").trigger(availableNow=True).start())
    theirs.awaitTermination()
    got = spark.table(f"q_{topic.replace('-', '_')}")
    ours = (spark.read.format("streamlib").option("bootstrap", url).option("topics", topic).load())
    assert got.schema.simpleString() == ours.schema.simpleString()
    rows = sorted(tuple(r) for r in got.collect())
    assert rows == sorted(tuple(r) for r in ours.collect())
    assert [(r[1], r[2], r[3], r[4], r[5], [tuple(h) for h in r[6]]) for r in rows] == [
        (0, 0, 1234, b"k", b"v", [("h", b"x")]), (1, 0, 1235, None, b"w", [])]


def test_a_changelog_that_lost_committed_records_with_the_state_directory_stops_the_restart(
        spark, kafka_bootstrap, tmp_path):
    """Kafka's version of the double fault (an unclean leader election under a lost state
    directory): the changelog comes back shorter than what committed batches wrote, and
    no copy holds the rest. The restart stops with ChangelogLost; nothing is written."""
    import shutil

    import pytest

    from streamlib.errors import ChangelogLost

    url = f"kafka://{kafka_bootstrap}"
    suffix = uuid.uuid4().hex[:8]
    app_id, topic = f"lost-{suffix}", f"lines-{suffix}"
    backend = open_backend(url)
    backend.create_topic(topic, partitions=1)
    _produce(backend, topic, random_lines(100, 21))
    config = StreamsConfig(application_id=app_id, bootstrap=url, state_dir=str(tmp_path / "state"),
                           checkpoint_location=str(tmp_path / "checkpoint"), num_partitions=1)
    topology = wordcount_topology(source=topic, output=f"{topic}-counts")
    app = Streams(topology, config, spark=spark)
    app.process_available()
    app.stop()
    changelog = f"{app_id}-counts-changelog"
    described = backend.describe_topic(changelog)
    backend.delete_topic(changelog)
    backend.create_topic(changelog, described.partitions, {"cleanup.policy": "compact"})
    shutil.rmtree(tmp_path / "state")
    ends = backend.end_offsets(f"{topic}-counts")
    _produce(backend, topic, random_lines(20, 22))
    with pytest.raises(ChangelogLost, match=rf"store 'counts': changelog '{changelog}' partition 0 no longer "
                                            rf"holds offsets 0 to \d+"):
        Streams(topology, config, spark=spark).process_available()
    assert backend.end_offsets(f"{topic}-counts") == ends
