"""``Streams.store()`` and ``Streams.table()`` of window and session stores: one view over
every task's copy, of the store's kind; tables with window_start/window_end columns."""
from chispa import assert_df_equality

from streamlib import Serdes, Streams, StreamsConfig
from streamlib.processors.stores import SessionStoreView, WindowStoreView, typed_store
from streamlib.state import StoreSpec, open_task_stores
from streamlib.topology import Node, StoreDef, Topology
from streamlib.windows import Window, Windowed

S, L = Serdes.string(), Serdes.long()
STORES = {"w": StoreDef("w", kind="window", key_serde=S, value_serde=L, window_size_ms=60_000),
          "s": StoreDef("s", kind="session", key_serde=S, value_serde=L)}


def topology():
    """One sub-topology owning both stores (what the windowed operators will build)."""
    return Topology({"src": Node("src", "source", params={"topics": ["in"]}, stores=("w", "s"))},
                    STORES)


def write_task_copies(config, sub_id):
    """Partition 0 holds keys a, ab; partition 1 holds b."""
    for partition, keys in ((0, ["a", "ab"]), (1, ["b"])):
        specs = [StoreSpec(name, logging=False) for name in STORES]
        with open_task_stores(config.task_state_dir(f"{sub_id}_{partition}"), specs) as stores:
            stores.begin(0)
            w = typed_store(STORES["w"], stores["w"], config)
            s = typed_store(STORES["s"], stores["s"], config)
            for i, key in enumerate(keys):
                w.put(key, 0, 10 + i, timestamp=5)
                w.put(key, 60_000, 20 + i, timestamp=60_005)
                s.put(key, Window(100, 200 + partition), i, timestamp=200)
            w.write_back()
            s.write_back()
            stores.commit()


def test_store_and_table_of_window_and_session_stores(spark, tmp_path):
    config = StreamsConfig(application_id="wq", bootstrap=f"local://{tmp_path}/topics",
                           state_dir=str(tmp_path / "state"))
    app = Streams(topology(), config, spark=spark)
    write_task_copies(config, app.topology.subtopologies[0].id)
    try:
        windows = app.store("w")
        assert isinstance(windows, WindowStoreView) and isinstance(app.store("s"), SessionStoreView)
        assert windows.fetch("ab", 0, 60_000) == [(0, 11), (60_000, 21)]
        assert windows.fetch("b", 1, 60_000) == [(60_000, 20)]
        assert [(x.key, x.window.start) for x, _ in windows.fetch_all(0, 0)] == [
            ("a", 0), ("ab", 0), ("b", 0)]
        assert app.store("s").fetch_sessions("b") == [(Windowed("b", Window(100, 201)), 0)]

        expected = spark.createDataFrame(
            [("a", 0, 60_000, 10), ("a", 60_000, 120_000, 20), ("ab", 0, 60_000, 11),
             ("ab", 60_000, 120_000, 21), ("b", 0, 60_000, 10), ("b", 60_000, 120_000, 20)],
            "key string, window_start bigint, window_end bigint, value bigint")
        assert_df_equality(app.table("w"), expected, ignore_row_order=True)
        assert_df_equality(spark.sql("SELECT * FROM w"), expected, ignore_row_order=True)
        sessions = spark.createDataFrame(
            [("a", 100, 200, 0), ("ab", 100, 200, 1), ("b", 100, 201, 0)],
            "key string, window_start bigint, window_end bigint, value bigint")
        assert_df_equality(app.table("s"), sessions, ignore_row_order=True)
    finally:
        app.stop()
