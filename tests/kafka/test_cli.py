"""The command line: round trips as a user runs it (``python -m streamlib`` in a
subprocess), the rest in-process through :func:`streamlib.cli.main` to stay fast."""
import io
import os
import subprocess
import sys
import uuid

import pytest

from engine import Workspace, latest_per_key, python_count, wordcount_topology
from streamlib import Serdes
from streamlib.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def streamlib(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "streamlib", *args], input=stdin, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT})


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["local", "kafka"])
def bootstrap(request, tmp_path):
    if request.param == "local":
        return [f"--bootstrap=local://{tmp_path}"]
    return [f"--bootstrap=kafka://{request.getfixturevalue('kafka_bootstrap')}"]


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


# ---- describe ------------------------------------------------------------------

APP_WITH_MAIN = '''
from streamlib import Materialized, StreamsBuilder

builder = StreamsBuilder()
builder.stream("in").group_by_key().count(materialized=Materialized.as_("per-key")).to_stream().to("out")

if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run")
'''


def test_describe_prints_the_topology_of_an_example_and_of_a_module_level_builder(tmp_path):
    result = streamlib("describe", os.path.join(ROOT, "examples", "wordcount", "wordcount.py"),
                       "--application-id", "wc")
    assert result.returncode == 0, result.stderr
    assert "Sub-topology: 1" in result.stdout
    assert "Changelog: wc-counts-changelog (store: counts)" in result.stdout
    app = tmp_path / "app.py"
    app.write_text(APP_WITH_MAIN)
    result = streamlib("describe", str(app))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Topologies:\n") and "(stores: [per-key])" in result.stdout
    two = tmp_path / "two.py"
    two.write_text(APP_WITH_MAIN.replace("if __name__", "first = builder.build()\n"
                                         "second = builder.build()\nif __name__"))
    result = streamlib("describe", str(two))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# first\nTopologies:\n") and "\n# second\nTopologies:\n" in result.stdout


TOUR_LIKE = '''
from streamlib import Materialized, Streams, StreamsBuilder, StreamsConfig
from streamlib.topics import open_backend

builder = StreamsBuilder()
builder.stream("in").group_by_key().count(materialized=Materialized.as_("per-key")).to_stream().to("out")
topology = builder.build()
print("building done")
with open_backend("local://{root}") as topics:
    topics.create_topic("in", exist_ok=True)
app = Streams(topology, StreamsConfig(application_id="tour-app", bootstrap="local://{root}"))
app.process_available()
'''

MAIN_AT_MODULE_LEVEL = '''
from streamlib import Materialized, Streams, StreamsBuilder, StreamsConfig

APP_ID = "from-a-constant"

def build_topology():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(materialized=Materialized.as_("per-key")).to_stream().to("out")
    return builder.build()

def run():
    Streams(build_topology(), StreamsConfig(application_id=APP_ID)).process_available()

run()
'''


def test_describe_runs_no_application_code_and_names_topics_with_the_files_application_id(tmp_path):
    data = tmp_path / "data"
    tour = tmp_path / "tour.py"
    tour.write_text(TOUR_LIKE.format(root=data))
    result = streamlib("describe", str(tour))
    assert result.returncode == 0, result.stderr
    assert not data.exists(), "describe ran the file's application code (it opened the topics)"
    assert "Changelog: tour-app-per-key-changelog (store: per-key)" in result.stdout
    assert "<application_id>" not in result.stdout and "building done" not in result.stdout
    result = streamlib("describe", str(tour), "--application-id", "other")
    assert "Changelog: other-per-key-changelog" in result.stdout
    # a function at module level that starts the application is stopped by the guard
    main_call = tmp_path / "main_call.py"
    main_call.write_text(MAIN_AT_MODULE_LEVEL.replace("\nrun()", "\nprint('side effect')\nrun()"))
    result = streamlib("describe", str(main_call))
    assert result.returncode == 0, result.stderr
    assert "Changelog: from-a-constant-per-key-changelog" in result.stdout
    assert "side effect" in result.stderr and "side effect" not in result.stdout


def test_describe_shows_the_wordcount_examples_own_application_id():
    result = streamlib("describe", os.path.join(ROOT, "examples", "wordcount", "wordcount.py"))
    assert result.returncode == 0, result.stderr
    assert "Changelog: streams-wordcount-counts-changelog (store: counts)" in result.stdout


def test_describe_errors_are_one_line(tmp_path):
    empty, broken, bad_function = tmp_path / "empty.py", tmp_path / "broken.py", tmp_path / "bad.py"
    empty.write_text("X = 1\n")
    broken.write_text("import no_such_module_here\n")
    bad_function.write_text("def build_topology():\n    return 42\n")
    for args, fragment in [
        ([str(tmp_path / "missing.py")], "no such file"),
        ([str(empty)], "defines no Topology or StreamsBuilder"),
        ([str(broken)], "ModuleNotFoundError"),
        ([str(bad_function)], "build_topology() returned int"),
    ]:
        result = streamlib("describe", *args)
        _assert_one_line_error(result.returncode, result.stdout, result.stderr, fragment)


# ---- reset ---------------------------------------------------------------------

def test_reset_deletes_internal_topics_checkpoint_and_state_so_the_next_run_starts_over(spark, tmp_path, capsys):
    workspace = Workspace(tmp_path)
    lines = ["a b a", "b c"]
    workspace.produce("lines", [(None, line) for line in lines])
    workspace.run(spark, wordcount_topology()).stop()
    for topic in ("app-dlq", "app-by-x-repartition", "other-app-counts-changelog"):
        workspace.backend.create_topic(topic)
    url = f"--bootstrap={workspace.bootstrap}"

    result = streamlib("reset", "--application-id", "app", url, "--state-dir", workspace.state_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "deleted topic app-by-x-repartition", "deleted topic app-counts-changelog",
        "deleted topic app-subtopology-1-task-changelog",
        f"deleted checkpoint {workspace.config().resolved_checkpoint_location()}",
        f"deleted local state {workspace.config().application_state_dir}"]
    assert set(workspace.backend.list_topics()) >= {"lines", "counts-out", "app-dlq", "other-app-counts-changelog"}

    app = workspace.run(spark, wordcount_topology())
    expected = dict(python_count(lines))
    assert dict(app.store("counts").all()) == expected  # counted once more from offset 0, from empty state
    assert app.metrics()["restored_records"] == 0
    app.stop()
    output = workspace.read("counts-out", value_serde=Serdes.long())
    assert latest_per_key(output) == expected and len(output) == 2 * len(expected)  # both runs wrote

    code, out, _ = run(capsys, "reset", "--application-id", "app", url, "--state-dir", workspace.state_dir,
                       "--include-dlq")
    assert code == 0 and "deleted topic app-dlq" in out.splitlines()
    assert "app-dlq" not in workspace.backend.list_topics()
