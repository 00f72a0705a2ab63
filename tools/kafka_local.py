"""Fetch the Java jars with Maven and run a local Apache Kafka broker from them.

``python tools/kafka_local.py fetch`` copies Apache Kafka's broker jars and Spark's
Kafka source (versions pinned in ``streamlib/versions.env``) into the cache
(``.cache/`` in the checkout); it does nothing when they are already there.
``up [--port 9092]`` formats (once) and starts a single-node KRaft broker
(combined broker and controller) bound to 127.0.0.1, data and log under
``.cache/kafka/<version>/run-<port>/``; ``down [--port 9092]`` stops it.
``up`` fails when something else already listens on the port, and counts the broker
as started only when its own process is alive and answers with its own cluster id
(never whatever else answers there); ``down`` stops only the broker ``up`` started.
Tests use :func:`running_broker` (a free port, a temporary directory).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from streamlib import jvm  # noqa: E402  (the checkout's streamlib, not an installed one)

BROKER_HEAP = "-Xmx512m"


def maven(args: list[str], pom: Path) -> None:
    """Run Maven quietly on ``pom``; offline first when the local repository may have
    everything, so a machine that fetched once needs no network."""
    if shutil.which("mvn") is None:
        raise SystemExit("streamlib needs Maven (`mvn`) to fetch Java jars: apt-get install maven")
    base = ["mvn", "-q", "-B", "-f", str(pom), *args]
    if subprocess.run([*base, "-o"], capture_output=True).returncode == 0:
        return
    done = subprocess.run(base, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"maven failed on {pom}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")


def _copy_dependencies(pom: Path, target: Path, properties: dict[str, str]) -> Path:
    if jvm.fetched_jars(target) is not None:
        return target
    shutil.rmtree(target, ignore_errors=True)
    props = [f"-D{k}={v}" for k, v in properties.items()]
    maven(["dependency:copy-dependencies", f"-DoutputDirectory={target}", *props], pom)
    (target / jvm.COMPLETE_MARKER).touch()
    return target


def fetch_broker() -> Path:
    """Apache Kafka's broker jars in the cache (fetched once)."""
    pins = jvm.versions()
    return _copy_dependencies(ROOT / "tools" / "kafka" / "pom.xml", jvm.kafka_libs_dir(),
                              {"kafka.version": pins["KAFKA_VERSION"],
                               "scala.binary.version": pins["SCALA_BINARY_VERSION"]})


def fetch_spark_kafka() -> Path:
    """Spark's Kafka source and its extra dependencies in the cache (fetched once)."""
    pins = jvm.versions()
    return _copy_dependencies(ROOT / "tools" / "spark-kafka" / "pom.xml", jvm.spark_kafka_jars_dir(),
                              {"spark.kafka.version": jvm.spark_kafka_version(),
                               "scala.binary.version": pins["SCALA_BINARY_VERSION"]})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    """A single-node KRaft configuration on loopback, replication factors of 1."""
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        f"log.dirs={data_dir}",
        "num.partitions=1",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=4",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        # Keep records whatever their timestamps: tests use small epoch-ms timestamps,
        # which time-based retention would delete at its next check.
        "log.retention.ms=-1",
        "",
    ])


def _java(libs: Path, main: str, *args: str) -> list[str]:
    return ["java", BROKER_HEAP, "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp", f"{libs}/*", main, *args]


class PortTaken(RuntimeError):
    """The broker's port is already held by another process."""


