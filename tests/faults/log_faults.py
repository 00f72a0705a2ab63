"""Damage to the embedded log itself between runs (issue 37), each compared with a
failure-free run that got the same input:

* ``input-tail``: an input partition's last frame is torn after the application read
  it; later input is appended at the cut offsets. Log epochs send the application back
  to the cut, so each new record is read once.
* ``changelog-tail``: a store's changelog loses its last frame under the copy that
  reflects it; later input runs a batch. The copy logs its contents again.
* ``changelog-and-copy``: the same torn changelog frame, and the state directory is
  lost too (moved aside), so no copy can log the lost records again: the next run must
  stop with ``ChangelogLost`` before it writes anything. Then the directory comes back
  (the error's first way out: run where a copy still holds the store), and the run
  goes on as above.
* ``full-disk``: the run directory is a small tmpfs filled up (ENOSPC) while the
  application processes later input; the run must stop with a clear error (streamlib's
  own, or one saying ``No space left on device``; anything else counts as a failed
  run), room is made, and the next run finishes. Needs root to mount (else reported
  as skipped).

The run before the damage is the failure-free run's (copied: the same input, no fault),
and the failure-free run of the later input is made once per topology for all kinds.
Each then takes one SIGKILL mid-batch and runs to the end (a run that fails on the way
is started again once and counted as a failed run); then its state directory is
deleted and it runs once more, restoring every store from its changelog (a changelog
that silently lost records shows up); stores and outputs are compared with the
failure-free run.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from harness import (Outcome, Run, compare, copy_reference, last_error_line, produce_inputs, reference_run,
                     run_once)
from topologies import FaultTopology

KINDS = ("input-tail", "changelog-tail", "changelog-and-copy", "full-disk")
#: The tmpfs of a full-disk run: room for a small topology's log, state and checkpoint.
DISK_SIZE = "512m"


def clear_stop(ended: str) -> str | None:
    """The error line of a run that stopped clearly on a full disk, else None."""
    line = last_error_line(ended)
    return line if line.startswith("streamlib.") or "No space left on device" in line else None


def tear_last_frame(partition_dir: str, cut: int = 10) -> None:
    """Cut the last ``cut`` bytes of the partition's last segment (a torn last frame)."""
    segment = sorted(glob.glob(os.path.join(partition_dir, "*.log")))[-1]
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - cut)


def fullest_partition(log_dir: Path, topics: list[str]) -> str:
    """The partition directory (of ``topics``) with the largest last segment."""
    candidates = [d for t in topics for d in glob.glob(str(log_dir / t / "[0-9]*"))
                  if glob.glob(os.path.join(d, "*.log"))]
    return max(candidates, key=lambda d: os.path.getsize(sorted(glob.glob(os.path.join(d, "*.log")))[-1]))


def _mount_small_disk(workdir: Path) -> bool:
    workdir.mkdir(parents=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(workdir)],
                          capture_output=True).returncode == 0


def _fill(workdir: Path, leave: int = 32 * 1024) -> Path:
    stats = os.statvfs(workdir)
    filler = workdir / "filler"
    with open(filler, "wb") as f:
        remaining = max(0, stats.f_bavail * stats.f_frsize - leave)
        while remaining > 0:
            chunk = min(remaining, 1 << 20)
            f.write(b"\0" * chunk)
            remaining -= chunk
    return filler


def _to_the_end(workdir: Path, name: str, outcome: Outcome) -> Run:
    """A run to the end. One that fails (e.g. Spark's "Python worker failed to connect
    back" on a machine at load 30) is started again once, as a user would, and counted
    as a failed run; a second failure is the run's result."""
    run = run_once(workdir, name)
    outcome.restarts += 1
    if run.ended.startswith("failed"):
        outcome.failures.append(f"a run to the end failed and was started again: {run.ended[-300:]}")
        run = run_once(workdir, name)
        outcome.restarts += 1
    return run


