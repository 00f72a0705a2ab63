"""The fault harness: run a registered topology through Spark on the embedded log,
SIGKILL the whole driver process group at random points, restart, and compare every
output topic and store with a failure-free run.

Between restarts it may also delete the state directory (stores are restored from
their changelogs) or corrupt a store's RocksDB files (the copy is rebuilt from its
changelog, not fatal). ``python harness.py --kills 50`` (``make faults``) runs every
topology, then the damage to the log itself of :mod:`log_faults` and a Kafka broker
restarted during an ``exactly_once`` run (:mod:`kafka_faults`) (``--damage KIND``,
``--damage none``), and prints the summary table.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from streamlib.topics import open_backend  # noqa: E402
from runner import JAVA_OPTIONS_VARIABLE, bootstrap_of  # noqa: E402
from topologies import REGISTRY, FaultTopology  # noqa: E402
from runlog import _PREVIOUS, TABLE_HEAD, _log, table_from_log, table_row  # noqa: E402,F401

POINTS = ("restore", "mid-batch", "store-commit", "sink-append", "spark-commit", "timer")
#: The longest one runner process may take (a run that processes all the input after
#: a JVM start: minutes under load); ``--run-timeout`` changes it.
RUN_TIMEOUT = 1200.0


@dataclass
class Outcome:
    """What one topology's fault run did, and what differed from the failure-free run."""

    topology: str
    kills: int = 0
    restarts: int = 0
    records: int = 0
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    restart_seconds: list[float] = field(default_factory=list)
    points: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    damage: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    phases: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    compared: bool = False

    def row(self) -> str:
        return table_row(self.topology, self.kills, self.restarts, self.records, len(self.mismatches),
                         self.restart_seconds, self.phases, self.compared, len(self.failures), self.damage)

    def entry(self) -> dict:
        """A damage run's (:mod:`log_faults`, :mod:`kafka_faults`) line in the run log."""
        return {"topology": self.topology, "run": "damage", "kills": self.kills, "restarts": self.restarts,
                "records": self.records, "mismatches": self.mismatches[:50],
                "failures": [f[:300] for f in self.failures], "compared": self.compared,
                "points": dict(self.points), "damage_totals": dict(self.damage)}


