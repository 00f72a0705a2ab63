"""An example run as its docstring says (spark-submit, default settings, from another
directory, PYSPARK_PYTHON naming the interpreter) prints its results and at most 20
other lines."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def test_wordcount_through_spark_submit_prints_its_results_and_few_other_lines(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    done = subprocess.run([str(SPARK_SUBMIT), str(ROOT / "examples" / "wordcount" / "wordcount.py"),
                           "--input", str(ROOT / "examples" / "wordcount" / "data" / "input.txt")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.splitlines()
    top = out.index("top 10 words:")
    results = out[top + 1:top + 11]
    assert len(results) == 10 and all(line.split()[0].isdigit() for line in results), done.stdout
    other = out[:top] + out[top + 11:] + done.stderr.splitlines()
    assert len(other) <= 20, "\n".join(other)
