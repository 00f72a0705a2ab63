"""The command line: round trips as a user runs it (``python -m streamlib`` in a
subprocess), the rest in-process through :func:`streamlib.cli.main` to stay fast."""
import io
import os
import subprocess
import sys
import uuid

import pytest

from kafka_broker import TANSU_PRODUCER_CONFIG
from streamlib.cli import main

TANSU_ARGS = [a for k, v in TANSU_PRODUCER_CONFIG.items() for a in ("--producer-config", f"{k}={str(v).lower()}")]


def streamlib(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "streamlib", *args], input=stdin, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))})


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["local", "kafka"])
def bootstrap(request, tmp_path):
    if request.param == "local":
        return [f"--bootstrap=local://{tmp_path}"]
    return [f"--bootstrap=kafka://{request.getfixturevalue('kafka_bootstrap')}", *TANSU_ARGS]


def test_round_trip_produce_consume(bootstrap, capsys):
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    assert run(capsys, "topics", "create", topic, "--partitions", "2", "--config", "cleanup.policy=compact",
               *bootstrap)[0] == 0
    assert topic in run(capsys, "topics", "list", *bootstrap)[1].split()
    produced = streamlib("produce", "--topic", topic, "--key-separator", ":", "--value-serde", "long",
                         *bootstrap, stdin="hello:1\nworld:2\nhello:3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = streamlib("consume", "--topic", topic, "--from-beginning", "--print-key", "--value-serde", "long",
                         "--timeout", "0.5", *bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    lines = consumed.stdout.splitlines()
    assert sorted(lines) == ["hello\t1", "hello\t3", "world\t2"]
    assert lines.index("hello\t1") < lines.index("hello\t3")  # same key, same partition, in order
    code, out, _ = run(capsys, "consume", "--topic", topic, "--from-beginning", "--max", "1",
                       "--value-serde", "long", *bootstrap)
    assert code == 0 and len(out.splitlines()) == 1 and out.strip() in {"1", "2", "3"}
    code, out, _ = run(capsys, "topics", "describe", topic, *bootstrap)
    assert f"topic {topic}\tpartitions 2" in out and sum(int(line.rsplit()[-1]) for line in out.splitlines()[1:]) == 3
    assert run(capsys, "topics", "delete", topic, *bootstrap)[0] == 0
    assert topic not in run(capsys, "topics", "list", *bootstrap)[1].split()


def _assert_one_line_error(code, out, err, fragment):
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("streamlib: error: ") and fragment in err


def test_errors_from_the_command_line_are_one_line(tmp_path):
    for args, fragment in [
        (["topics", "list", "--bootstrap", "nope://x"], "bad bootstrap URL"),
        (["consume", "--topic", "no-such-topic", f"--bootstrap=local://{tmp_path}"], "unknown topic"),
        (["topics", "list", "--bootstrap", "kafka://127.0.0.1:1?timeout=1"], "127.0.0.1:1"),
    ]:
        result = streamlib(*args)
        _assert_one_line_error(result.returncode, result.stdout, result.stderr, fragment)


def test_unknown_topic_is_one_line_error(bootstrap, capsys):
    _assert_one_line_error(*run(capsys, "consume", "--topic", "no-such-topic", *bootstrap), "unknown topic")
    _assert_one_line_error(*run(capsys, "produce", "--topic", "no-such-topic", *bootstrap), "unknown topic")


def test_usage_errors_exit_2_and_bad_input_exits_1(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as usage:
        main(["topics", "create"])
    assert usage.value.code == 2
    url = f"--bootstrap=local://{tmp_path}"
    assert run(capsys, "topics", "create", "n", url)[0] == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("ten\n"))
    _assert_one_line_error(*run(capsys, "produce", "--topic", "n", "--value-serde", "long", url),
                           "cannot read 'ten' as long()")
