"""Sticky placement: each stateful stream task runs on the executor holding its store copy.

A stateful task's RocksDB copy lives on the machine that last ran it (under
``state_dir``); on any other executor the task first replays its changelog from where that
machine's copy stands (all of it, the first time). So on a cluster (not ``local[n]``: one
executor) the lowering gives a stateful stage one Spark task per stream task and puts its
input over an RDD whose partitions prefer the executor where the task last ran
(:func:`~streamlib.spark.internals.placed_rows`, streamlib's JVM piece in ``jvm/placement``);
Spark's delay scheduling (``spark.locality.wait.process``, 3 s by default) then runs it
there while that executor lives. Where each task did run is what the piece records and
this module reads after every pass: a task's home is where it last ran, so a task moves
only when it has to (its executor is gone, or busy past the locality wait) and then stays.

Tasks without a home (the first batch, or their executor is gone) get the live executor
holding the fewest homes of their stage, like Kafka Streams' sticky assignor; tasks with a
live home are never moved to even out the load (a move costs a restore).
``spark.streamlib.placement=off`` turns it off.
"""
from __future__ import annotations

import logging
from collections import Counter, deque
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession

from streamlib.runtime.task import task_id
from streamlib.spark import internals

log = logging.getLogger("streamlib")

#: Spark setting: ``off`` runs stateful tasks wherever Spark likes
SWITCH_CONF = "spark.streamlib.placement"
#: how many of the last passes :meth:`StickyPlacement.summary` lists
KEPT_PASSES = 100


def choose_locations(homes: list[Optional[str]], live: list[str]) -> list[Optional[str]]:
    """Where each of a stage's tasks should run: its home if that executor is live, else
    the live executor with the fewest tasks so far (None: no executor known).

    >>> choose_locations([None, None, None, None], ["a", "b"])
    ['a', 'b', 'a', 'b']
    >>> choose_locations(["b", "gone", "b", None], ["a", "b"])
    ['b', 'a', 'b', 'a']
    """
    if not live:
        return [None] * len(homes)
    load = Counter({executor: 0 for executor in live})
    chosen: list[Optional[str]] = [home if home in load else None for home in homes]
    load.update(home for home in chosen if home is not None)
    for i, home in enumerate(chosen):
        if home is None:
            # fewest first, then the order Spark lists them in: the same answer every time
            chosen[i] = home = min(live, key=lambda executor: (load[executor], live.index(executor)))
            load[home] += 1
    return chosen


def wanted(spark: SparkSession) -> bool:
    """Whether ``spark`` runs tasks on several executors and placement is not switched off."""
    master = spark.sparkContext.master
    if master == "local" or master.startswith("local["):
        return False
    return spark.conf.get(SWITCH_CONF, "on").lower() != "off"


class StickyPlacement:
    """Homes of the stateful stream tasks of one query, and what their runs add up to."""

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self.runs = internals.placement_runs(spark)
        #: task id -> Spark's location of the executor it last ran on
        self.homes: dict[str, str] = {}
        self.totals = Counter(task_runs=0, on_previous_executor=0, moves=0)
        self.passes: deque[dict] = deque(maxlen=KEPT_PASSES)

    @classmethod
    def start(cls, spark: SparkSession) -> Optional["StickyPlacement"]:
        """The placement of a query on ``spark``, None where it is not wanted or the JVM
        piece cannot be loaded (one log line: tasks then run wherever Spark likes)."""
        if not wanted(spark):
            return None
        if not internals.load_placement(spark):
            log.warning("streamlib: could not load %s; stateful tasks run wherever Spark puts them",
                        internals.PLACEMENT_JAR)
            return None
        placement = cls(spark)
        return placement if placement.runs is not None else None

    def go_on_from(self, earlier: "StickyPlacement") -> None:
        """Keep the homes and counts of the application's ``earlier`` query (stores stay
        where they are between two starts in one driver)."""
        self.homes = dict(earlier.homes)
        self.totals = earlier.totals.copy()
        self.passes = deque(earlier.passes, maxlen=KEPT_PASSES)

    def place(self, rows: DataFrame, sub_id: int, partitions: int) -> DataFrame:
        """``rows`` (one partition per stream task of sub-topology ``sub_id``), each
        partition preferring its task's home."""
        homes = [self.homes.get(task_id(sub_id, p)) for p in range(partitions)]
        locations = choose_locations(homes, internals.live_executors(self.spark))
        return internals.placed_rows(rows, str(sub_id), locations, self.runs)

    def record(self, batch_id: int, reports: dict[str, dict]) -> dict[str, dict]:
        """Read where the pass's placed tasks ran (its task ``reports`` give their
        restored records); return ``{task id: {"executor", "host", "previous_executor",
        "moved"}}``."""
        ran: dict[str, dict] = {}
        for line in internals.take_placement_runs(self.spark, self.runs):
            sub_id, partition, executor, host = line.split(" ")
            task = task_id(int(sub_id), int(partition))
            location = f"executor_{host}_{executor}"
            previous = self.homes.get(task)
            ran[task] = {"executor": executor, "host": host,
                         "previous_executor": None if previous is None else _executor_of(previous),
                         "moved": previous is not None and previous != location}
            self.homes[task] = location
        moved = sorted(task for task, where in ran.items() if where["moved"])
        self.totals.update(task_runs=len(ran), moves=len(moved),
                           on_previous_executor=sum(1 for w in ran.values()
                                                    if w["previous_executor"] is not None and not w["moved"]))
        self.passes.append({"batch": batch_id, "task_runs": len(ran), "moved": moved,
                            "restored_records": sum(int(reports.get(task, {}).get("restored_records", 0))
                                                    for task in ran)})
        return ran

    def summary(self) -> dict[str, Any]:
        """``metrics()["placement"]``: run counts, each task's executor, the last passes."""
        return {**self.totals, "executors": {task: _executor_of(home) for task, home in sorted(self.homes.items())},
                "passes": list(self.passes)}


def _executor_of(location: str) -> str:
    """The executor id in Spark's location ``executor_<host>_<id>``."""
    return location.rsplit("_", 1)[1]
