"""Mistakes in the config and missing input topics fail before Spark starts, in one line."""
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from streamlib import StreamsBuilder, StreamsConfig
from streamlib.errors import ConfigurationError
from streamlib.preflight import check_before_spark
from streamlib.topics import TopicsError, open_backend
from streamlib.topology import TopologyError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _topology():
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    return builder.build()


def _config(tmp_path, **overrides):
    return StreamsConfig(**{"application_id": "pre", "bootstrap": f"local://{tmp_path}/data",
                            "state_dir": str(tmp_path / "state"), **overrides})


def test_a_malformed_bootstrap_url_fails(tmp_path):
    for url in ("kafak://host:9092", "kafka://host-without-port", "local://"):
        with pytest.raises(TopicsError, match="bad bootstrap URL"):
            check_before_spark(_topology(), _config(tmp_path, bootstrap=url))


def test_a_state_dir_that_cannot_be_written_fails(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigurationError, match="state_dir .* cannot be created"):
        check_before_spark(_topology(), _config(tmp_path, state_dir=str(blocker / "state")), topics=False)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        with pytest.raises(ConfigurationError, match="not a writable directory"):
            check_before_spark(_topology(), _config(tmp_path, state_dir=str(locked)), topics=False)


def test_a_remote_checkpoint_location_is_left_to_spark(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_before_spark(_topology(), _config(tmp_path, checkpoint_location="s3a://bucket/cp"), topics=False)
    assert not (tmp_path / "s3a:").exists()


def test_a_missing_input_topic_fails_and_an_existing_one_passes(tmp_path):
    config = _config(tmp_path)
    with pytest.raises(TopologyError, match="source topic 'in' does not exist"):
        check_before_spark(_topology(), config)
    with open_backend(config.bootstrap) as backend:
        backend.create_topic("in", partitions=2)
    check_before_spark(_topology(), config)


def test_streams_reports_a_missing_topic_before_starting_spark(tmp_path):
    script = textwrap.dedent(f'''
        import sys
        from streamlib import Streams, StreamsBuilder, StreamsConfig
        builder = StreamsBuilder()
        builder.stream("no-such-topic").to("out")
        try:
            Streams(builder.build(), StreamsConfig(bootstrap="local://{tmp_path}/data",
                                                   state_dir="{tmp_path}/state"))
        except Exception as exc:
            print(type(exc).__name__, exc)
        print("spark started" if "pyspark.sql.session" in sys.modules and
              __import__("pyspark").sql.SparkSession.getActiveSession() else "no spark")
    ''')
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert "TopologyError source topic 'no-such-topic' does not exist" in done.stdout
    assert "no spark" in done.stdout
    assert time.monotonic() - started < 30  # no JVM: an interpreter and an import
