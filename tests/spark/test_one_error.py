"""One bad record gives one error, once: streamlib's exception with a one-line cause
(node, topic/partition/offset, the user's frame), and nothing else on stderr, for an
application run as a user runs it (its own process, a Spark session streamlib creates)."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BAD_APP = textwrap.dedent('''
    from streamlib import Streams, StreamsBuilder, StreamsConfig
    from streamlib.topics import open_backend

    def parse(value):
        return int(value)

    with open_backend("local://{root}/data") as topics:
        topics.create_topic("numbers", partitions=1, exist_ok=True)
        topics.produce("numbers", value=b"1")
        topics.produce("numbers", value=b"not a number")
    builder = StreamsBuilder()
    builder.stream("numbers").map_values(lambda v: str(parse(v))).to("parsed")
    config = StreamsConfig(application_id="one-error", bootstrap="local://{root}/data",
                           state_dir="{root}/state")
    Streams(builder.build(), config).process_available()
''')


def test_one_bad_record_prints_one_short_error(tmp_path):
    app = tmp_path / "bad_app.py"
    app.write_text(BAD_APP.format(root=tmp_path))
    done = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 15, done.stderr
    last = [line for line in lines if "ProcessingError" in line]
    assert len(last) == 1, done.stderr
    assert "ValueError: invalid literal for int()" in last[0]
    assert "raised at bad_app.py:6 in parse" in last[0]
    assert "topic 'numbers' partition 0 offset 1" in last[0], last[0]
    assert done.stdout == ""
