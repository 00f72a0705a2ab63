"""The fault harness's run log (one JSON line per run) and its summary table."""
from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

#: Each phase's time is from the end of the one before it.
_PREVIOUS = {"session": "", "app": "session", "first-batch": "app"}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


TABLE_HEAD = ("| topology | kills | restarts | records | mismatches | failed runs | restart time: mean to "
              "first commit (JVM up / app built / first batch) | damage |\n|---|---|---|---|---|---|---|---|")


def table_row(topology: str, kills: int, restarts: int, records: int, mismatches: int,
              restart_seconds: list[float], phases: dict[str, list[float]], compared: bool = True,
              failures: int = 0, damage: dict[str, int] | None = None) -> str:
    split = " / ".join(f"{_mean(phases.get(p, [])):.0f}" for p in ("session", "app", "first-batch"))
    checked = "" if compared else " (not compared yet: run cut short)"
    damaged = ", ".join(f"{kind[:90]} {n}".replace("|", "/") for kind, n in sorted((damage or {}).items()))
    return (f"| {topology} | {kills} | {restarts} | {records} | {mismatches}{checked} | {failures} | "
            f"{_mean(restart_seconds):.0f} s ({split} s) | {damaged or '-'} |")


def _log(log: Path | None, entry: dict, verbose: bool) -> None:
    """One line per run, appended to ``log`` as JSON with the time it ended (``at``,
    epoch seconds; a cut-short run still has them all: ``harness.py --table LOG`` makes
    the summary table from them)."""
    entry = {**entry, "at": round(time.time(), 1)}
    if log is not None:
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\n")
    if verbose:
        print(json.dumps(entry)[:400], flush=True)


def table_from_log(log: Path) -> str:
    """The summary table from a run log (complete or cut short)."""
    rows: dict[str, dict] = {}
    for entry in map(json.loads, filter(None, log.read_text().splitlines())):
        row = rows.setdefault(entry["topology"], dict(kills=0, restarts=0, records=0, mismatches=0,
                                                      restart_seconds=[], phases=defaultdict(list),
                                                      compared=False, failures=0, damage={}))
        row["records"] = max(row["records"], entry.get("records", 0))
        if entry["run"] == "reference":
            continue
        if entry["run"] == "damage":
            row.update(kills=entry["kills"], restarts=entry["restarts"], mismatches=len(entry["mismatches"]),
                       failures=len(entry["failures"]), compared=entry["compared"],
                       damage=entry["damage_totals"])
            continue
        if entry.get("ended") == "killed":
            row["kills"] += 1
        if entry["run"] == "final" or entry.get("restart"):
            row["restarts"] += 1
            phases = entry.get("phases", {})
            if "first-batch" in phases:
                row["restart_seconds"].append(phases["first-batch"])
                for name in ("session", "app", "first-batch"):
                    if name in phases:
                        row["phases"][name].append(phases[name] - phases.get(_PREVIOUS[name], 0.0))
        if str(entry.get("ended", "")).startswith("failed"):
            row["failures"] += 1
        if entry["run"] == "final":
            row["mismatches"] += len(entry["mismatches"])
            row["compared"] = entry["ended"] == "done"
            row["damage"] = entry.get("damage_totals", {})
    return "\n".join([TABLE_HEAD] + [table_row(name, **row) for name, row in rows.items()])
