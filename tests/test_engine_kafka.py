"""The engine on the Kafka backend: wordcount through Spark against a real broker."""
from __future__ import annotations

import uuid

from streamlib import Serdes, Streams, StreamsConfig
from streamlib.topics import open_backend
from engine import latest_per_key, python_count, wordcount_topology
from test_engine_spark import random_lines


def test_wordcount_on_kafka_counts_like_python_and_writes_the_output_topic(spark, kafka_bootstrap, tmp_path):
    url = f"kafka://{kafka_bootstrap}"
    app_id = f"wc-{uuid.uuid4().hex[:8]}"  # the broker lives for the whole test session
    backend = open_backend(url)
    backend.create_topic("lines", partitions=2, exist_ok=True)
    lines = random_lines(400, 11)
    for line in lines:
        backend.produce("lines", value=line.encode())
    backend.flush()
    config = StreamsConfig(application_id=app_id, bootstrap=url, state_dir=str(tmp_path / "state"),
                           checkpoint_location=str(tmp_path / "checkpoint"))
    app = Streams(wordcount_topology(), config, spark=spark)
    app.process_available()
    expected = dict(python_count(lines))
    assert dict(app.store("counts").all()) == expected
    app.stop()
    output = [(Serdes.string().deserialize(r.key), Serdes.long().deserialize(r.value), r.timestamp)
              for p, end in sorted(backend.end_offsets("counts-out").items())
              for r in backend.read("counts-out", p, 0, end)]
    assert latest_per_key(output) == expected
    assert f"{app_id}-counts-changelog" in backend.list_topics()
