"""Sticky placement: each stateful stream task runs on the executor holding its store copy.

A stateful task's RocksDB copy lives on the machine that last ran it (under
``state_dir``); on any other executor the task first replays its changelog from where that
machine's copy stands (all of it, the first time). So on a cluster (not ``local[n]``: one
executor) the lowering puts a stateful stage's input (one partition per stream task) over
an RDD whose partitions prefer the executor where their task last ran, the tasks of one
executor packed into one Spark task per core of it (:func:`pack`;
:func:`~streamlib.spark.internals.packed_rows`, streamlib's JVM piece in ``jvm/placement``);
Spark's delay scheduling (``spark.locality.wait.process``, 3 s by default) then runs them
there while that executor lives. Where each task did run is what the piece records and
this module reads after every pass: a task's home is where it last ran, so a task moves
only when it has to (its executor is gone, or busy past the locality wait) and then stays.

Tasks without a home (the first batch, or their executor is gone) get a live executor
holding one of their standby copies if there is one (:mod:`streamlib.spark.standby`), else
the live executor holding the fewest homes of their stage, like Kafka Streams' sticky
assignor; tasks with a live home are never moved to even out the load (a move costs a
restore). ``spark.streamlib.placement=off`` turns it off (and standbys with it).
"""
from __future__ import annotations

import logging
from collections import Counter, deque
from typing import Any, Optional

from pyspark.sql import DataFrame, SparkSession

from streamlib.runtime.task import task_id
from streamlib.spark import internals
from streamlib.spark.standby import Standbys

log = logging.getLogger("streamlib")

#: Spark setting: ``off`` runs stateful tasks wherever Spark likes
SWITCH_CONF = "spark.streamlib.placement"
#: how many of the last passes :meth:`StickyPlacement.summary` lists
KEPT_PASSES = 100


def choose_locations(homes: list[Optional[str]], live: list[str],
                     standbys: Optional[list[list[str]]] = None) -> list[Optional[str]]:
    """Where each of a stage's tasks should run: its home if that executor is live, else
    the live executor holding one of its ``standbys`` (each task's, least lag first) with
    the fewest tasks so far, else the live executor with the fewest tasks so far (None:
    no executor known).

    >>> choose_locations([None, None, None, None], ["a", "b"])
    ['a', 'b', 'a', 'b']
    >>> choose_locations(["b", "gone", "b", None], ["a", "b"])
    ['b', 'a', 'b', 'a']
    >>> choose_locations(["gone", "b"], ["a", "b", "c"], [["b", "c"], []])
    ['c', 'b']
    """
    if not live:
        return [None] * len(homes)
    load = Counter({executor: 0 for executor in live})
    chosen: list[Optional[str]] = [home if home in load else None for home in homes]
    load.update(home for home in chosen if home is not None)
    for i, home in enumerate(chosen):
        if home is None:
            warm = [executor for executor in (standbys[i] if standbys else ()) if executor in load]
            # fewest first, then the standby with the least lag or the order Spark lists
            # them in: the same answer every time
            order = warm or live
            chosen[i] = home = min(order, key=lambda executor: (load[executor], order.index(executor)))
            load[home] += 1
    return chosen


def pack(locations: list[Optional[str]], slots: int) -> tuple[list[int], list[Optional[str]]]:
    """Spark tasks for a stage's stream tasks placed at ``locations``: the tasks sharing an
    executor split round robin over at most ``slots`` Spark tasks there (one per core, as
    ``local[n]`` packs them), a task without a location alone. Returns each stream task's
    Spark task and each Spark task's location.

    >>> pack(["a", "b", "a", "b"], 1)
    ([0, 1, 0, 1], ['a', 'b'])
    >>> pack(["a", "a", "a", None], 2)
    ([0, 1, 0, 2], ['a', 'a', None])
    """
    group_of: list[int] = []
    groups: list[Optional[str]] = []
    at: dict[str, list[int]] = {}   # location -> its Spark tasks
    placed: Counter = Counter()      # location -> stream tasks so far
    for location in locations:
        if location is None:
            group_of.append(len(groups))
            groups.append(None)
            continue
        mine = at.setdefault(location, [])
        if len(mine) < slots:
            mine.append(len(groups))
            groups.append(location)
        group_of.append(mine[placed[location] % slots])
        placed[location] += 1
    return group_of, groups


