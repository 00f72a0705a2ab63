"""Query replicas without Spark: changelog records in, whole published versions out."""
from __future__ import annotations

import shutil

import pytest

from streamlib import Materialized, Produced, StreamsBuilder
from streamlib.query.http import decode_key
from streamlib.query.reads import NotYetQueryable, ReplicaReads
from streamlib.query import replica as replica_module
from streamlib.query.replica import StoreReplicas
from streamlib.query.service import custom_partitioned
from streamlib.serdes import Serdes
from streamlib.state.changelog import Changelog
from streamlib.state.rocksdb import RocksDB
from streamlib.topics import default_partitioner, open_backend

TOPIC = "app-s-changelog"


@pytest.fixture
def setup(tmp_path):
    backend = open_backend(f"local://{tmp_path / 'log'}")
    backend.create_topic(TOPIC, 3, {"cleanup.policy": "compact"})
    logs = [Changelog(backend, TOPIC, p, 3, f"test/{p}") for p in range(3)]
    replicas = StoreReplicas(str(tmp_path / "state"), lambda: backend, {"s": TOPIC})
    yield backend, logs, replicas
    replicas.close()


def _commit(logs, batch, changes: dict[int, dict[bytes, bytes | None]]) -> dict:
    """Append one batch's changes per partition; return the offsets tasks would report."""
    ends = {}
    for partition, kv in changes.items():
        _, ends[partition] = logs[partition].append(batch, list(kv), list(kv.values()), [0] * len(kv))
    return {"s": ends}


def _keys(n, partition):
    return [b"p%d-%05d" % (partition, i) for i in range(n)]


def test_reads_wait_for_the_first_version_then_follow_committed_batches(setup):
    backend, logs, replicas = setup
    reads = ReplicaReads(replicas, "s")
    with pytest.raises(NotYetQueryable):
        reads.get(b"x")
    _commit(logs, 0, {0: {b"a": b"1"}, 1: {b"b": b"1"}})
    replicas.sync(before_batch=1)
    assert dict(reads.all()) == {b"a": b"1", b"b": b"1"}
    # Batch 1 is in the changelog, but only partition 0's task reported: it stays unseen
    # until its batch is announced, and then every partition shows it at once.
    offsets = _commit(logs, 1, {0: {b"a": b"2"}, 2: {b"c": b"1"}})
    assert reads.get(b"a") == b"1"
    replicas.follow()
    replicas.committed(1, offsets)
    replicas.stop_following()
    assert dict(reads.all()) == {b"a": b"2", b"b": b"1", b"c": b"1"}
    assert replicas.published.batch == 1


def test_sync_leaves_out_an_unfinished_batch(setup):
    backend, logs, replicas = setup
    _commit(logs, 0, {0: {b"a": b"1"}})
    _commit(logs, 1, {0: {b"a": b"2"}, 1: {b"b": b"2"}})   # batch 1 did not commit
    replicas.sync(before_batch=1)
    reads = ReplicaReads(replicas, "s")
    assert dict(reads.all()) == {b"a": b"1"}
    replicas.sync(before_batch=2)                            # now it did
    assert dict(reads.all()) == {b"a": b"2", b"b": b"2"}


def _applied(logs, replicas, batch: int, changes: dict) -> None:
    """``changes`` committed as ``batch`` and applied by the following thread."""
    replicas.follow()
    replicas.committed(batch, _commit(logs, batch, changes))
    replicas.stop_following()


