"""A Kafka broker restart in the middle of an ``exactly_once`` run (issue 37, item 7).

``broker-restart``: the harness starts an Apache Kafka broker of its own
(``tools/kafka_local.py``, a free loopback port, its data in the run directory), runs
the topology on it under ``exactly_once`` in micro-batches of 40 records, and once the
run has committed a batch, after a random moment stops that broker (SIGTERM, a clean
shutdown, or SIGKILL) and starts it again on the same port and data. The run must go
on and end exact, or stop with streamlib's own error (naming what it could not reach;
a bare traceback counts as a failed run); it is then restarted, as a user would; the
outputs a ``read_committed`` reader sees and the stores are compared with a
failure-free run on the embedded log. Then the state directory is deleted and the
topology runs once more, restoring every store from its changelog on the broker, before
the comparison. Only the broker this module started is ever stopped.
"""
from __future__ import annotations

import random
import shutil
import sys
import threading
import time
from pathlib import Path

from harness import (HERE, Outcome, _commits, compare, last_error_line, produce_inputs, reference_run,
                     run_once)
from runner import BOOTSTRAP_FILE
from topologies import FaultTopology

sys.path.insert(0, str(HERE.parent.parent / "tools"))
from kafka_local import free_port, start_broker, stop_process  # noqa: E402

KIND = "broker-restart"
#: How long the broker stays down before it is started again.
DOWN_SECONDS = (2.0, 15.0)


class Broker:
    """The broker this run started: stopped and restarted only by it."""

    def __init__(self, run_dir: Path):
        self.port = free_port()
        self.run_dir = run_dir
        self.proc = start_broker(self.port, run_dir)

    @property
    def bootstrap(self) -> str:
        return f"kafka://127.0.0.1:{self.port}"

    def restart(self, hard: bool, down: float) -> None:
        if hard:
            self.proc.kill()
            self.proc.wait()
        else:
            stop_process(self.proc.pid)
        time.sleep(down)
        self.proc = start_broker(self.port, self.run_dir)

    def stop(self) -> None:
        stop_process(self.proc.pid)


def _restart_after_a_commit(workdir: Path, broker: Broker, rng: random.Random, done: threading.Event,
                            events: list[str]) -> None:
    """Once the runner committed a batch past ``before``, wait a random moment (a batch
    is then most likely under way), restart the broker, and note what was done."""
    before = _commits(workdir)
    while not done.is_set() and _commits(workdir) <= before:
        time.sleep(0.1)
    if done.is_set():
        events.append("no restart: the run ended before its first commit")
        return
    time.sleep(rng.uniform(0.0, 3.0))
    if done.is_set():
        events.append("no restart: the run ended first")
        return
    hard, down = rng.random() < 0.5, rng.uniform(*DOWN_SECONDS)
    broker.restart(hard, down)
    events.append(f"{'SIGKILL' if hard else 'SIGTERM'} after {_commits(workdir) - before} commit(s), "
                  f"down {down:.0f} s")


def broker_restart_run(spec: FaultTopology, root: Path, seed: int = 0, spark=None) -> Outcome:
    """One ``broker-restart`` run of ``spec`` (see the module docstring)."""
    rng = random.Random(seed)
    reference_run(spec, root / "reference", seed, spark)
    workdir = root / "faulty"
    workdir.mkdir(parents=True)
    outcome = Outcome(f"{spec.name} {KIND}")
    broker = Broker(root / "broker")
    try:
        (workdir / BOOTSTRAP_FILE).write_text(broker.bootstrap)
        outcome.records = produce_inputs(workdir, spec, seed)
        done, events = threading.Event(), []
        restarter = threading.Thread(target=_restart_after_a_commit, args=(workdir, broker, rng, done, events))
        restarter.start()
        try:
            run = run_once(workdir, spec.name)
        finally:
            done.set()
            restarter.join()
        restarted = any(not e.startswith("no restart") for e in events)
        outcome.damage[KIND if restarted else "broker restart missed"] += 1
        outcome.points.update({e: 1 for e in events})
        for attempt in range(3):   # a run the restart stopped is started again, as a user would
            if run.ended == "done":
                break
            error = last_error_line(run.ended)
            if error.startswith("streamlib."):   # stopped with streamlib's own error: allowed
                outcome.damage[f"stopped: {error[:200]}"] += 1
            else:
                outcome.failures.append(f"run {attempt + 1} with the broker restarted: {run.ended[-400:]}")
            run = run_once(workdir, spec.name)
            outcome.restarts += 1
        if run.ended == "done":  # the stores again, from their changelogs on the broker
            shutil.rmtree(workdir / "state", ignore_errors=True)
            outcome.damage["lost state dir"] += 1
            run = run_once(workdir, spec.name)
            outcome.restarts += 1
        if run.ended != "done":
            outcome.mismatches.append(f"the last run failed: {run.ended[-500:]}")
        else:
            outcome.mismatches.extend(compare(spec, root / "reference", workdir))
            outcome.compared = True
        return outcome
    finally:
        broker.stop()