def choose_standbys(actives: list[Optional[str]], previous: list[list[str]], live: list[str],
                    replicas: int) -> list[list[str]]:
    """Where each task (running at ``actives[i]``) keeps its ``replicas`` standby copies:
    those of ``previous[i]`` still live and not its active executor first (a copy there is
    warm), then live executors other than its active one, on other hosts first, with the
    fewest copies (active or standby) so far. Fewer than ``replicas`` where there are not
    enough executors; none for a task without an executor.

    >>> choose_standbys(["executor_h_1", "executor_h_2"], [[], []], ["executor_h_1", "executor_h_2"], 1)
    [['executor_h_2'], ['executor_h_1']]
    >>> choose_standbys(["executor_h_2"], [["executor_h_2", "executor_h_3"]],
    ...                 ["executor_h_1", "executor_h_2", "executor_h_3"], 2)
    [['executor_h_3', 'executor_h_1']]
    >>> choose_standbys(["executor_h_1"], [[]], ["executor_h_1"], 1)
    [[]]
    """
    load = Counter({executor: 0 for executor in live})
    load.update(active for active in actives if active in load)
    chosen: list[list[str]] = []
    for active, before in zip(actives, previous):
        kept = [] if active is None else [e for e in dict.fromkeys(before) if e in load and e != active][:replicas]
        load.update(kept)
        chosen.append(kept)
    for active, standbys in zip(actives, chosen):
        if active is None:
            continue
        while len(standbys) < replicas:
            free = [e for e in live if e != active and e not in standbys]
            if not free:
                break
            pick = min(free, key=lambda e: (_host_of(e) == _host_of(active), load[e], live.index(e)))
            standbys.append(pick)
            load[pick] += 1
    return chosen


#: (Spark application, replicas) already told that their standby copies are ignored
_IGNORED_SAID: set[tuple[str, int]] = set()


def wanted(spark: SparkSession) -> bool:
    """Whether ``spark`` runs tasks on several executors and placement is not switched off."""
    if not is_cluster(spark):
        return False
    return spark.conf.get(SWITCH_CONF, "on").lower() != "off"


