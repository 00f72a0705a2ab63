"""The fault harness: run a registered topology through Spark on the embedded log,
SIGKILL the whole driver process group at random points, restart, and compare every
output topic and store with a failure-free run.

Between restarts it may also delete the state directory (stores are restored from
their changelogs) or corrupt a store's RocksDB files (the copy is rebuilt from its
changelog, not fatal). ``python harness.py --kills 50`` (``make faults``) runs every
topology and prints the summary table.
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
from topologies import REGISTRY, FaultTopology  # noqa: E402

POINTS = ("restore", "mid-batch", "store-commit", "sink-append", "spark-commit", "timer")
RUN_TIMEOUT = 600.0


@dataclass
class Outcome:
    """What one topology's fault run did, and what differed from the failure-free run."""

    topology: str
    kills: int = 0
    restarts: int = 0
    records: int = 0
    mismatches: list[str] = field(default_factory=list)
    restart_seconds: list[float] = field(default_factory=list)
    points: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    damage: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def row(self) -> str:
        mean = sum(self.restart_seconds) / len(self.restart_seconds) if self.restart_seconds else 0.0
        return (f"| {self.topology} | {self.kills} | {self.restarts} | {self.records} | "
                f"{len(self.mismatches)} | {mean:.1f} s |")


TABLE_HEAD = ("| topology | kills | restarts | records | mismatches | restart time (mean, to first commit) |\n"
              "|---|---|---|---|---|---|")


def produce_inputs(workdir: Path, spec: FaultTopology, seed: int) -> int:
    backend = open_backend(f"local://{workdir / 'log'}")
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


