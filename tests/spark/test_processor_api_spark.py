"""User processors through Spark: a ``process``/``process_values`` topology with a store
and both kinds of punctuation gives the driver's results over several micro-batches and
a restart; its store is queryable like a DSL store."""
from __future__ import annotations

import time

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from streamlib import Consumed, FixedKeyProcessor, Processor, Produced, PunctuationType, Record, Serdes, Stores, \
    Streams, StreamsBuilder
from both_engines import Input, run_driver
from engine import Workspace

S, L = Serdes.string(), Serdes.long()
TICK_MS = 100


class CountAndTick(Processor):
    """Counts records per key in ``counts``; every 100 ms of stream time forwards each
    key's count (to ``ticks``); at every wall-clock punctuation records the time it
    fired at (to ``wall``)."""

    def init(self, context):
        self.context = context
        self.counts = context.get_state_store("counts")
        context.schedule(TICK_MS, PunctuationType.STREAM_TIME, self.stream_tick)
        context.schedule(1, PunctuationType.WALL_CLOCK_TIME, self.wall_tick)

    def process(self, record):
        count = (self.counts.get(record.key) or 0) + 1
        self.counts.put(record.key, count)
        self.context.forward(record.with_value(str(count)), "counted")

    def stream_tick(self, time):
        for key, count in self.counts.all():
            self.context.forward(Record(key, f"{count}@{time}", time), "ticked")

    def wall_tick(self, time):
        self.context.forward(Record("wall", str(time), max(self.context.current_stream_time_ms, 0)), "walled")


class Tagged(FixedKeyProcessor):
    def __init__(self, tag):
        self.tag = tag

    def process(self, record):
        self.context.forward(record.with_value(f"{record.value}{self.tag}"))


def topology():
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("counts"), S, L))
    processed = builder.stream("events", consumed=Consumed.with_(S, S)).process(CountAndTick, "counts",
                                                                             named="count-and-tick")
    produced = Produced.with_(S, S)
    processed.process_values(lambda: Tagged("#"), named="counted").to("counted", produced=produced)
    processed.process_values(lambda: Tagged(""), named="ticked").to("ticks", produced=produced)
    processed.process_values(lambda: Tagged(""), named="walled").to("wall", produced=produced)
    return builder.build()


def records(start: int, n: int) -> list[tuple]:
    return [(f"k{i % 3}", "v", start + 37 * i) for i in range(n)]


def test_process_topology_matches_the_driver_across_batches_and_a_restart(spark, tmp_path):
    workspace = Workspace(tmp_path)
    first, second = records(0, 30), records(30 * 37, 25)
    outputs = {topic: (S, S) for topic in ("counted", "ticks")}
    driver = run_driver(topology(), [Input("events", first + second)], outputs,
                        workspace.config(cache_max_bytes=0))
    for run, batch in enumerate((first, second)):   # a restart in between, from the changelogs
        workspace.produce("events", batch, partitions=1)
        app = workspace.run(spark, topology(), max_records_per_batch=7, cache_max_bytes=0)
        try:
            stored = dict(app.store("counts").all())
        finally:
            app.stop()
        if run == 0:
            app.cleanup()   # local state lost: stores and punctuation schedules are restored
    assert stored == driver.stores["counts"] == {"k0": 19, "k1": 18, "k2": 18}
    assert app.metrics()["restored_records"] > 0
    assert_same_outputs(workspace, driver, outputs)
    ticks = workspace.read("ticks", S, S)
    assert len({(k, ts) for k, _, ts in ticks}) == len(ticks)   # each punctuation once
    # wall-clock punctuations: at batch boundaries, each at a later time than the last
    wall = [int(v) for _, v, _ in workspace.read("wall", S, S)]
    assert len(wall) >= 2 and wall == sorted(set(wall))


def assert_same_outputs(workspace, driver, outputs) -> None:
    for topic in outputs:
        sparked = workspace.read(topic, S, S)
        assert sparked == [(k, v, ts) for k, v, ts, _ in driver.outputs[topic]], topic


# no shrinking: each step would be another Spark run; the failing example is printed as is
@settings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.tuples(st.sampled_from(["k0", "k1", "k2", "k3"]), st.just("v"),
                                 st.integers(0, 600)), min_size=1, max_size=40),
       per_batch=st.integers(2, 15), cached=st.booleans())
def test_spark_matches_the_driver_on_random_inputs(spark, tmp_path_factory, events, per_batch, cached):
    """The Spark-vs-driver property for user processors: a store, stream-time punctuation
    (out-of-order timestamps included) and process_values, over micro-batches of random size."""
    workspace = Workspace(tmp_path_factory.mktemp("procapi"))
    outputs = {topic: (S, S) for topic in ("counted", "ticks")}
    driver = run_driver(topology(), [Input("events", events)], outputs, workspace.config(cache_max_bytes=0))
    workspace.produce("events", events, partitions=1)
    app = workspace.run(spark, topology(), max_records_per_batch=per_batch,
                        cache_max_bytes=10_000 if cached else 0)
    try:
        assert dict(app.store("counts").all()) == driver.stores["counts"]
    finally:
        app.stop()
    assert_same_outputs(workspace, driver, outputs)


class WallClockOnly(Processor):
    """Forwards each wall-clock punctuation's time (to ``wall``)."""

    def init(self, context):
        self.context = context
        context.schedule(1, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def process(self, record):
        pass

    def tick(self, time):
        self.context.forward(Record("wall", str(time), 0))


def wall_topology():
    builder = StreamsBuilder()
    (builder.stream("events", consumed=Consumed.with_(S, S)).process(WallClockOnly)
     .to("wall", produced=Produced.with_(S, S)))
    return builder.build()


def test_wall_clock_punctuators_fire_without_input_while_running(spark, tmp_path):
    workspace = Workspace(tmp_path)
    workspace.produce("events", records(0, 3), partitions=1)
    app = Streams(wall_topology(), workspace.config(commit_interval=200), spark=spark)

    def punctuations() -> int:
        return len(workspace.read("wall", S, S))

    app.start()
    try:
        _wait_for(lambda: app.metrics()["records_in"] == 3 and punctuations() >= 1, app)
        first = punctuations()
        # no input arrives any more; batches (and punctuations) go on
        _wait_for(lambda: punctuations() >= first + 3, app)
    finally:
        app.stop()
    # the same application then processes what is available and returns (its clock is frozen)
    workspace.produce("events", records(1000, 2), partitions=1)
    before = punctuations()
    rerun = workspace.run(spark, wall_topology())
    rerun.stop()
    assert rerun.metrics()["records_in"] == 2
    assert punctuations() > before   # its batch punctuated too


def _wait_for(condition, app, timeout: float = 240.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert app.is_running, app._query.exception()
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)
