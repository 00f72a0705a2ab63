"""A cached table that feeds both a looked-up store and other steps (issue 40, the parity
soak's foreign-key self-join): every update reaches the looked-up store at once, the
other steps get the latest update per key once per commit (``streamlib.processors.routes``),
as Kafka Streams computes the lookup from the cached table's store and forwards its
cache's flush to the rest."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores

S = Serdes.string()


def _next_key(value):
    return None if value is None else "abc"[("abc".index(value[0]) + 1) % 3]


def self_join(right_ops: str):
    """``t1.filter.filter.left_join(<t1 through right_ops>, foreign_key=value)``:
    ``"filter.map_values"`` shares the store-less filter with the left side, ``"map_values.filter"``
    only the table (the parity soak's two cases)."""
    builder = StreamsBuilder()
    t1 = builder.table("t1", consumed=Consumed.with_(S, S))
    filtered = t1.filter(lambda k, v: v != "b")
    if right_ops == "filter.map_values":
        right = filtered.map_values(_next_key)
    else:
        right = t1.map_values(_next_key).filter(lambda k, v: v != "b")
    (filtered.filter(lambda k, v: v != "b")
     .left_join(right, lambda a, b: f"{a}|{b}", foreign_key_extractor=lambda v: v,
                materialized=Materialized.as_("store0"))
     .to_stream().to("out0", produced=Produced.with_(S, S)))
    return builder.build()


def run_commit(tmp_path, topology, records, cache_max_bytes=None):
    """``records`` ((key, value) of t1) through t1's task in one commit: the rows it
    wrote to each topic, and what the right side's lookup store held after each record."""
    sub = topology.subtopology_of(next(n.name for n in topology if n.spec.source and "t1" in n.params.topics))
    config = StreamsConfig(application_id="app", state_dir=str(tmp_path),
                           **({} if cache_max_bytes is None else {"cache_max_bytes": cache_max_bytes}))
    task = Task(topology, sub, 0, config)
    lookup = next(n.params.store for n in topology if n.kind == "fk_subscription_join")
    stores = open_task_stores(tmp_path / "stores", task.store_specs())
    seen = []
    try:
        task.begin(stores, 0)
        for offset, (key, value) in enumerate(records):
            task.process("t1", 0, offset, 1000 + offset, key.encode(), None if value is None else value.encode())
            row = task.context.stores[lookup].get(key)
            seen.append(None if row is None else row[0])
        task.commit()
        written: dict[str, list] = {}
        for topic, _, _, key, value, _ in task.take_output():
            written.setdefault(topic.split("-0")[0], []).append((key, value))
        return written, seen
    finally:
        stores.close()


@pytest.mark.parametrize("right_ops", ["filter.map_values", "map_values.filter"])
def test_the_looked_up_store_sees_every_update_and_the_left_side_one_per_commit(tmp_path, right_ops):
    topology = self_join(right_ops)
    written, seen = run_commit(tmp_path / "cached", topology, [("b", "c"), ("b", "a"), ("b", "c")])
    # the right table (c -> a; a -> b, filtered out after the map) is current at every record
    expected = ["a", "b" if right_ops == "filter.map_values" else None, "a"]
    assert seen == expected
    # one left value and one subscription for the commit's last update of b
    assert written["KTABLE-FK-JOIN-LEFT-VALUES"] == [(b"b", b"c")]
    assert [key for key, _ in written["KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION"]] == [b"c"]
    # without caching: every update, as before
    uncached, seen = run_commit(tmp_path / "uncached", topology, [("b", "c"), ("b", "a"), ("b", "c")], 0)
    assert seen == expected
    assert uncached["KTABLE-FK-JOIN-LEFT-VALUES"] == [(b"b", b"c"), (b"b", b"a"), (b"b", b"c")]


@pytest.mark.parametrize("right_ops", ["filter.map_values", "map_values.filter"])
def test_a_left_row_set_and_deleted_in_one_commit_sends_nothing(tmp_path, right_ops):
    """The soak's case: t1's b set to c and deleted in one commit. Kafka Streams with
    caching sends no subscription (``test_a_foreign_key_self_join_of_a_row_set_and_deleted_in_one_commit_sends_nothing``);
    t1 forwarding every update at once (as it did for the lookup) subscribed, and the
    answer was dropped as stale."""
    written, seen = run_commit(tmp_path, self_join(right_ops), [("b", "c"), ("b", None)])
    assert seen == ["a", None]
    assert not any(topic.startswith("KTABLE-FK-JOIN") for topic in written), written


def test_a_step_shared_by_both_routes_is_copied_for_the_flush(tmp_path):
    topology = self_join("filter.map_values")
    sub = topology.subtopology_of(next(n.name for n in topology if n.kind == "table_source"))
    task = Task(topology, sub, 0, StreamsConfig(application_id="app", state_dir=str(tmp_path)))
    copies = [name for name in task.processors if name.endswith("~cached")]
    assert len(copies) == 1
    shared = task.processors[copies[0].removesuffix("~cached")]
    source = next(p for p in task.processors.values() if p.node.kind == "table_source")
    assert source.caching and source.at_once == (shared,) and source.cached_route == [task.processors[copies[0]]]
    # the original goes to the right side's map_values only, the copy to the left side
    assert [c.node.kind for c in shared.children] == ["table_map_values"]
    assert [c.node.kind for c in task.processors[copies[0]].children] == ["table_filter"]
