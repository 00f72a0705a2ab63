"""One run of a fault-harness application: ``python runner.py WORKDIR TOPOLOGY [MASTER]``.

Processes everything available, then writes every store's content to
``WORKDIR/result.json`` and exits 0. The harness kills it (SIGKILL of its process
group) and starts it again until it gets that far. Each phase's end is appended to
``WORKDIR/phases.jsonl`` (``{"phase", "at"}``, epoch seconds), so the harness can say
where a restart's time goes: ``imports``, ``session`` (JVM up), ``app`` (topology
compiled, topics checked), ``done``; the first batch commit the harness sees itself.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from streamlib import Streams, StreamsConfig  # noqa: E402
from streamlib.spark.session import LOG4J_CONFIG, get_or_create_session  # noqa: E402
from spark_session import TEST_CONF  # noqa: E402
from topologies import REGISTRY  # noqa: E402

#: Spark settings of a fault run on top of the tests' own: no Kafka jars (the embedded
#: log needs none, and each jar is opened at every JVM start and task launch).
RUN_CONF = {**TEST_CONF, "spark.jars": ""}


#: Options for the driver JVM, from the harness (``-XX:`` flags: a C1-only JIT, a class
#: archive), on top of streamlib's own (its log configuration).
JAVA_OPTIONS_VARIABLE = "STREAMLIB_FAULT_JAVA_OPTIONS"


def java_options_conf() -> dict:
    extra = os.environ.get(JAVA_OPTIONS_VARIABLE, "").strip()
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG} {extra}"} if extra else {}


#: A file in the run directory naming a Kafka broker (``kafka://host:port``) to run on
#: instead of the embedded log (:mod:`kafka_faults`): then under ``exactly_once``, in
#: micro-batches of at most :data:`KAFKA_BATCH` records, checkpoint in the run directory.
BOOTSTRAP_FILE = "bootstrap"
KAFKA_BATCH = 40


def bootstrap_of(workdir: Path) -> str:
    """Where the run's topics live: the broker of :data:`BOOTSTRAP_FILE`, or the embedded log."""
    named = workdir / BOOTSTRAP_FILE
    return named.read_text().strip() if named.exists() else f"local://{workdir / 'log'}"


def config_for(workdir: Path, overrides: dict) -> StreamsConfig:
    bootstrap = bootstrap_of(workdir)
    base = StreamsConfig(application_id="faults", bootstrap=bootstrap, state_dir=str(workdir / "state"))
    if bootstrap.startswith("kafka://"):
        overrides = {"max_records_per_batch": KAFKA_BATCH, **overrides, "processing_guarantee": "exactly_once",
                     "checkpoint_location": str(workdir / "log" / "_checkpoints" / "faults")}
    return replace(base, **overrides)


def phase(workdir: Path, name: str) -> None:
    with open(workdir / "phases.jsonl", "a") as f:
        f.write(json.dumps({"phase": name, "at": time.time()}) + "\n")


def store_rows(view) -> list[list[str]]:
    """A store's entries as sorted ``[repr(key), repr(value)]`` (window and session
    stores: the key is the ``Windowed`` key)."""
    return sorted([repr(k), repr(v)] for k, v in view.all())


def wait_for_executors(spark, master: str, timeout: float = 180.0) -> None:
    """On ``local-cluster[n,...]``, wait until all n executors registered (else the
    first batch runs on whichever came first)."""
    if not master.startswith("local-cluster["):
        return
    wanted = int(master[len("local-cluster["):].split(",")[0])
    deadline = time.time() + timeout
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() <= wanted:
        if time.time() > deadline:
            raise RuntimeError(f"{wanted} executors did not register in {timeout:.0f} s")
        time.sleep(0.2)


def main(workdir: str, name: str, master: str = "local[2]") -> int:
    root = Path(workdir)
    phase(root, "imports")
    conf = dict(TEST_CONF if bootstrap_of(root).startswith("kafka://") else RUN_CONF,  # Kafka: its jars
                **({"spark.executor.memory": "1g"} if master.startswith("local-cluster") else {}),
                **java_options_conf())
    spark = get_or_create_session(master, "faults", conf)
    spark.sparkContext.setLogLevel("ERROR")
    wait_for_executors(spark, master)
    phase(root, "session")
    run_to_end(spark, root, name)
    return 0


def run_to_end(spark, root: Path, name: str) -> None:
    """Process everything available on ``spark``, then write every store's content to
    ``root/result.json``. The tests run their failure-free runs this way, in their own
    session (the JVM is up: no start to pay, and no faults are injected there)."""
    spec = REGISTRY[name]
    app = Streams(spec.build(), config_for(root, spec.config), spark=spark)
    phase(root, "app")
    app.process_available()
    stores = {store: store_rows(app.store(store)) for store in spec.stores}
    app.stop()
    (root / "result.json").write_text(json.dumps(stores))
    phase(root, "done")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
