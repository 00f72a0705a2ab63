"""SIGINT/SIGTERM of a driver: the application stops cleanly (the running batch
commits or is abandoned, to run again at the next start), says so in one line on
stderr and exits 130/143; a restart continues exactly. Run as users run it: the
wordcount example under spark-submit, ``--follow``, interrupted like a terminal's
Ctrl-C (the whole process group, the JVM included), and a Python program under
SIGTERM."""
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
EXAMPLE = ROOT / "examples" / "wordcount" / "wordcount.py"
INPUT = ROOT / "examples" / "wordcount" / "data" / "input.txt"


def _submit(tmp_path, *args, **kwargs):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return subprocess.Popen([str(SPARK_SUBMIT), "--master", "local[2]", str(EXAMPLE),
                             "--state-dir", str(tmp_path / "state"), *args],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, **kwargs)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("signum", [signal.SIGINT])
def test_ctrl_c_of_spark_submit_stops_cleanly_and_the_restart_is_exact(tmp_path, signum):
    run = _submit(tmp_path, "--input", str(INPUT), "--follow", start_new_session=True)
    commits = tmp_path / "streamlib-data" / "_checkpoints" / "streams-wordcount" / "commits"
    deadline = time.monotonic() + 600
    while run.poll() is None and not (commits.is_dir() and any(commits.iterdir())):
        assert time.monotonic() < deadline, "no batch committed"
        time.sleep(0.2)
    assert run.poll() is None, run.communicate()[1][-3000:]
    os.killpg(run.pid, signum)           # a terminal's Ctrl-C reaches every process of the group
    out, err = run.communicate(timeout=300)
    assert run.returncode == 128 + signum, err[-3000:]
    # spark-submit's PythonRunner merges the driver's stderr into its stdout
    both = out + err
    assert "reentrant call" not in both and "Traceback" not in both, both[-3000:]
    stopped = [line for line in both.splitlines() if line.startswith("streamlib: stopped on")]
    assert stopped == [f"streamlib: stopped on {signal.Signals(signum).name}; the next start continues "
                       f"exactly from the last committed batch"]

    again = _submit(tmp_path, "--top", "1000")
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    words = Counter(w for line in INPUT.read_text(encoding="utf-8").splitlines()
                    for w in re.split(r"\W+", line.lower()) if w)
    printed = out.splitlines()[out.splitlines().index(f"top {min(1000, len(words))} words:") + 1:]
    assert {word: int(count) for count, word in (line.split() for line in printed if line.strip())} == \
        dict(words.most_common(1000))


_PROGRAM = """
import json, sys
from pathlib import Path
from engine import Workspace, wordcount_topology
from streamlib import Streams
from streamlib.spark.session import get_or_create_session

mode, root = sys.argv[1], Path(sys.argv[2])
spark = get_or_create_session("local[2]", "stop-signals", {"spark.ui.enabled": "false"})
spark.sparkContext.setLogLevel("ERROR")
app = Streams(wordcount_topology(), Workspace(root).config(max_records_per_batch=20), spark=spark)
if mode == "start":
    app.start()
    app.await_termination()
else:
    app.process_available()
    print(json.dumps(dict(app.store("counts").all())))
"""


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["start", "process_available"])
def test_sigterm_of_a_python_program_stops_cleanly_and_the_restart_is_exact(tmp_path, mode):
    import json

    from engine import Workspace, python_count
    from test_engine_spark import random_lines

    lines = random_lines(400, 11)
    Workspace(tmp_path).produce("lines", [(None, line) for line in lines], partitions=2)
    program = tmp_path / "program.py"
    program.write_text(_PROGRAM)
    run = subprocess.Popen([sys.executable, str(program), mode, str(tmp_path)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    commits = tmp_path / "log" / "_checkpoints" / "app" / "commits"
    deadline = time.monotonic() + 600
    while run.poll() is None and not (commits.is_dir() and any(commits.iterdir())):
        assert time.monotonic() < deadline, "no batch committed"
        time.sleep(0.1)
    assert run.poll() is None, run.communicate()[1][-3000:]
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 143, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert [line for line in err.splitlines() if line.startswith("streamlib: stopped on")] == \
        ["streamlib: stopped on SIGTERM; the next start continues exactly from the last committed batch"]
    again = subprocess.run([sys.executable, str(program), "process_available", str(tmp_path)],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout.strip().splitlines()[-1]) == dict(python_count(lines))