def test_a_scan_keeps_its_version_while_newer_batches_are_applied(setup):
    backend, logs, replicas = setup
    first = {p: {k: b"v0" for k in _keys(3000, p)} for p in range(3)}
    _applied(logs, replicas, 0, first)
    reads = ReplicaReads(replicas, "s")
    expected = sorted((k, v) for kv in first.values() for k, v in kv.items())
    scan = reads.all()
    seen = [next(scan) for _ in range(10)]
    point_version = replicas.published
    # Three more batches: every key of partition 0 and 1 changes, partition 2 loses half
    # its keys and gains new ones; the open scan must still show batch 0 exactly.
    for batch in (1, 2, 3):
        changes = {0: {k: b"v%d" % batch for k in _keys(3000, 0)},
                   1: {k: b"v%d" % batch for k in _keys(3000, 1)[::7]},
                   2: {**{k: None for k in _keys(3000, 2)[::2]},
                       **{b"p2-new-%d-%d" % (batch, i): b"n" for i in range(500)}}}
        replicas.follow()
        replicas.committed(batch, _commit(logs, batch, changes))
        replicas.stop_following()
    seen.extend(scan)
    assert seen == expected
    assert replicas.published is not point_version and replicas.published.batch == 3
    now = dict(reads.all())
    assert now[b"p0-00000"] == b"v3" and b"p2-00000" not in now and now[b"p2-new-3-1"] == b"n"
    assert reads.get_many([b"p1-00007", b"p1-00001"]) == [b"v3", b"v0"]


def test_a_batch_written_in_chunks_is_seen_whole_or_not_at_all(setup, monkeypatch):
    backend, logs, replicas = setup
    _applied(logs, replicas, 0, {p: {k: b"v0" for k in _keys(20, p)} for p in range(3)})
    reads = ReplicaReads(replicas, "s")
    before = dict(reads.all())
    monkeypatch.setattr(replica_module, "WRITE_CHUNK", 3)
    original, chunks, seen = RocksDB.write, [], []

    def write(db, data, meta):   # between the chunks, a reader sees batch 0 exactly
        data = list(data)
        chunks.append((len(data), bool(meta)))
        original(db, data, meta)
        seen.append((dict(reads.all()), reads.get_many(_keys(20, 0) + [b"p1-new"])))

    monkeypatch.setattr(RocksDB, "write", write)
    _applied(logs, replicas, 1, {0: {k: b"v1" for k in _keys(20, 0)[::2]},
                                 1: {b"p1-new": b"n", **{k: None for k in _keys(20, 1)}}})
    assert len(chunks) == 4 + 7 and [m for _, m in chunks].count(True) == 2   # 10 and 21 records, meta last
    assert all(n <= 3 for n, _ in chunks)
    assert all(scan == before and got == [b"v0"] * 20 + [None] for scan, got in seen)
    after = dict(reads.all())
    assert after[b"p0-00000"] == b"v1" and after[b"p0-00001"] == b"v0" and after[b"p1-new"] == b"n"
    assert not any(k.startswith(b"p1-0") for k in after) and replicas.published.batch == 1


def test_a_reset_application_starts_from_its_new_changelog(setup, tmp_path):
    backend, logs, replicas = setup
    _commit(logs, 0, {0: {b"a": b"1"}, 1: {b"b": b"1"}, 2: {b"c": b"1"}})
    replicas.sync(before_batch=1)
    reads = ReplicaReads(replicas, "s")
    assert dict(reads.all()) == {b"a": b"1", b"b": b"1", b"c": b"1"}
    backend.delete_topic(TOPIC)                          # python -m streamlib reset
    shutil.rmtree(tmp_path / "state")
    replicas.sync(before_batch=0)
    assert dict(reads.all()) == {}
    backend.create_topic(TOPIC, 3, {"cleanup.policy": "compact"})
    _commit([Changelog(backend, TOPIC, p, 3, f"new/{p}") for p in range(3)], 0, {1: {b"x": b"9"}})
    replicas.sync(before_batch=1)
    assert dict(reads.all()) == {b"x": b"9"}


def test_keys_from_urls_take_the_key_serdes_type():
    assert decode_key("42", Serdes.long()) == 42
    assert decode_key("hello", Serdes.string()) == "hello"
    with pytest.raises(ValueError):
        decode_key("abc", Serdes.integer())