def _run_without_the_copy(workdir: Path, name: str, outcome: Outcome) -> None:
    """A run with the state directory gone after its changelog lost a committed frame:
    it must stop with ``ChangelogLost``; then the directory comes back."""
    kept = workdir / "state-kept"
    shutil.move(workdir / "state", kept)
    lost = run_once(workdir, name)
    outcome.restarts += 1
    line = next((x.strip() for x in lost.ended.splitlines() if "ChangelogLost: " in x), "")
    if line:
        outcome.damage[f"stopped: {line[:200]}"] += 1
    elif lost.ended == "done":
        outcome.mismatches.append("a copy restored without the lost changelog records went on")
    else:
        outcome.failures.append(f"without the copy, not a ChangelogLost stop: {lost.ended[-300:]}")
    shutil.rmtree(workdir / "state", ignore_errors=True)
    shutil.move(kept, workdir / "state")


def log_damage_run(spec: FaultTopology, root: Path, kind: str, seed: int = 0, spark=None) -> Outcome:
    """One run of ``kind`` (see the module docstring) on ``spec``."""
    reference = root / "reference"
    # the failure-free run of the first input, then of the later appends (the same for
    # every kind: made once per topology and copied)
    reference_run(spec, reference, seed, spark, later=(seed + 1,))
    workdir = root / "faulty"
    outcome = Outcome(f"{spec.name} {kind}")
    if kind == "full-disk" and not _mount_small_disk(workdir):
        outcome.failures.append("skipped: cannot mount a tmpfs here (needs root)")
        return outcome
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        # the run before the damage is failure-free: a copy of the reference's first run
        outcome.records = copy_reference(spec, (seed,), workdir)
        if kind == "input-tail":
            tear_last_frame(fullest_partition(workdir / "log", list(spec.inputs(seed))))
        elif kind in ("changelog-tail", "changelog-and-copy"):
            changelogs = [os.path.basename(p) for p in glob.glob(str(workdir / "log" / "*-changelog"))]
            tear_last_frame(fullest_partition(workdir / "log", changelogs))
        outcome.damage[kind] += 1
        outcome.records += produce_inputs(workdir, spec, seed + 1)  # later appends
        if kind == "changelog-and-copy":
            _run_without_the_copy(workdir, spec.name, outcome)
        if kind == "full-disk":
            filler = _fill(workdir)
            full = run_once(workdir, spec.name)
            outcome.restarts += 1
            if full.ended == "done":
                outcome.damage["full disk not hit"] += 1
            elif clear_stop(full.ended):
                outcome.damage[f"stopped: {clear_stop(full.ended)[:200]}"] += 1
            else:
                outcome.failures.append(f"on a full disk, not a clear stop: {full.ended[-300:]}")
            filler.unlink()
        killed = run_once(workdir, spec.name, "mid-batch", hit=1)
        outcome.restarts += 1
        if killed.ended == "killed":
            outcome.kills += 1
            outcome.points["mid-batch"] += 1
        elif killed.ended != "done":
            outcome.failures.append(f"after the damage: {killed.ended[-300:]}")
        final = _to_the_end(workdir, spec.name, outcome)
        if final.ended == "done":
            # Only now, with the damage repaired by a run that got to the end, the copies
            # are dropped: the stores come back from their changelogs. (Dropped before,
            # a copy can be the only holder of what a torn changelog lost.)
            shutil.rmtree(workdir / "state", ignore_errors=True)
            outcome.damage["lost state dir"] += 1
            final = _to_the_end(workdir, spec.name, outcome)
        if final.ended != "done":
            outcome.mismatches.append(f"the last run failed: {final.ended[-500:]}")
        else:
            outcome.mismatches.extend(compare(spec, reference, workdir))
            outcome.compared = True
        return outcome
    finally:
        if kind == "full-disk":
            subprocess.run(["umount", "-l", str(workdir)], capture_output=True)
