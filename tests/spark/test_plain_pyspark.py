"""A plain PySpark application, in the environment where streamlib is installed but
never importing it, runs exactly as without streamlib (issue 35, item 6): its Python
workers keep Spark's ``sys.path`` and load no module of streamlib's (nothing preloaded
into Spark's daemon, which they are forked from), and nothing names streamlib's session."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PLAIN_APP = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("plain")
             .config("spark.ui.enabled", "false").getOrCreate())

    def inside(_):
        import os, sys
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:
            parent = cmdline.read().split(b"\\0")
        yield json.dumps({
            "archives": [os.path.basename(p) for p in sys.path if p.endswith((".zip", ".jar"))],
            "modules": sorted(m for m in sys.modules if m.split(".")[0] in (
                "streamlib", "_streamlib_spark_path", "pandas", "rocksdict", "confluent_kafka", "fastavro")),
            "variables": sorted(k for k in os.environ if k.startswith("STREAMLIB")),
            "parent": [part.decode() for part in parent if part],
        })

    found = spark.sparkContext.parallelize([0], 1).mapPartitions(inside).collect()
    print("FOUND", found[0])
    print("DRIVER", json.dumps(sorted(m for m in sys.modules if m.startswith(("streamlib", "_streamlib")))))
    spark.stop()
""")


def test_a_plain_pyspark_application_is_left_alone(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIB")}
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_APP)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("FOUND", "DRIVER")))
    found, driver = json.loads(lines["FOUND"]), json.loads(lines["DRIVER"])
    assert driver == []
    assert found["parent"][1:] == ["-m", "pyspark.daemon", "pyspark.worker"], found["parent"]
    # Spark's own path, its archives on it as Spark put them there
    archives = found["archives"]
    assert archives[0] == "pyspark.zip" and archives[1].startswith("py4j-"), archives
    assert any(name.startswith("spark-core_") for name in archives), archives
    assert found["modules"] == [] and found["variables"] == [], found