def test_a_replica_that_read_a_cut_changelog_tail_is_rebuilt(tmp_path, caplog):
    """The replica applied offsets 0..1; the changelog loses offset 1 (a torn last frame)
    and a task writes a new record there. Catching up from offset 2 would keep the lost
    record and miss the new one: the log epochs say so, and the replica is rebuilt."""
    import glob
    import logging
    import os

    root = tmp_path / "log"
    backend = open_backend(f"local://{root}?fsync=false")
    backend.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
    changelog = Changelog(backend, TOPIC, 0, 1, "test/0")
    replicas = StoreReplicas(str(tmp_path / "state"), lambda: backend, {"s": TOPIC})
    try:
        reads = ReplicaReads(replicas, "s")
        for batch, (key, value) in enumerate([(b"x", b"0"), (b"y", b"1")]):
            changelog.append(batch, [key], [value], [0])
            replicas.sync(before_batch=batch + 1)
        assert dict(reads.all()) == {b"x": b"0", b"y": b"1"}
        segment = sorted(glob.glob(os.path.join(root, TOPIC, "0", "*.log")))[-1]
        with open(segment, "r+b") as f:   # batch 1's frame is torn
            f.truncate(os.path.getsize(segment) - 5)
        again = Changelog(open_backend(f"local://{root}?fsync=false"), TOPIC, 0, 1, "test/0")
        again.append(2, [b"z"], [b"2"], [0])   # offset 1 again
        with caplog.at_level(logging.WARNING, logger="streamlib"):
            replicas.sync(before_batch=3)
        assert dict(reads.all()) == {b"x": b"0", b"z": b"2"}
        assert "diverged" in caplog.text
    finally:
        replicas.close()


def _home(partition: int, n: int = 3) -> bytes:
    """A key the default partitioner puts in ``partition`` of ``n``."""
    return next(k for k in (b"k%d" % i for i in range(1000)) if default_partitioner(k, n) == partition)


def _counting_reads(replicas, seen: list) -> None:
    """Records in ``seen`` each partition a read touches."""
    pin = replicas.pin

    class Counting:
        def __init__(self, partition, db):
            self.partition, self.db = partition, db

        def get_many(self, keys):
            seen.append(self.partition)
            return self.db.get_many(keys)

    replicas.pin = lambda store: (lambda version, dbs: (version, [(p, Counting(p, db)) for p, db in dbs]))(*pin(store))


def test_a_point_lookup_reads_its_keys_partition_and_the_others_only_when_it_is_not_there(setup):
    backend, logs, replicas = setup
    at_home, elsewhere = _home(0), _home(1)
    # ``elsewhere`` sits in partition 2: its producer partitioned by its own rule, or the
    # store's key bytes differ from the topic's (a repartition with another key serde)
    _commit(logs, 0, {0: {at_home: b"1"}, 2: {elsewhere: b"2"}})
    replicas.sync(before_batch=1)
    seen: list[int] = []
    _counting_reads(replicas, seen)
    reads = ReplicaReads(replicas, "s")
    assert reads.get(at_home) == b"1" and seen == [0]
    seen.clear()
    assert reads.get(elsewhere) == b"2" and seen == [1, 0, 2]
    seen.clear()
    assert reads.get(b"absent") is None and sorted(seen) == [0, 1, 2]
    seen.clear()
    assert ReplicaReads(replicas, "s", probe=False).get(at_home) == b"1" and seen == [0, 1, 2]


def test_a_point_lookup_in_its_partition_reads_the_pinned_version(setup):
    backend, logs, replicas = setup
    key = _home(2)
    replicas.committed(0, _commit(logs, 0, {2: {key: b"old"}}))
    replicas.follow()
    replicas.stop_following()
    version = replicas.published
    replicas.committed(1, _commit(logs, 1, {2: {key: None}}))   # deleted in batch 1
    replicas.follow()
    replicas.stop_following()
    pin = replicas.pin
    replicas.pin = lambda store: (version, pin(store)[1])   # a read that pinned batch 0
    assert ReplicaReads(replicas, "s").get(key) == b"old"


def test_stores_fed_through_a_custom_partitioner_are_read_in_every_partition():
    s = Serdes.string()
    builder = StreamsBuilder()
    builder.stream("in").to("mid", produced=Produced.with_(s, s, partitioner=lambda k, v, n: 0))
    builder.table("mid", materialized=Materialized.as_("custom"))
    builder.stream("events").group_by(lambda k, v: v).count(materialized=Materialized.as_("regrouped"))
    builder.table("plain", materialized=Materialized.as_("plain"))
    topology = builder.build()
    assert custom_partitioned(topology, "custom")
    assert not custom_partitioned(topology, "regrouped") and not custom_partitioned(topology, "plain")