def last_error_line(ended: str) -> str:
    """The error a failed run's stderr ends with (``streamlib.<module>.<Error>: ...``)."""
    lines = [line for line in ended.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ended


def produce_inputs(workdir: Path, spec: FaultTopology, seed: int) -> int:
    backend = open_backend(bootstrap_of(workdir))
    total = 0
    for topic, data in spec.inputs(seed).items():
        backend.create_topic(topic, partitions=data.partitions, exist_ok=True)
        for key, value, timestamp in data.records:
            backend.produce(topic, key=data.key_serde.serialize(key), value=data.value_serde.serialize(value),
                            timestamp=timestamp)
            total += 1
    backend.close()
    return total


def _commits(workdir: Path) -> int:
    return len(glob.glob(str(workdir / "log" / "_checkpoints" / "faults" / "commits" / "[0-9]*")))


#: The driver JVM of every runner process compiles with C1 only and collects with the
#: serial collector: a run lives for seconds, and C2's and G1's threads took a third of
#: its CPU (2026-11-28: 28 instead of 44 CPU seconds for a counts run).
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: A class archive (AppCDS) of the driver JVM, made at the exit of the first failure-free
#: run of ``make faults`` and mapped by every later JVM instead of loading and verifying
#: Spark's 14000 classes again (with C1: 25 instead of 44 CPU seconds). None: no archive.
CLASS_ARCHIVE: Path | None = None


def _env(workdir: Path, point: str | None, hit: int, java_options: str = "") -> dict:
    env = dict(os.environ)
    if CLASS_ARCHIVE is not None and CLASS_ARCHIVE.exists():
        java_options += f" -XX:SharedArchiveFile={CLASS_ARCHIVE}"
    env[JAVA_OPTIONS_VARIABLE] = f"{JAVA_OPTIONS} {java_options}".strip()
    paths = [str(HERE / "inject"), str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    for name in ("STREAMLIB_FAULT_POINT", "STREAMLIB_FAULT_PGID", "STREAMLIB_FAULT_HIT"):
        env.pop(name, None)
    env["STREAMLIB_FAULT_TRACE"] = str(workdir / "trace.jsonl")
    if point and point != "timer":
        env.update(STREAMLIB_FAULT_POINT=point, STREAMLIB_FAULT_HIT=str(hit),
                   STREAMLIB_FAULT_DIR=str(workdir / "faults"))
        shutil.rmtree(workdir / "faults", ignore_errors=True)
        (workdir / "faults").mkdir()
    return env


def _wait_group_gone(pgid: int, timeout: float = 60.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _group_killed(pgid: int) -> None:
    if not _wait_group_gone(pgid):
        raise RuntimeError(f"process group {pgid} survived SIGKILL")


@dataclass
class Run:
    """How one runner process ended (``done``, ``killed`` or ``failed: ...``), its
    wall time, and when (seconds after its start) each phase ended: ``session``,
    ``app`` and ``first-batch`` (its first new checkpoint commit), as far as it got."""

    ended: str
    seconds: float
    phases: dict[str, float]
    pgid: int = 0  # the runner's process group (its JVM's too)

    @property
    def first_commit(self) -> float | None:
        return self.phases.get("first-batch")


def _phases(workdir: Path, started: float) -> dict[str, float]:
    """The runner's phases, and from the trace of its Python processes: ``workers-up``
    (the first Spark Python worker started), ``python-processes``, and the summed
    seconds of ``open-stores`` (restores included) and ``tasks``."""
    def entries(name: str) -> list[dict]:
        try:
            text = (workdir / name).read_text()
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # a line cut by the kill
                pass
        return out

    phases = {e["phase"]: e["at"] - started for e in entries("phases.jsonl")}
    trace = entries("trace.jsonl")
    starts = sorted(e["at"] - started for e in trace if e["event"] == "start")
    if len(starts) > 1:  # the first is the runner itself
        phases["workers-up"] = starts[1]
    phases["python-processes"] = len(starts)
    for event in ("open-stores", "task"):
        phases[f"{event}-seconds"] = sum(e.get("seconds", 0.0) for e in trace if e["event"] == event)
    return phases


def run_once(workdir: Path, name: str, point: str | None = None, hit: int = 1,
             kill_after: float | None = None, master: str = "local[2]", java_options: str = "") -> Run:
    """Start the runner (on ``master``, its driver JVM with ``java_options`` too);
    return how it ended, and its phases."""
    before = _commits(workdir)
    for log in ("phases.jsonl", "trace.jsonl"):
        (workdir / log).unlink(missing_ok=True)
    started = time.time()
    proc = subprocess.Popen([sys.executable, str(HERE / "runner.py"), str(workdir), name, master],
                            env=_env(workdir, point, hit, java_options), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=open(workdir / "runner.err", "w"))
    try:
        first_commit = None
        while proc.poll() is None:
            now = time.time() - started
            if first_commit is None and _commits(workdir) > before:
                first_commit = now
            if kill_after is not None and now >= kill_after:
                os.killpg(proc.pid, signal.SIGKILL)
            if now > RUN_TIMEOUT:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                _group_killed(proc.pid)
                return Run("failed: timed out", now, _phases(workdir, started), proc.pid)
            time.sleep(0.1)
    except BaseException:  # e.g. a test's timeout: leave no JVM behind
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if first_commit is None and _commits(workdir) > before:
        first_commit = time.time() - started
    phases = _phases(workdir, started)
    if first_commit is not None:
        phases["first-batch"] = first_commit
    seconds = time.time() - started
    if proc.returncode == -signal.SIGKILL:
        _group_killed(proc.pid)
        return Run("killed", seconds, phases, proc.pid)
    if proc.returncode == 0:
        return Run("done", seconds, phases, proc.pid)
    error = (workdir / "runner.err").read_text()[-3000:]
    return Run(f"failed: exit {proc.returncode}: {error}", seconds, phases, proc.pid)


def read_outputs(workdir: Path, spec: FaultTopology) -> dict[str, list[tuple]]:
    """Every output topic's records as ``(repr(key), value, timestamp, headers)``,
    partition by partition in offset order. A record that does not deserialize is
    ``("<corrupt>", error, offset, {})``: it is reported, not raised."""
    backend = open_backend(bootstrap_of(workdir))
    outputs = {}
    for topic, out in spec.outputs.items():
        rows = []
        for partition, end in sorted(backend.end_offsets(topic).items()):
            for offset, record in enumerate(backend.read(topic, partition, 0, end)):
                try:
                    rows.append((repr(out.key_serde.deserialize(record.key)),
                                 out.value_serde.deserialize(record.value), record.timestamp,
                                 dict(record.headers or {})))
                except Exception as error:  # noqa: BLE001 - corrupted output is a finding
                    rows.append(("<corrupt>", f"{topic}-{partition}@{offset}: {error!r}", offset, {}))
        outputs[topic] = rows
    backend.close()
    return outputs


UPDATE_HEADER = "streamlib.update"


def _by_key(rows: list[tuple]) -> dict[str, list]:
    per_key: dict = defaultdict(list)
    for key, value, _, _ in rows:
        per_key[key].append(value)
    return per_key


def check_output(topic: str, check: str, want: list[tuple], got: list[tuple]) -> list[str]:
    """What differs between the failure-free run's records ``want`` and the faulty run's
    ``got`` of one output topic, by the topic's check (see ``topologies.Output``)."""
    problems = [f"topic {topic}: corrupt record {v}" for k, v, _, _ in got if k == "<corrupt>"]
    if check in ("latest", "increasing"):
        expected, actual = _by_key(want), _by_key(got)
        for key in sorted(set(expected) | set(actual)):
            mine, theirs = actual.get(key, []), expected.get(key, [])
            if mine[-1:] != theirs[-1:]:
                problems.append(f"topic {topic} key {key}: latest {mine[-1:]} != {theirs[-1:]}")
            if check == "increasing" and any(b <= a for a, b in zip(mine, mine[1:])):
                problems.append(f"topic {topic} key {key}: duplicated or out of order {mine}")
    elif check == "once":
        expected, actual = _by_key(want), _by_key(got)
        for key in sorted(set(expected) | set(actual)):
            mine, theirs = actual.get(key, []), expected.get(key, [])
            if len(mine) > 1:
                problems.append(f"topic {topic} key {key}: final result {len(mine)} times {mine}")
            if not mine:
                problems.append(f"topic {topic} key {key}: final result {theirs} lost")
            elif mine[-1:] != theirs[-1:]:
                problems.append(f"topic {topic} key {key}: final result {mine[-1:]} != {theirs[-1:]}")
    elif check == "per-record":
        finals = []
        for rows, run in ((want, "failure-free"), (got, "faulty")):
            final: dict = {}
            for key, value, timestamp, headers in rows:
                corrected = (key, timestamp) in final and final[(key, timestamp)] is not None
                if (UPDATE_HEADER in headers) != corrected:
                    problems.append(f"topic {topic} ({run} run) {key}@{timestamp}: {value!r} "
                                    f"{'has' if UPDATE_HEADER in headers else 'lacks'} the update header")
                final[(key, timestamp)] = value
            finals.append(final)
        # A correction to None retracts a result: an inner join whose table row was
        # deleted before the record's time by a late update. The record then has no
        # result, as when the delete came first; which came first depends on where
        # micro-batches cut the two inputs (a broker restart moves the cuts).
        expected, actual = ({record: value for record, value in final.items() if value is not None}
                            for final in finals)
        for record in sorted(set(expected) | set(actual)):
            if expected.get(record, "<none>") != actual.get(record, "<none>"):
                problems.append(f"topic {topic} {record}: latest {actual.get(record, '<none>')!r} "
                                f"!= {expected.get(record, '<none>')!r}")
    return problems


def compare(spec: FaultTopology, reference: Path, faulty: Path) -> list[str]:
    """What differs between a failure-free run and a run with faults: every store's
    contents and every output topic, by the topic's check."""
    problems = []
    want, got = (json.loads((d / "result.json").read_text()) for d in (reference, faulty))
    for store in spec.stores:
        expected, actual = dict(map(tuple, want[store])), dict(map(tuple, got[store]))
        for key in sorted(set(expected) | set(actual)):
            if expected.get(key) != actual.get(key):
                problems.append(f"store {store} key {key}: {actual.get(key)} != {expected.get(key)}")
    expected_out, actual_out = read_outputs(reference, spec), read_outputs(faulty, spec)
    for topic, out in spec.outputs.items():
        problems.extend(check_output(topic, out.check, expected_out[topic], actual_out[topic]))
    return problems


def damage_state(workdir: Path, rng: random.Random) -> str | None:
    """Maybe lose the state directory or corrupt one store's RocksDB files."""
    state = workdir / "state" / "faults"
    roll = rng.random()
    if roll < 0.15 and state.exists():
        shutil.rmtree(state)
        return "lost state dir"
    manifests = glob.glob(str(state / "*" / "*" / "MANIFEST-*"))
    if roll < 0.3 and manifests:
        target = rng.choice(manifests)
        for name in [target, os.path.join(os.path.dirname(target), "CURRENT")]:
            with open(name, "r+b") as f:
                f.write(b"\x00corrupted\x00" * 8)
        return "corrupted RocksDB"
    return None


#: Failure-free runs already made in this process, by (topology, the seeds of the inputs
#: given one after the other, those inputs): (a pristine copy of the run directory after
#: the last, the first run's duration). Tests and damage runs share them.
_REFERENCES: dict[tuple, tuple[Path, float]] = {}


#: What a runner process spends before its first batch (JVM start, imports; 14 s here
#: on 2026-11-26): added to a failure-free run made in a running session, so that timer
#: kills keep the time scale of a runner process.
PROCESS_START_SECONDS = 15.0


def _failure_free(workdir: Path, name: str, spark=None) -> float:
    """One failure-free run to the end: a runner process, or in ``spark`` (this
    process's session); returns its seconds, as a runner process would take them."""
    if spark is None:
        archive = CLASS_ARCHIVE is not None and not CLASS_ARCHIVE.exists()
        partial = CLASS_ARCHIVE.with_suffix(".partial") if archive else None
        run = run_once(workdir, name, java_options=f"-XX:ArchiveClassesAtExit={partial}" if archive else "")
        if run.ended != "done":
            raise RuntimeError(f"the failure-free run of {name} failed: {run.ended}")
        if archive and _wait_group_gone(run.pgid, 600.0) and partial.exists():
            partial.rename(CLASS_ARCHIVE)  # written by the JVM at its exit, after the runner's
        return run.seconds
    from runner import run_to_end

    started = time.time()
    run_to_end(spark, workdir, name)
    return time.time() - started + PROCESS_START_SECONDS


def _identity(spec: FaultTopology, seeds: tuple[int, ...]) -> tuple:
    inputs = [sorted((t, d.records) for t, d in spec.inputs(seed).items()) for seed in seeds]
    return (spec.name, seeds, repr(inputs))


def reference_run(spec: FaultTopology, workdir: Path, seed: int, spark=None, later: tuple[int, ...] = ()) -> float:
    """The failure-free run of the input of ``seed`` (in ``spark`` if given, else a
    runner process), then for each seed of ``later`` its input appended and one more
    run; returns the first run's duration (the timer kills' time scale). What this
    process already ran (the same topology, seeds and input) is copied, not run again."""
    seeds = (seed, *later)
    done = next((n for n in range(len(seeds), 0, -1) if _pristine(spec, seeds[:n])), 0)
    if done:
        copy_reference(spec, seeds[:done], workdir)
    else:
        workdir.mkdir(parents=True, exist_ok=True)
    for n in range(done, len(seeds)):
        produce_inputs(workdir, spec, seeds[n])
        seconds = _failure_free(workdir, spec.name, spark)
        pristine = workdir.parent / f"{workdir.name}-pristine{n + 1}"
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.copytree(workdir, pristine)
        _REFERENCES[_identity(spec, seeds[:n + 1])] = (pristine, seconds if n == 0 else _first_seconds(spec, seed))
    return _first_seconds(spec, seed)


def _pristine(spec: FaultTopology, seeds: tuple[int, ...]) -> Path | None:
    pristine, _ = _REFERENCES.get(_identity(spec, seeds), (None, 0.0))
    return pristine if pristine is not None and pristine.exists() else None


def _first_seconds(spec: FaultTopology, seed: int) -> float:
    return _REFERENCES[_identity(spec, (seed,))][1]


def copy_reference(spec: FaultTopology, seeds: tuple[int, ...], workdir: Path) -> int:
    """Copy the failure-free run directory after the inputs of ``seeds`` (one after
    the other, a run each; made by :func:`reference_run`) to ``workdir`` (which may be
    an empty mount point): a faulty run's first runs without a fault, without running
    them again. Returns the number of input records."""
    shutil.copytree(_pristine(spec, seeds), workdir, dirs_exist_ok=True)
    return sum(len(d.records) for seed in seeds for d in spec.inputs(seed).values())


def _restarted(outcome: Outcome, run: Run) -> None:
    outcome.restarts += 1
    if run.first_commit is not None:
        outcome.restart_seconds.append(run.first_commit)
        for name in ("session", "app", "first-batch"):
            if name in run.phases:
                outcome.phases[name].append(run.phases[name] - run.phases.get(_PREVIOUS[name], 0.0))


def fault_run(spec: FaultTopology, root: Path, kills: int, seed: int = 0, verbose: bool = False,
              log: Path | None = None, stop_killing_at: float | None = None, spark=None) -> Outcome:
    """Kill ``kills`` times at random points, restarting after each; then run to the
    end and compare. With ``stop_killing_at`` (epoch seconds), fewer kills if time is
    up: the run still ends with the failure-free last run and the comparison. With
    ``spark``, the failure-free runs are made in that session instead of processes."""
    rng = random.Random(seed)
    reference = root / "reference"
    duration = reference_run(spec, reference, seed, spark)
    workdir = root / "faulty"
    workdir.mkdir(parents=True)
    outcome = Outcome(spec.name, records=produce_inputs(workdir, spec, seed))
    _log(log, {"topology": spec.name, "run": "reference", "seconds": round(duration, 1),
               "records": outcome.records}, verbose)
    attempts = 0
    while outcome.kills < kills and (stop_killing_at is None or time.time() < stop_killing_at):
        attempts += 1
        if attempts > 4 * kills + 10:
            raise RuntimeError(f"{spec.name}: only {outcome.kills} of {kills} kills landed")
        point = rng.choice(POINTS)
        if point == "restore" and (workdir / "state").exists():
            shutil.rmtree(workdir / "state")  # so that there is something to restore
            outcome.damage["lost state dir"] += 1
        hit = rng.randint(1, 2) if point == "restore" else rng.randint(1, 4)  # 2 tasks restore
        run = run_once(workdir, spec.name, point, hit=hit,
                       kill_after=rng.uniform(1.0, duration) if point == "timer" else None)
        if attempts > 1:
            _restarted(outcome, run)
        if run.ended.startswith("failed"):
            # A crash is restarted, as a user would; the comparison at the end says
            # whether anything was lost. Too many in a row stop this topology.
            outcome.failures.append(f"run {attempts} failed after {outcome.kills} kills: {run.ended}")
        elif run.ended == "killed":
            outcome.kills += 1
            outcome.points[point] += 1
        else:  # finished before the fault point came: start over with new input
            outcome.records += produce_inputs(workdir, spec, seed + attempts)
            produce_inputs(reference, spec, seed + attempts)
            _failure_free(reference, spec.name, spark)
        damage = None if run.ended.startswith("failed") else damage_state(workdir, rng)
        if damage:
            outcome.damage[damage] += 1
        _log(log, {"topology": spec.name, "run": attempts, "point": point, "hit": hit, "ended": run.ended[:300],
                   "seconds": round(run.seconds, 1), "restart": attempts > 1,
                   "phases": {k: round(v, 1) for k, v in run.phases.items()}, "damage": damage,
                   "records": outcome.records}, verbose)
        if len(outcome.failures) > max(2, kills // 5):
            outcome.mismatches.append(f"{len(outcome.failures)} runs failed: {outcome.failures[-1]}")
            return outcome
    run = run_once(workdir, spec.name)
    _restarted(outcome, run)
    if run.ended != "done":
        outcome.mismatches.append(f"the last run failed: {run.ended}")
    else:
        outcome.mismatches.extend(compare(spec, reference, workdir))
        outcome.compared = True
    _log(log, {"topology": spec.name, "run": "final", "ended": run.ended[:300], "seconds": round(run.seconds, 1),
               "phases": {k: round(v, 1) for k, v in run.phases.items()}, "kills": outcome.kills,
               "restarts": outcome.restarts, "mismatches": outcome.mismatches[:50],
               "failures": [f[:300] for f in outcome.failures],
               "points": dict(outcome.points), "damage_totals": dict(outcome.damage)}, verbose)
    return outcome


def executor_kill_run(spec: FaultTopology, root: Path, seed: int = 0, hit: int = 2,
                      spark=None) -> tuple[Outcome, str]:
    """Run ``spec`` on ``local-cluster[2,1,1024]`` and SIGKILL one executor JVM when a
    task starts its ``hit``-th batch partition; Spark retries the task on the other
    executor and the run must finish by itself with results equal to a failure-free
    ``local[2]`` run. Returns the outcome and what the fault point recorded."""
    reference_run(spec, root / "reference", seed, spark)
    workdir = root / "faulty"
    workdir.mkdir(parents=True)
    outcome = Outcome(spec.name, records=produce_inputs(workdir, spec, seed))
    run = run_once(workdir, spec.name, "executor", hit=hit, master="local-cluster[2,1,1024]")
    killed = (workdir / "faults" / "killed").read_text() if (workdir / "faults" / "killed").exists() else ""
    if run.ended != "done":
        outcome.mismatches.append(f"the run with a killed executor ended: {run.ended}")
        return outcome, killed
    outcome.kills = int(killed.startswith("executor"))
    outcome.mismatches.extend(compare(spec, root / "reference", workdir))
    outcome.compared = True
    return outcome, killed


def share_of(stop: float | None, topologies_left: int) -> float | None:
    """When the next topology's kills stop: an equal share of the time left to ``stop``."""
    if stop is None:
        return None
    now = time.time()
    return now + max(0.0, stop - now) / max(1, topologies_left)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50, help="kills per topology")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--topology", action="append", help="only these (default: all registered)")
    parser.add_argument("--workdir", default=None, help="default: a fresh temporary directory")
    parser.add_argument("--log", default=None, help="append one JSON line per run here "
                        "(default: WORKDIR/runs.jsonl)")
    parser.add_argument("--table", metavar="LOG", help="only print the summary table of LOG")
    parser.add_argument("--stop-killing-at", metavar="HH:MM", help="UTC time after which no new kill "
                        "starts: each topology then runs to the end and is compared (a time-boxed run)")
    parser.add_argument("--damage", action="append",
                        choices=("input-tail", "changelog-tail", "changelog-and-copy", "full-disk", "broker-restart",
                                 "none"),
                        help="damage to the log (or, broker-restart, a Kafka broker restarted during an "
                        "exactly_once run) after the kills, each once per topology (default: all)")
    parser.add_argument("--records", type=int, help="input records per topology (default: the topology's)")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT,
                        help="seconds one run may take before it counts as failed")
    parser.add_argument("--no-class-archive", action="store_true", help="no class archive (AppCDS) for "
                        "the driver JVMs (default: made by the first failure-free run, in the workdir)")
    args = parser.parse_args(argv)
    globals()["RUN_TIMEOUT"] = args.run_timeout
    if args.table:
        print(table_from_log(Path(args.table)))
        return 0
    import tempfile
    from functools import partial

    root = Path(args.workdir or tempfile.mkdtemp(prefix="streamlib-faults-"))
    root.mkdir(parents=True, exist_ok=True)
    log = Path(args.log) if args.log else root / "runs.jsonl"
    if not args.no_class_archive:
        globals()["CLASS_ARCHIVE"] = root / "driver-classes.jsa"
    print(f"workdir {root}, run log {log}", flush=True)
    stop = None
    if args.stop_killing_at:
        import datetime as dt

        now = dt.datetime.now(dt.timezone.utc)
        hour, minute = map(int, args.stop_killing_at.split(":"))
        stop = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if stop <= now:   # a time past midnight: tomorrow's
            stop += dt.timedelta(days=1)
        stop = stop.timestamp()
    from kafka_faults import KIND as BROKER_RESTART, broker_restart_run
    from log_faults import KINDS, log_damage_run

    kinds = [k for k in (args.damage or KINDS + (BROKER_RESTART,)) if k != "none"]
    outcomes = []
    registry = dict(REGISTRY)
    if args.records:
        from dataclasses import replace

        registry = {n: replace(s, inputs=partial(s.inputs, n=args.records)) for n, s in REGISTRY.items()}
    names = args.topology or list(registry)
    # The damage runs first (a fixed number of runs), then the kills: with a time box,
    # each topology's kills get an equal share of the time left, so that a time-boxed
    # run kills every topology, not only the first.
    damage_runs = [partial(broker_restart_run if kind == BROKER_RESTART else partial(log_damage_run, kind=kind),
                           registry[name], root / f"{name}-{kind}", seed=args.seed)
                   for name in names for kind in kinds]
    kill_runs = [lambda i=i, name=name: fault_run(registry[name], root / name, args.kills, args.seed,
                                                  verbose=True, log=log,
                                                  stop_killing_at=share_of(stop, len(names) - i))
                 for i, name in enumerate(names)] if args.kills else []
    for run in damage_runs + kill_runs:
        started = time.time()
        outcome = run()
        outcomes.append(outcome)
        if run in damage_runs:  # a kill run logs each of its runs itself
            _log(log, {**outcome.entry(), "seconds": round(time.time() - started, 1)}, verbose=True)
        print(f"{outcome.topology}: kills by point {dict(outcome.points)}, damage {dict(outcome.damage)}",
              flush=True)
        for problem in outcome.mismatches[:20] + outcome.failures[:5]:
            print(f"  {'MISMATCH' if problem in outcome.mismatches else 'FAILED RUN'} {problem}", flush=True)
    print(TABLE_HEAD)
    for outcome in outcomes:
        print(outcome.row())
    return 1 if any(o.mismatches or o.failures for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
