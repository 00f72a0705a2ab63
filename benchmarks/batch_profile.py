"""Where one micro-batch's time goes: the side-by-side wordcount, stage by stage.

Runs the engines of ``wc_side_by_side.py`` one after the other in one Spark session,
each over the whole input in one micro-batch, and prints for every run: the wall time,
when its job started after the query's start, and each stage of the job (its span, task
count, records in and shuffled, and every task's start and duration), from Spark's REST
API. Engines: ``files`` (Spark's text-file query), ``src`` (the same query on streamlib's
data source), ``py`` and ``col`` (streamlib, the split as Python functions or as Column
steps). Name one twice to see a warm run: the first run of each plan in a session pays
code generation and JIT warm-up.

    .venv/bin/python benchmarks/batch_profile.py [--engines files,files,py,py,col,col] [--words 2000000]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

from common import ROCKSDB_PROVIDER  # noqa: E402
from streamlib import StreamsConfig  # noqa: E402
from streamlib.spark.session import register_data_sources  # noqa: E402
from wc_side_by_side import (PARTITIONS, TOPIC, make_lines, run_streamlib, spark_count,  # noqa: E402
                             spark_words, topology, write_input)


class Rest:
    """The few calls of Spark's monitoring REST API this needs."""

    def __init__(self, spark: SparkSession):
        context = spark.sparkContext
        self.base = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}"

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.base}/{path}") as response:
            return json.load(response)

    def job_ids(self) -> set[int]:
        return {job["jobId"] for job in self.get("jobs")}


def seconds(stamp: str) -> float:
    moment = datetime.datetime.strptime(stamp.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def report(rest: Rest, engine: str, started: float, elapsed: float, before: set[int]) -> None:
    jobs = sorted((job for job in rest.get("jobs") if job["jobId"] not in before), key=lambda job: job["jobId"])
    print(f"{engine:<6}{elapsed:6.2f} s", flush=True)
    for job in jobs:
        begin, end = seconds(job["submissionTime"]), seconds(job["completionTime"])
        print(f"  job {job['jobId']}: +{begin - started:.2f} .. +{end - started:.2f} s")
        for stage_id in sorted(job["stageIds"]):
            for stage in rest.get(f"stages/{stage_id}"):
                if stage["status"] != "COMPLETE":
                    continue   # (skipped: its shuffle output was reused)
                first = seconds(stage["submissionTime"])
                tasks = rest.get(f"stages/{stage_id}/{stage['attemptId']}/taskList?length=1000")
                spans = " ".join(f"{seconds(task['launchTime']) - first:.2f}+{task['duration'] / 1000:.2f}"
                                 for task in sorted(tasks, key=lambda task: task["launchTime"]))
                print(f"    stage {stage_id}: +{first - started:.2f} .. +{seconds(stage['completionTime']) - started:.2f}"
                      f" s, {len(tasks)} tasks, {stage['inputRecords']} in, {stage['shuffleWriteRecords']} shuffled;"
                      f" tasks (start+seconds): {spans}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--engines", default="files,files,src,src,py,py,col,col")
    p.add_argument("--words", type=int, default=2_000_000)
    a = p.parse_args()
    engines = a.engines.split(",")
    unknown = set(engines) - {"files", "src", "py", "col"}
    if unknown:
        p.error(f"unknown engines {sorted(unknown)}")
    work = tempfile.mkdtemp(prefix="batch-profile-")
    bootstrap, files = write_input(work, make_lines(a.words), 1)
    spark = (SparkSession.builder.master("local[2]").appName("batch-profile")
             .config("spark.sql.shuffle.partitions", str(PARTITIONS)).config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register_data_sources(spark)
    rest = Rest(spark)
    for n, engine in enumerate(engines):
        before = rest.job_ids()
        if engine in ("py", "col"):
            config = StreamsConfig(application_id=f"profile{n}", bootstrap=bootstrap, state_dir=f"{work}/state{n}",
                                   checkpoint_location=f"{work}/checkpoint{n}")
            started, elapsed = run_streamlib(spark, topology(engine == "col"), config, a.words)
        else:
            reader = spark.readStream.format("text").load(files) if engine == "files" else \
                spark.readStream.format("streamlib").option("bootstrap", bootstrap).option("topics", TOPIC).load()
            started = time.time()
            query = spark_count(spark_words(reader), f"{work}/checkpoint{n}").trigger(availableNow=True).start()
            query.awaitTermination()
            elapsed = time.time() - started
        time.sleep(0.5)   # the status store takes the job's end a moment later
        report(rest, engine, started, elapsed, before)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
