"""CLI and example bugs found while probing reliability (issue 11, item 9): each runs
as a user would, in a fresh process where no Spark session exists yet."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streamlib.cli import main as cli_main
from streamlib.topics import open_backend

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("partition", ["9", "-1"])
def test_consume_from_a_partition_the_topic_lacks_is_a_one_line_error(tmp_path, capsys, partition):
    url = f"local://{tmp_path / 'log'}"
    open_backend(url).create_topic("t", partitions=2)
    assert cli_main(["consume", "--topic", "t", "--bootstrap", url, "--from-beginning",
                     "--partition", partition]) == 1
    err = capsys.readouterr().err
    assert err == f"streamlib: error: topic 't' has no partition {partition}: it has 2 (0..1)\n"


def test_wordcount_with_columns_runs_from_a_fresh_process(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples/wordcount/wordcount.py"), "--columns", "--top", "3",
         "--input", str(ROOT / "examples/wordcount/data/input.txt"),
         "--bootstrap", f"local://{tmp_path / 'log'}", "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "top 3 words:" in done.stdout
    assert len(re.findall(r"^\s+\d+\s+\w+$", done.stdout, re.MULTILINE)) == 3


def test_describe_an_app_file_with_module_level_column_steps(tmp_path):
    app = tmp_path / "column_app.py"
    app.write_text(textwrap.dedent("""
        from pyspark.sql import functions as F
        from streamlib import StreamsBuilder
        builder = StreamsBuilder()
        builder.stream("in").filter(F.col("value") != "").to("out")
    """))
    done = subprocess.run([sys.executable, "-m", "streamlib", "describe", str(app)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Source:" in done.stdout and "Sink:" in done.stdout


def _readme_tour() -> str:
    text = (ROOT / "README.md").read_text()
    tour = text.split("## A short tour", 1)[1]
    return tour.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_tour_runs_as_written_on_a_fresh_log(tmp_path):
    script = _readme_tour() + '\nprint("hello =", app.store("counts").get("hello"))\n'
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hello = 2" in done.stdout


def test_make_wordcount_keeps_its_output_where_the_readme_consume_finds_it():
    dry = subprocess.run(["make", "-n", "wordcount"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert dry.returncode == 0, dry.stderr
    recipe = dry.stdout.replace("\\\n", " ").splitlines()
    submit = [line for line in recipe if "spark-submit" in line]
    assert submit and not any(line.startswith("rm ") or line.startswith("cd ") for line in recipe)
    assert "examples/wordcount/wordcount.py" in submit[0] and "--bootstrap" not in submit[0]
    session = (ROOT / "docs" / "examples.md").read_text()   # the README links it
    assert "python -m streamlib consume --topic streams-wordcount-output" in session
