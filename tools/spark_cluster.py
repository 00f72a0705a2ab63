"""A Spark standalone cluster on this machine: a master and N workers from the venv's PySpark.

``python tools/spark_cluster.py up [--workers 2] [--cores 1] [--memory 1g] [--dir DIR]``
starts a master and the workers on free ports of 127.0.0.1, each worker with its own work
directory (``SPARK_WORKER_DIR``) and its own streamlib state directory
(``STREAMLIB_STATE_DIR``, which the worker's executors inherit), as separate machines would
have; it returns once every worker has registered and prints the master's URL
(also in ``DIR/master-url``). ``status`` prints the URL and the live workers; ``down``
stops only the processes ``up`` started (their pid files, each checked to still be that
Spark process). Default ``DIR``: ``.cache/spark-cluster`` in the checkout.
Tests use :func:`running_cluster` (a temporary directory).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / ".cache" / "spark-cluster"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: the environment variable naming a worker's streamlib state directory
STATE_DIR_VARIABLE = "STREAMLIB_STATE_DIR"


@dataclass(frozen=True)
class Cluster:
    """A running cluster: its master's URL, web UI and directory."""

    master_url: str
    web_ui: str
    directory: Path

    def worker_dir(self, i: int) -> Path:
        return self.directory / f"worker-{i}"

    def alive_workers(self) -> list[dict]:
        """The master's view of its live workers (its web UI's JSON)."""
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=10) as answer:
            state = json.load(answer)
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports of 127.0.0.1 (all held open while choosing, so no two are equal)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _log_tails(directory: Path, lines: int = 15) -> str:
    """The last lines of each process's log, for an error that says why it did not come up."""
    tails = []
    for log in sorted(directory.glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n".join(tails)


def spark_class() -> str:
    """The venv's ``spark-class`` (next to this interpreter)."""
    found = Path(sys.executable).parent / "spark-class"
    if not found.exists():
        raise SystemExit(f"no spark-class next to {sys.executable}: run this with the venv's python")
    return str(found)


def _start(directory: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    # spark-class finds SPARK_HOME (and executors their Python) through PYSPARK_PYTHON, else
    # through whatever `python3` is on PATH, which may not have this venv's PySpark
    env = {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable), **env}
    with open(directory / f"{name}.log", "ab") as log:
        process = subprocess.Popen([spark_class(), *args], stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env={**os.environ, **env}, start_new_session=True)
    (directory / f"{name}.pid").write_text(str(process.pid))
    return process


def up(directory: Path = DEFAULT_DIR, workers: int = 2, cores: int = 1, memory: str = "1g",
       timeout: float = 180) -> Cluster:
    """Start a master and ``workers`` workers; return once all of them registered."""
    directory = Path(directory).resolve()
    if any(_alive_pids(directory)):
        raise SystemExit(f"a cluster started from {directory} still runs: `down` first")
    directory.mkdir(parents=True, exist_ok=True)
    port, ui_port, *worker_ports = free_ports(2 + 2 * workers)
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(directory)}
    started = [_start(directory, "master", [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                                            "--webui-port", str(ui_port)], env)]
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", directory)
    for i in range(workers):
        own = cluster.worker_dir(i)
        (own / "work").mkdir(parents=True, exist_ok=True)
        (own / "state").mkdir(parents=True, exist_ok=True)
        args = [WORKER_CLASS, "--host", "127.0.0.1", "--port", str(worker_ports[2 * i]),
                "--webui-port", str(worker_ports[2 * i + 1]), "--cores", str(cores), "--memory", memory,
                "--work-dir", str(own / "work"), cluster.master_url]
        started.append(_start(directory, f"worker-{i}", args, {**env, "SPARK_WORKER_DIR": str(own / "work"),
                                                                STATE_DIR_VARIABLE: str(own / "state")}))
    deadline = time.monotonic() + timeout
    while True:
        try:
            if len(cluster.alive_workers()) >= workers:
                break
        except (OSError, ValueError):
            pass   # the master's web UI is not up yet, or answered before its JSON was ready
        # the processes this call started (not their command lines, which are empty while they exec)
        if time.monotonic() > deadline or any(process.poll() is not None for process in started):
            down(directory)
            raise RuntimeError(f"the cluster did not come up (logs in {directory}):\n{_log_tails(directory)}")
        time.sleep(0.5)
    (directory / "master-url").write_text(cluster.master_url)
    (directory / "web-ui").write_text(cluster.web_ui)
    return cluster


def _is_ours(pid: int) -> bool:
    """Whether ``pid`` still runs a Spark master or worker (not a process that reused the id).
    A live process's command line reads empty while it execs (``spark-class`` execs
    ``java``): wait that out rather than take it for someone else's."""
    for _ in range(50):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if command or state == "Z":
            return MASTER_CLASS in command or WORKER_CLASS in command
        time.sleep(0.02)
    return False


def _alive_pids(directory: Path) -> dict[Path, int]:
    found = {}
    for pid_file in sorted(Path(directory).glob("*.pid")):
        pid = int(pid_file.read_text().strip() or 0)
        if pid and _is_ours(pid):
            found[pid_file] = pid
    return found


def down(directory: Path = DEFAULT_DIR, timeout: float = 30) -> int:
    """Stop the workers, then the master, that ``up`` started from ``directory``; return
    how many were running. Each worker stops its executors as it goes."""
    directory = Path(directory).resolve()
    running = _alive_pids(directory)
    # workers first (a worker's shutdown kills its executors), the master last
    for pid_file, pid in sorted(running.items(), key=lambda item: item[0].name == "master.pid"):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _is_ours(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _is_ours(pid):
            os.kill(pid, signal.SIGKILL)
        pid_file.unlink()
    for stale in directory.glob("*.pid"):
        stale.unlink()
    return len(running)


def status(directory: Path = DEFAULT_DIR) -> Optional[Cluster]:
    """The cluster started from ``directory``, if its master still runs."""
    directory = Path(directory).resolve()
    running = _alive_pids(directory)
    if directory / "master.pid" not in running or not (directory / "master-url").exists():
        return None
    return Cluster((directory / "master-url").read_text(), (directory / "web-ui").read_text(), directory)


def kill_executor(app_id: str, executor_id: str) -> None:
    """SIGKILL the executor JVM of Spark application ``app_id`` with id ``executor_id``
    (found by its command line), as a lost machine would end it."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
        except OSError:
            continue
        if b"--app-id" in args and args[args.index(b"--app-id") + 1].decode() == app_id and \
                args[args.index(b"--executor-id") + 1].decode() == executor_id:
            os.kill(int(pid), signal.SIGKILL)
            return
    raise AssertionError(f"no process of executor {executor_id} of {app_id}")


@contextmanager
def running_cluster(directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[Cluster]:
    """A cluster for the duration of the ``with`` block."""
    cluster = up(directory, workers, cores, memory)
    try:
        yield cluster
    finally:
        down(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="1g")
    args = parser.parse_args()
    if args.command == "up":
        cluster = up(args.dir, args.workers, args.cores, args.memory)
        print(cluster.master_url)
    elif args.command == "down":
        print(f"stopped {down(args.dir)} processes")
    else:
        cluster = status(args.dir)
        if cluster is None:
            print("no cluster running")
            return 1
        workers = cluster.alive_workers()
        print(f"{cluster.master_url}  (web UI {cluster.web_ui}), {len(workers)} workers alive")
        for w in workers:
            print(f"  {w.get('id')}: {w.get('cores')} cores, {w.get('coresused')} used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