def check_port_free(port: int) -> None:
    """Refuse a port something already listens on: a second broker there would die with
    a BindException while the first one answered our readiness check."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed broker's TIME_WAIT is fine
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise PortTaken(f"127.0.0.1:{port} is already in use by another process ({e.strerror}); "
                            f"stop it or choose another port (--port)") from None


def cluster_id_of(data_dir: Path) -> str:
    """The cluster id ``StorageTool format`` wrote into ``data_dir``."""
    for line in (data_dir / "meta.properties").read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError(f"no cluster.id in {data_dir / 'meta.properties'}")


def _wait_until_serving(port: int, proc: subprocess.Popen, log: Path, cluster_id: str,
                        timeout: float = 60.0) -> None:
    """Return once ``proc`` is alive and the port answers with ``cluster_id``: an answer
    from another broker on the same port is not ours being ready."""
    import logging

    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("kafka_local.wait")  # "connection refused" until it listens
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "socket.timeout.ms": 2000,
                         "logger": quiet})
    deadline = time.monotonic() + timeout
    answered = None
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the Kafka broker exited with code {proc.returncode}; "
                               f"its log {log}:\n{log.read_text()[-3000:]}")
        try:
            answered = admin.list_topics(timeout=2).cluster_id
        except Exception:
            answered = None
        if answered == cluster_id and proc.poll() is None:
            return
        if time.monotonic() > deadline:
            other = f" (a broker with cluster id {answered} answered there)" if answered else ""
            raise RuntimeError(f"the Kafka broker on 127.0.0.1:{port} did not answer with its "
                               f"cluster id {cluster_id} in {timeout} s{other}; see {log}")
        time.sleep(0.2)


def start_broker(port: int, run_dir: Path) -> subprocess.Popen:
    """Format ``run_dir`` (first time only) and start a broker on ``port``; return
    once it answers metadata requests with its own cluster id. Raises
    :class:`PortTaken` when ``port`` is already held. The process runs in its own
    session so a terminal's Ctrl-C does not reach it."""
    check_port_free(port)
    libs = fetch_broker()
    run_dir.mkdir(parents=True, exist_ok=True)
    data = run_dir / "data"
    props = run_dir / "server.properties"
    props.write_text(server_properties(port, free_port(), data))
    log = run_dir / "broker.log"
    if not (data / "meta.properties").exists():
        cluster_id = uuid.uuid4().hex[:22]  # KRaft wants 22 characters (a base64 UUID's length)
        done = subprocess.run(_java(libs, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                                    "-c", str(props)), capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"formatting {data} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with open(log, "ab") as out:
        proc = subprocess.Popen(_java(libs, "kafka.Kafka", str(props)), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_serving(port, proc, log, cluster_id_of(data))
    except BaseException:
        stop_process(proc.pid)
        raise
    (run_dir / "broker.pid").write_text(str(proc.pid))
    return proc


def stop_process(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM (a clean broker shutdown), then SIGKILL after ``timeout`` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                return
        except ChildProcessError:  # not our child: poll for its existence
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def running_broker(port: Optional[int] = None) -> Iterator[str]:
    """A broker on a free loopback port with its data in a temporary directory; yield
    ``host:port`` and stop it (and delete its data) afterwards."""
    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="streamlib-kafka-") as run_dir:
        proc = start_broker(port, Path(run_dir))
        try:
            yield f"127.0.0.1:{port}"
        finally:
            stop_process(proc.pid)


def run_dir_for(port: int) -> Path:
    return jvm.kafka_libs_dir().parent / f"run-{port}"


def our_broker_pid(run_dir: Path) -> Optional[int]:
    """The pid in ``run_dir/broker.pid`` if that process is alive and is the broker
    started with ``run_dir``'s configuration (a recycled pid is someone else's)."""
    pid_file = run_dir / "broker.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text())
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return None
    if b"kafka.Kafka" in cmdline and str(run_dir / "server.properties").encode() in cmdline:
        return pid
    return None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch the broker's and Spark's Kafka source's jars")
    for name in ("up", "down"):
        sub.add_parser(name).add_argument("--port", type=int, default=9092)
    args = parser.parse_args(argv)
    if args.command == "fetch":
        fetch_broker()
        fetch_spark_kafka()
        return 0
    run_dir = run_dir_for(args.port)
    pid_file = run_dir / "broker.pid"
    pid = our_broker_pid(run_dir)
    if pid is None and pid_file.exists():
        pid_file.unlink()  # a broker that died, or a pid now used by another process
    if args.command == "down":
        if pid is None:
            print(f"no broker started by `kafka_local.py up` runs on 127.0.0.1:{args.port}: "
                  f"nothing stopped", file=sys.stderr)
            return 1
        stop_process(pid)
        pid_file.unlink()
        print(f"stopped the Kafka broker on 127.0.0.1:{args.port} (pid {pid})")
        return 0
    if pid is not None:
        print(f"a Kafka broker started by `kafka_local.py up` already runs on 127.0.0.1:{args.port} "
              f"(pid {pid})")
        return 0
    try:
        start_broker(args.port, run_dir)
    except PortTaken as e:
        print(f"cannot start the Kafka broker: {e}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {jvm.versions()['KAFKA_VERSION']} on 127.0.0.1:{args.port} "
          f"(data and log in {run_dir}); stop it with `make kafka-down`")
    return 0

if __name__ == "__main__":
    sys.exit(main())
