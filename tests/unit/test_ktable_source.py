"""builder.table(): a topic read as a table (after KTableSourceTest)."""
from streamlib import Consumed, Materialized, Produced, StreamsBuilder

from streams_helpers import APP, I, S, driver_for, kvt


def _table_to_stream(materialized=None):
    builder = StreamsBuilder()
    table = builder.table("in", consumed=Consumed.with_(S, I), materialized=materialized)
    table.to_stream().to("out", produced=Produced.with_(S, I))
    return builder, table


def test_every_update_and_delete_is_forwarded_with_its_timestamp():
    builder, _ = _table_to_stream()
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        for key, value, ts in [("A", 1, 10), ("B", 2, 11), ("C", 3, 12), ("D", 4, 13),
                               ("A", None, 14), ("B", None, 15)]:
            inp.pipe_input(key, value, ts)
        out = driver.create_output_topic("out", S, I).read_records_to_list()
    assert kvt(out) == [("A", 1, 10), ("B", 2, 11), ("C", 3, 12), ("D", 4, 13),
                        ("A", None, 14), ("B", None, 15)]


def test_store_holds_the_latest_value_per_key_and_deletes_on_tombstones():
    builder, table = _table_to_stream(Materialized.as_("source-store"))
    assert table.query_name == "source-store"
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        inp.pipe_input("A", 1, 10)
        inp.pipe_input("B", 2, 11)
        inp.pipe_input("A", 3, 5)      # out of order: still replaces (Kafka logs a warning)
        inp.pipe_input("C", 4, 12)
        inp.pipe_input("C", None, 13)
        store = driver.get_key_value_store("source-store")
        assert list(store.all()) == [("A", 3), ("B", 2)]
        assert store.get("A") == 3 and store.get("C") is None
        assert store.get_with_timestamp("A") == (3, 5)
        assert store.approximate_num_entries() >= 2  # an estimate, like RocksDB's


def test_null_keys_are_dropped_and_counted():
    builder, _ = _table_to_stream(Materialized.as_("s"))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, I)
        inp.pipe_input(None, 1, 1)
        inp.pipe_input("A", 2, 2)
        out = driver.create_output_topic("out", S, I).read_records_to_list()
        assert kvt(out) == [("A", 2, 2)]
        assert driver.metrics()["dropped_records"] == 1
        assert list(driver.get_key_value_store("s").all()) == [("A", 2)]


def test_delete_of_a_missing_key_is_still_forwarded():
    builder, _ = _table_to_stream()
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, I).pipe_input("X", None, 3)
        assert kvt(driver.create_output_topic("out", S, I).read_records_to_list()) == [("X", None, 3)]


def test_unnamed_table_is_not_queryable_but_still_has_a_logged_store():
    builder, table = _table_to_stream()
    assert table.query_name is None
    topology = builder.build()
    (store,) = topology.stores
    assert f"{APP}-{store}-changelog" in topology.describe(APP)


def test_materialized_serdes_override_consumed_ones_for_the_store():
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S),
                  materialized=Materialized.as_("m").with_value_serde(S).with_key_serde(S))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "v", 1)
        assert driver.get_key_value_store("m").get("k") == "v"


def test_table_headers_pass_through_to_the_stream():
    builder, _ = _table_to_stream()
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, I).pipe_input("A", 1, 1, headers={"h": b"x"})
        (rec,) = driver.create_output_topic("out", S, I).read_records_to_list()
    assert rec.headers == {"h": b"x"}


def test_with_caching_a_commit_emits_the_latest_value_per_changed_key(tmp_path):
    from streams_helpers import run_cached_batch
    builder, _ = _table_to_stream(Materialized.as_("cached"))
    rows = [("in", b"A", I.serialize(1), 1), ("in", b"B", I.serialize(2), 2), ("in", b"A", I.serialize(3), 3),
            ("in", b"C", I.serialize(4), 4), ("in", b"C", None, 5), ("in", b"D", None, 6)]
    out = run_cached_batch(builder.build(), rows, tmp_path)
    # C was created and deleted within the commit, D deleted without existing: nothing
    assert [(ts, S.deserialize(k), I.deserialize(v)) for _, ts, k, v in out] == [(2, "B", 2), (3, "A", 3)]
