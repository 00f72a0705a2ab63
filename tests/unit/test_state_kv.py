"""KeyValueStore: the per-batch write buffer over RocksDB, reads, scans, task metadata."""
import pytest

from streamlib.state import StoreSpec, decode_timestamped, encode_timestamped, open_task_stores

LOCAL = StoreSpec("s", logging=False)


@pytest.fixture
def stores(tmp_path):
    opened = open_task_stores(tmp_path / "task", [LOCAL])
    opened.begin(0)
    yield opened
    opened.close()


def committed(stores, batch, items):
    stores.begin(batch)
    stores["s"].put_many(items)
    stores.commit()


def test_reads_see_pending_writes_and_deletes(stores):
    kv = stores["s"]
    committed(stores, 0, [(b"a", b"1"), (b"b", b"2")])
    stores.begin(1)
    kv.put(b"a", b"10")
    kv.delete(b"b")
    kv.put(b"c", b"3")
    assert kv.get(b"a") == b"10" and kv.get(b"b") is None and kv.get(b"c") == b"3"
    assert kv.get_many([b"a", b"b", b"c", b"zz", b"a"]) == [b"10", None, b"3", None, b"10"]
    assert list(kv.all()) == [(b"a", b"10"), (b"c", b"3")]


def test_uncommitted_writes_are_discarded_by_close_and_begin(tmp_path):
    with open_task_stores(tmp_path / "task", [LOCAL]) as stores:
        committed(stores, 0, [(b"a", b"1")])
        stores.begin(1)
        stores["s"].put(b"a", b"lost")
    with open_task_stores(tmp_path / "task", [LOCAL]) as stores:
        stores.begin(1)
        assert stores["s"].get(b"a") == b"1"
        stores["s"].put(b"b", b"lost")
        stores.begin(1)
        assert stores["s"].get(b"b") is None


def test_range_is_inclusive_sorted_and_merges_buffer_with_rocksdb(stores):
    kv = stores["s"]
    committed(stores, 0, [(b"b", b"1"), (b"d", b"1"), (b"f", b"1"), (b"h", b"1")])
    stores.begin(1)
    kv.put_many([(b"a", b"2"), (b"d", b"2"), (b"e", b"2")])
    kv.delete(b"f")
    assert list(kv.range(b"b", b"f")) == [(b"b", b"1"), (b"d", b"2"), (b"e", b"2")]
    assert list(kv.range(None, b"b")) == [(b"a", b"2"), (b"b", b"1")]
    assert list(kv.range(b"e", None)) == [(b"e", b"2"), (b"h", b"1")]
    assert list(kv.range(b"x", b"a")) == []


def test_prefix_scan_handles_0xff_bytes_and_empty_prefix(stores):
    keys = [b"a", b"a\x00", b"a\xff", b"a\xff\xff", b"b", b"\xff", b"\xff\x01"]
    committed(stores, 0, [(k, k) for k in keys])
    kv = stores["s"]
    assert [k for k, _ in kv.prefix_scan(b"a")] == [b"a", b"a\x00", b"a\xff", b"a\xff\xff"]
    assert [k for k, _ in kv.prefix_scan(b"a\xff")] == [b"a\xff", b"a\xff\xff"]
    assert [k for k, _ in kv.prefix_scan(b"\xff")] == [b"\xff", b"\xff\x01"]
    assert [k for k, _ in kv.prefix_scan(b"")] == sorted(keys)


def test_scans_span_many_rocksdb_pages(stores):
    items = [(b"k%05d" % i, b"%d" % i) for i in range(5000)]
    committed(stores, 0, items)
    stores.begin(1)
    stores["s"].put(b"k02500x", b"new")
    got = list(stores["s"].all())
    assert len(got) == 5001 and got == sorted(items + [(b"k02500x", b"new")])
    assert len(list(stores["s"].range(b"k01000", b"k03999"))) == 3001


def test_approximate_num_entries_counts_committed_and_pending(stores):
    committed(stores, 0, [(b"k%d" % i, b"v") for i in range(100)])
    stores.begin(1)
    stores["s"].put(b"new", b"v")
    assert stores["s"].approximate_num_entries() == 101


def test_meta_values_commit_with_the_batch(tmp_path):
    with open_task_stores(tmp_path / "task", [LOCAL]) as stores:
        stores.begin(0)
        stores.meta_put("stream_time", b"42")
        assert stores.meta_get("stream_time") == b"42"
        stores.commit()
        stores.begin(1)
        stores.meta_put("stream_time", b"43")
    with open_task_stores(tmp_path / "task", [LOCAL]) as stores:
        stores.begin(1)
        assert stores.meta_get("stream_time") == b"42"
        assert stores.meta_get("unknown") is None


def test_unknown_store_and_commit_without_begin_are_clear_errors(tmp_path):
    with open_task_stores(tmp_path / "task", [LOCAL]) as stores:
        with pytest.raises(KeyError, match="unknown store 'nope'"):
            stores["nope"]
        with pytest.raises(RuntimeError, match="without begin"):
            stores.commit()
        assert list(stores) == ["s"] and len(stores) == 1


def test_spec_validation():
    with pytest.raises(ValueError, match="changelog_topic"):
        StoreSpec("s")
    with pytest.raises(ValueError, match="invalid store name"):
        StoreSpec("__task_meta", logging=False)


def test_metrics_count_operations(stores):
    kv = stores["s"]
    committed(stores, 0, [(b"a", b"1"), (b"b", b"2")])
    stores.begin(1)
    kv.get(b"a")
    kv.get_many([b"a", b"b", b"c"])
    metrics = stores.metrics()
    assert metrics["puts"] == 2 and metrics["gets"] == 4 and metrics["commits"] == 1
    assert metrics["stores"]["s"]["entries"] == 2 and metrics["stores"]["s"]["committed_keys"] == 2


def test_timestamped_values_round_trip_like_kafka():
    encoded = encode_timestamped(b"v", 1_700_000_000_000)
    assert encoded == (1_700_000_000_000).to_bytes(8, "big") + b"v"
    assert decode_timestamped(encoded) == (b"v", 1_700_000_000_000)
    assert decode_timestamped(encode_timestamped(b"", -5)) == (b"", -5)
    assert encode_timestamped(None, 7) == encode_timestamped(b"", 7)
    with pytest.raises(ValueError):
        decode_timestamped(b"1234")