class StickyPlacement:
    """Homes of the stateful stream tasks of one query, and what their runs add up to."""

    def __init__(self, spark: SparkSession, standby_replicas: int = 0):
        self.spark = spark
        self.runs = internals.placement_runs(spark)
        #: the standby copies (``num_standby_replicas``), None without
        self.standbys = Standbys(spark, standby_replicas) if standby_replicas > 0 else None
        #: task id -> per store, the changelog offset its active copy reflects
        self.offsets: dict[str, dict[str, int]] = {}
        #: each move of a task (the last ones): from, to, onto a standby, records restored
        self.moved_tasks: deque[dict] = deque(maxlen=KEPT_PASSES)
        #: task id -> Spark's location of the executor it last ran on
        self.homes: dict[str, str] = {}
        self.totals = Counter(task_runs=0, on_previous_executor=0, moves=0)
        self.passes: deque[dict] = deque(maxlen=KEPT_PASSES)

    @classmethod
    def start(cls, spark: SparkSession, standby_replicas: int = 0) -> Optional["StickyPlacement"]:
        """The placement of a query on ``spark`` (with ``standby_replicas`` standby copies
        of each task), None where it is not wanted or the JVM piece cannot be loaded (one
        log line: tasks then run wherever Spark likes, and keep no standbys)."""
        if not wanted(spark):
            said = (spark.sparkContext.applicationId, standby_replicas)
            if standby_replicas and said not in _IGNORED_SAID:   # once per application, not per start
                _IGNORED_SAID.add(said)
                log.warning("streamlib: num_standby_replicas=%d ignored: %s", standby_replicas,
                            "placement is off (spark.streamlib.placement)" if is_cluster(spark) else
                            f"{spark.sparkContext.master} runs every task in one executor, there is no "
                            f"other to keep a standby copy on")
            return None
        if not internals.load_placement(spark):
            log.warning("streamlib: could not load %s; stateful tasks run wherever Spark puts them%s",
                        internals.PLACEMENT_JAR, ", without standby copies" if standby_replicas else "")
            return None
        placement = cls(spark, standby_replicas)
        return placement if placement.runs is not None else None

    def go_on_from(self, earlier: "StickyPlacement") -> None:
        """Keep the homes, standby copies and counts of the application's ``earlier``
        query (stores stay where they are between two starts in one driver)."""
        self.homes = dict(earlier.homes)
        self.totals = earlier.totals.copy()
        self.passes = deque(earlier.passes, maxlen=KEPT_PASSES)
        self.offsets = dict(earlier.offsets)
        self.moved_tasks = deque(earlier.moved_tasks, maxlen=KEPT_PASSES)
        if self.standbys is not None and earlier.standbys is not None:
            earlier.standbys.plans = self.standbys.plans
            self.standbys = earlier.standbys

    def place(self, rows: DataFrame, sub_id: int, partitions: int) -> DataFrame:
        """``rows`` (one partition per stream task of sub-topology ``sub_id``), each
        partition preferring its task's home."""
        tasks = [task_id(sub_id, p) for p in range(partitions)]
        homes = [self.homes.get(task) for task in tasks]
        standbys = None if self.standbys is None else \
            [self.standbys.warm(task, self.offsets.get(task, {})) for task in tasks]
        live = internals.live_executors(self.spark)
        locations = choose_locations(homes, live, standbys)
        group_of, groups = pack(locations, self._slots(len(live)))
        if len(groups) == len(locations):
            return internals.placed_rows(rows, str(sub_id), locations, self.runs)
        return internals.packed_rows(rows, str(sub_id), group_of, groups, self.runs)

    def _slots(self, executors: int) -> int:
        """Tasks an executor runs at once: ``spark.executor.cores`` (else the cluster's
        cores shared evenly) over ``spark.task.cpus``."""
        conf = self.spark.sparkContext.getConf()
        cores = int(conf.get("spark.executor.cores", "0")) or \
            self.spark.sparkContext.defaultParallelism // max(1, executors)
        return max(1, cores // max(1, int(conf.get("spark.task.cpus", "1"))))

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
            if ran[task]["moved"]:
                warm = [] if self.standbys is None else self.standbys.assigned.get(task, [])
                self.moved_tasks.append({"task": task, "batch": batch_id, "from": _executor_of(previous),
                                         "to": executor, "onto_standby": location in warm,
                                         "restored_records": int(reports.get(task, {}).get("restored_records", 0))})
            self.homes[task] = location
        moved = sorted(task for task, where in ran.items() if where["moved"])
        self.totals.update(task_runs=len(ran), moves=len(moved),
                           on_previous_executor=sum(1 for w in ran.values()
                                                    if w["previous_executor"] is not None and not w["moved"]))
        self.passes.append({"batch": batch_id, "task_runs": len(ran), "moved": moved,
                            "restored_records": sum(int(reports.get(task, {}).get("restored_records", 0))
                                                    for task in ran)})
        return ran

    def after_batch(self, batch_id: int, reports: dict[str, dict]) -> None:
        """After micro-batch ``batch_id`` (its tasks' ``reports``): keep the offsets its
        copies reflect, choose the standbys and start catching them up (in the background)."""
        for task, metrics in reports.items():
            if metrics.get("changelog_offsets"):
                self.offsets[task] = dict(metrics["changelog_offsets"])
        if self.standbys is None:
            return
        live = internals.live_executors(self.spark)
        self.standbys.warn_if_short(len(live))
        tasks = sorted(self.homes)
        chosen = choose_standbys([self.homes[task] for task in tasks],
                                 [self.standbys.assigned.get(task, []) for task in tasks], live,
                                 self.standbys.replicas)
        self.standbys.start_round(batch_id, dict(zip(tasks, chosen)), _sub_and_partition)

    def stop(self) -> None:
        """Let a running standby round finish (see :meth:`Standbys.stop`)."""
        if self.standbys is not None:
            self.standbys.stop()

    def summary(self) -> dict[str, Any]:
        """``metrics()["placement"]``: run counts, each task's executor, the last passes,
        the moves and what they restored, the standby copies and their lag."""
        summary = {**self.totals, "executors": {task: _executor_of(home) for task, home in sorted(self.homes.items())},
                   "passes": list(self.passes), "moved_tasks": list(self.moved_tasks)}
        if self.standbys is not None:
            summary["standbys"] = self.standbys.summary(lambda task: self.offsets.get(task, {}))
        return summary


def _executor_of(location: str) -> str:
    """The executor id in Spark's location ``executor_<host>_<id>``."""
    return location.rsplit("_", 1)[1]


def _host_of(location: Optional[str]) -> Optional[str]:
    """The host in Spark's location ``executor_<host>_<id>``."""
    return None if location is None else location[len("executor_"):].rsplit("_", 1)[0]


def _sub_and_partition(task: str) -> tuple[int, int]:
    """``(sub-topology, partition)`` of a task id (:func:`task_id`)."""
    sub_id, partition = task.split("_")
    return int(sub_id), int(partition)


def is_cluster(spark: SparkSession) -> bool:
    """Whether ``spark`` may run tasks on several executors (not ``local[n]``)."""
    master = spark.sparkContext.master
    return not (master == "local" or master.startswith("local["))