def _env(workdir: Path, point: str | None, hit: int) -> dict:
    env = dict(os.environ)
    paths = [str(HERE / "inject"), str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.pop("STREAMLIB_FAULT_POINT", None)
    if point and point != "timer":
        env.update(STREAMLIB_FAULT_POINT=point, STREAMLIB_FAULT_HIT=str(hit),
                   STREAMLIB_FAULT_DIR=str(workdir / "faults"))
        shutil.rmtree(workdir / "faults", ignore_errors=True)
        (workdir / "faults").mkdir()
    return env


def _wait_group_gone(pgid: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise RuntimeError(f"process group {pgid} survived SIGKILL")


def run_once(workdir: Path, name: str, point: str | None = None, hit: int = 1,
             kill_after: float | None = None) -> tuple[str, float | None]:
    """Start the runner; return how it ended (``done``, ``killed`` or ``failed: ...``) and
    the seconds to its first new checkpoint commit (None if it made none)."""
    before = _commits(workdir)
    started = time.time()
    proc = subprocess.Popen([sys.executable, str(HERE / "runner.py"), str(workdir), name],
                            env=_env(workdir, point, hit), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=open(workdir / "runner.err", "w"))
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
            _wait_group_gone(proc.pid)
            return "failed: timed out", first_commit
        time.sleep(0.1)
    if proc.returncode == -signal.SIGKILL:
        _wait_group_gone(proc.pid)
        return "killed", first_commit
    if first_commit is None and _commits(workdir) > before:
        first_commit = time.time() - started
    if proc.returncode == 0:
        return "done", first_commit
    return f"failed: exit {proc.returncode}: {(workdir / 'runner.err').read_text()[-3000:]}", first_commit


def read_outputs(workdir: Path, spec: FaultTopology) -> dict[str, dict]:
    """Every output topic as key -> list of values in offset order (per partition)."""
    backend = open_backend(f"local://{workdir / 'log'}")
    outputs = {}
    for topic, (key_serde, value_serde) in spec.outputs.items():
        per_key: dict = defaultdict(list)
        for partition, end in sorted(backend.end_offsets(topic).items()):
            for record in backend.read(topic, partition, 0, end):
                per_key[repr(key_serde.deserialize(record.key))].append(value_serde.deserialize(record.value))
        outputs[topic] = dict(per_key)
    backend.close()
    return outputs


def compare(spec: FaultTopology, reference: Path, faulty: Path) -> list[str]:
    """What differs between a failure-free run and a run with faults: store contents,
    each output topic's latest value per key, and (counts) repeated or decreasing values."""
    problems = []
    want, got = (json.loads((d / "result.json").read_text()) for d in (reference, faulty))
    for store in spec.stores:
        expected, actual = dict(map(tuple, want[store])), dict(map(tuple, got[store]))
        for key in sorted(set(expected) | set(actual)):
            if expected.get(key) != actual.get(key):
                problems.append(f"store {store} key {key}: {actual.get(key)} != {expected.get(key)}")
    expected_out, actual_out = read_outputs(reference, spec), read_outputs(faulty, spec)
    for topic in spec.outputs:
        for key in sorted(set(expected_out[topic]) | set(actual_out[topic])):
            mine, theirs = actual_out[topic].get(key, []), expected_out[topic].get(key, [])
            if (mine or [None])[-1] != (theirs or [None])[-1]:
                problems.append(f"topic {topic} key {key}: latest {mine[-1:]} != {theirs[-1:]}")
            if spec.increasing_outputs and any(b <= a for a, b in zip(mine, mine[1:])):
                problems.append(f"topic {topic} key {key}: duplicated or out of order {mine}")
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


def reference_run(spec: FaultTopology, workdir: Path, seed: int) -> float:
    """The failure-free run; returns its duration (the timer kills' time scale)."""
    workdir.mkdir(parents=True, exist_ok=True)
    produce_inputs(workdir, spec, seed)
    started = time.time()
    ended, _ = run_once(workdir, spec.name)
    if ended != "done":
        raise RuntimeError(f"the failure-free run of {spec.name} failed: {ended}")
    return time.time() - started


def fault_run(spec: FaultTopology, root: Path, kills: int, seed: int = 0, verbose: bool = False) -> Outcome:
    """Kill ``kills`` times at random points, restarting after each; then compare."""
    rng = random.Random(seed)
    reference = root / "reference"
    duration = reference_run(spec, reference, seed)
    workdir = root / "faulty"
    workdir.mkdir(parents=True)
    outcome = Outcome(spec.name, records=produce_inputs(workdir, spec, seed))
    attempts = 0
    while outcome.kills < kills:
        attempts += 1
        if attempts > 4 * kills + 10:
            raise RuntimeError(f"{spec.name}: only {outcome.kills} of {kills} kills landed")
        point = rng.choice(POINTS)
        if point == "restore" and (workdir / "state").exists():
            shutil.rmtree(workdir / "state")  # so that there is something to restore
            outcome.damage["lost state dir"] += 1
        hit = rng.randint(1, 2) if point == "restore" else rng.randint(1, 4)  # 2 tasks restore
        began = time.time()
        ended, first_commit = run_once(workdir, spec.name, point, hit=hit,
                                       kill_after=rng.uniform(1.0, duration) if point == "timer" else None)
        if verbose:
            print(f"{spec.name}: run {attempts} at {point} #{hit}: {ended[:200]} after {time.time() - began:.0f} s",
                  flush=True)
        if outcome.kills or attempts > 1:
            outcome.restarts += 1
            if first_commit is not None:
                outcome.restart_seconds.append(first_commit)
        if ended.startswith("failed"):
            outcome.mismatches.append(f"run failed after {outcome.kills} kills: {ended}")
            return outcome
        if ended == "killed":
            outcome.kills += 1
            outcome.points[point] += 1
        else:  # finished before the fault point came: start over with new input
            produce_inputs(workdir, spec, seed + attempts)
            produce_inputs(reference, spec, seed + attempts)
            if reference_run_again(spec, reference) != "done":
                raise RuntimeError("the failure-free run failed")
        damage = damage_state(workdir, rng)
        if damage:
            outcome.damage[damage] += 1
    ended, first_commit = run_once(workdir, spec.name)
    outcome.restarts += 1
    if first_commit is not None:
        outcome.restart_seconds.append(first_commit)
    if ended != "done":
        outcome.mismatches.append(f"the last run failed: {ended}")
        return outcome
    outcome.mismatches.extend(compare(spec, reference, workdir))
    return outcome


def reference_run_again(spec: FaultTopology, reference: Path) -> str:
    return run_once(reference, spec.name)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50, help="kills per topology")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--topology", action="append", help="only these (default: all registered)")
    parser.add_argument("--workdir", default=None, help="default: a fresh temporary directory")
    args = parser.parse_args(argv)
    import tempfile

    root = Path(args.workdir or tempfile.mkdtemp(prefix="streamlib-faults-"))
    outcomes = []
    for name in args.topology or list(REGISTRY):
        outcome = fault_run(REGISTRY[name], root / name, args.kills, args.seed, verbose=True)
        outcomes.append(outcome)
        print(f"{name}: kills by point {dict(outcome.points)}, damage {dict(outcome.damage)}", flush=True)
        for problem in outcome.mismatches[:20]:
            print(f"  MISMATCH {problem}", flush=True)
    print(TABLE_HEAD)
    for outcome in outcomes:
        print(outcome.row())
    return 1 if any(o.mismatches for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
