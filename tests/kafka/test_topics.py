"""Topic backends: the local durable log and Kafka (against a real broker)."""
import multiprocessing
import os
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from streamlib.topics import (RECORD_SCHEMA, TopicExists, TopicNotFound, TopicsError, default_partitioner,
                              open_backend, records_to_arrow)


@pytest.fixture(params=["local", "kafka"])
def backend(request):
    return request.getfixturevalue(f"{request.param}_backend")


def fresh(prefix="t"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def rows(*pairs, ts=1000):
    return records_to_arrow([(k, v, ts + i, None) for i, (k, v) in enumerate(pairs)])


# ---- both backends ---------------------------------------------------------

def test_append_read_and_end_offsets(backend):
    topic = fresh()
    backend.create_topic(topic, partitions=2)
    assert backend.end_offsets(topic) == {0: 0, 1: 0}
    backend.append(topic, 1, records_to_arrow([(b"a", b"1", 10, [("h", b"x")]), (None, b"2", 11, None),
                                               (b"c", None, 12, None)]))
    backend.append(topic, 1, rows((b"d", b"4")))
    assert backend.end_offsets(topic) == {0: 0, 1: 4}
    assert backend.start_offsets(topic) == {0: 0, 1: 0}
    got = backend.read(topic, 1, 0, 10)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == [
        (0, b"a", b"1", 10), (1, None, b"2", 11), (2, b"c", None, 12), (3, b"d", b"4", 1000)]
    assert got[0].headers == (("h", b"x"),) and got[1].headers == ()
    assert (got[0].topic, got[0].partition) == (topic, 1)
    middle = backend.read_arrow(topic, 1, 1, 3)
    assert middle.schema.equals(RECORD_SCHEMA)
    assert middle.column("offset").to_pylist() == [1, 2]
    assert backend.read_arrow(topic, 0, 0, 10).num_rows == 0


def test_produce_partitions_keys_like_java(backend):
    topic = fresh()
    backend.create_topic(topic, partitions=3)
    keys = [f"key-{i}".encode() for i in range(30)]
    for i, key in enumerate(keys):
        backend.produce(topic, key=key, value=str(i).encode(), timestamp=1000 + i, headers=[("n", b"%d" % i)])
    backend.produce(topic, key=b"pinned", value=b"p", partition=2)
    backend.flush()
    seen = {}
    for p, end in backend.end_offsets(topic).items():
        for r in backend.read(topic, p, 0, end):
            seen[r.key] = (p, r.value, r.timestamp, r.headers)
    assert seen.pop(b"pinned")[:2] == (2, b"p")
    assert seen == {k: (default_partitioner(k, 3), str(i).encode(), 1000 + i, (("n", b"%d" % i),))
                    for i, k in enumerate(keys)}


def test_admin_errors_and_listing(backend):
    topic = fresh()
    with pytest.raises(TopicNotFound):
        backend.describe_topic(topic)
    info = backend.create_topic(topic, partitions=2)
    assert (info.name, info.partitions) == (topic, 2)
    with pytest.raises(TopicExists):
        backend.create_topic(topic)
    assert backend.create_topic(topic, exist_ok=True).partitions == 2
    assert topic in backend.list_topics()
    with pytest.raises(TopicsError, match="illegal topic name"):
        backend.create_topic("no/slashes")
    backend.delete_topic(topic)
    assert topic not in backend.list_topics()
    with pytest.raises(TopicNotFound):
        backend.delete_topic(topic)


# ---- local log -------------------------------------------------------------

def test_local_describe_keeps_config_and_survives_restart(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as first:
        first.create_topic("changelog", partitions=2, config={"cleanup.policy": "compact"})
        first.append("changelog", 0, rows((b"a", b"1"), (b"b", b"2")))
        for i in range(5):
            first.produce("changelog", key=b"k", value=b"%d" % i)
        # no flush: close() must flush
    with open_backend(url) as again:
        assert again.describe_topic("changelog").config == {"cleanup.policy": "compact"}
        p = default_partitioner(b"k", 2)
        ends = again.end_offsets("changelog")
        assert ends[p] == 5 + (2 if p == 0 else 0)
        assert [r.value for r in again.read("changelog", p, 0, 100) if r.key == b"k"] == [b"0", b"1", b"2", b"3", b"4"]
        again.append("changelog", 0, rows((b"c", b"3")))
        assert again.end_offsets("changelog")[0] == ends[0] + 1


def test_local_reads_across_rolled_segments(tmp_path):
    with open_backend(f"local://{tmp_path}?fsync=false&segment_bytes=2000") as b:
        b.create_topic("t")
        for i in range(40):
            b.append("t", 0, rows(*[(b"k%d" % i, b"x" * 50)] * 5))
        segments = [n for n in os.listdir(tmp_path / "t" / "0") if n.endswith(".log")]
        assert len(segments) > 5
        table = b.read_arrow("t", 0, 37, 163)
        assert table.column("offset").to_pylist() == list(range(37, 163))
    with open_backend(f"local://{tmp_path}") as b:
        assert b.end_offsets("t") == {0: 200}
        assert b.read_arrow("t", 0, 0, 200).num_rows == 200


def _append_worker(root: str, worker: int, batches: int) -> None:
    with open_backend(f"local://{root}", fsync=False) as b:
        for i in range(batches):
            b.append("shared", 0, rows(*[(b"w%d" % worker, b"%d-%d-%d" % (worker, i, j)) for j in range(3)]))


def test_local_two_processes_append_concurrently(tmp_path):
    with open_backend(f"local://{tmp_path}") as b:
        b.create_topic("shared")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_worker, args=(str(tmp_path), w, 150)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with open_backend(f"local://{tmp_path}") as b:
        got = b.read("shared", 0, 0, 10_000)
        assert b.end_offsets("shared") == {0: 900}
    assert [r.offset for r in got] == list(range(900))
    values = [r.value for r in got]
    assert sorted(values) == sorted(b"%d-%d-%d" % (w, i, j) for w in range(2) for i in range(150) for j in range(3))
    for w in range(2):  # each worker's records stay in its own order, batches unsplit
        mine = [v for v in values if v.startswith(b"%d-" % w)]
        assert mine == [b"%d-%d-%d" % (w, i, j) for i in range(150) for j in range(3)]


def test_local_torn_tail_is_cut_and_appends_continue(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as b:
        b.create_topic("t")
        b.append("t", 0, rows((b"a", b"1"), (b"b", b"2")))
        b.append("t", 0, rows((b"c", b"3")))
    segment = tmp_path / "t" / "0" / f"{0:020d}.log"
    data = segment.read_bytes()
    with open(segment, "ab") as f:  # half of a copy of the last frame, then garbage
        f.write(data[len(data) // 2:len(data) // 2 + 300] + b"\x00garbage" * 10)
    with open_backend(url) as reader:  # readers ignore the torn tail without repairing
        assert [r.value for r in reader.read("t", 0, 0, 10)] == [b"1", b"2", b"3"]
    with open_backend(url) as b:
        b.append("t", 0, rows((b"d", b"4")))
        assert b.end_offsets("t") == {0: 4}
        assert [(r.offset, r.value) for r in b.read("t", 0, 0, 10)] == [(0, b"1"), (1, b"2"), (2, b"3"), (3, b"4")]
    assert b"garbage" not in segment.read_bytes()


def test_local_segment_left_empty_by_a_writer_killed_creating_it_is_replaced(tmp_path):
    # Found by the fault harness: SIGKILL between creating a segment file and writing
    # its header left a 0-byte file every later append failed on (FileExistsError).
    url = f"local://{tmp_path}?segment_bytes=2000"
    with open_backend(url) as b:
        b.create_topic("t", partitions=2)
        for i in range(8):
            b.append("t", 1, rows(*[(b"k", b"x" * 100)] * 3))
        end = b.end_offsets("t")[1]
    (tmp_path / "t" / "0" / f"{0:020d}.log").write_bytes(b"")            # the partition's first
    (tmp_path / "t" / "1" / f"{end:020d}.log").write_bytes(b"SLSEG0")     # a roll, header cut short
    with open_backend(url) as b:
        assert b.end_offsets("t") == {0: 0, 1: end}
        b.append("t", 0, rows((b"a", b"1")))
        b.append("t", 1, rows((b"b", b"2")))
        assert [r.value for r in b.read("t", 0, 0, 10)] == [b"1"]
        assert [(r.offset, r.value) for r in b.read("t", 1, end - 1, end + 5)] == [(end - 1, b"x" * 100),
                                                                                 (end, b"2")]


def test_local_damaged_segment_header_where_the_next_segment_goes_is_refused(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as b:
        b.create_topic("t")
    damaged = tmp_path / "t" / "0" / f"{0:020d}.log"
    damaged.write_bytes(b"not a segment header, but data" * 4)
    with open_backend(url) as b, pytest.raises(TopicsError, match="header is damaged"):
        b.append("t", 0, rows((b"a", b"1")))
    assert damaged.read_bytes() == b"not a segment header, but data" * 4


def test_local_lost_index_is_rebuilt(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as b:
        b.create_topic("t")
        for i in range(5):
            b.append("t", 0, rows((b"k", b"%d" % i)))
    (tmp_path / "t" / "0" / f"{0:020d}.idx").write_bytes(b"\x00" * 7)
    with open_backend(url) as b:
        assert [r.value for r in b.read("t", 0, 2, 5)] == [b"2", b"3", b"4"]
        b.append("t", 0, rows((b"k", b"5")))
        assert b.end_offsets("t") == {0: 6}


def test_local_compaction_keeps_latest_per_key_and_offsets(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url, segment_bytes=1500) as b:
        b.create_topic("c", config={"cleanup.policy": "compact", "delete.retention.ms": "0"})
        b.append("c", 0, rows((b"a", b"1"), (b"b", b"1"), (b"c", b"1")))
        b.append("c", 0, rows((b"a", b"2"), (b"b", None)))
        b.append("c", 0, rows((b"c", b"2"), (None, b"keyless"), (b"d", b"1"), (b"d", None)))
        assert b.end_offsets("c") == {0: 9}
        b.compact("c")
        expected = [(3, b"a", b"2"), (5, b"c", b"2"), (6, None, b"keyless")]
        assert [(r.offset, r.key, r.value) for r in b.read("c", 0, 0, 100)] == expected
        assert b.end_offsets("c") == {0: 9} and b.start_offsets("c") == {0: 0}
        assert [r.offset for r in b.read("c", 0, 4, 6)] == [5]
        b.append("c", 0, rows((b"a", b"3")))
        assert b.end_offsets("c") == {0: 10}
    with open_backend(url) as b:
        assert [(r.offset, r.value) for r in b.read("c", 0, 0, 100)] == [(3, b"2"), (5, b"2"), (6, b"keyless"), (9, b"3")]
        assert len([n for n in os.listdir(tmp_path / "c" / "0") if n.endswith(".log")]) == 1


def test_local_compaction_of_only_tombstones_keeps_end_offset(tmp_path):
    with open_backend(f"local://{tmp_path}") as b:
        b.create_topic("c", config={"cleanup.policy": "compact", "delete.retention.ms": "0"})
        b.append("c", 0, rows((b"a", b"1"), (b"a", None)))
        b.compact("c")
        assert b.read("c", 0, 0, 10) == [] and b.end_offsets("c") == {0: 2}
        b.append("c", 0, rows((b"b", b"1")))
        assert [r.offset for r in b.read("c", 0, 0, 10)] == [2]


def test_local_idempotent_append_survives_restart_and_compaction(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as b:
        b.create_topic("t")
        assert b.append("t", 0, rows((b"a", b"1")), producer_id="task-0", sequence=0) is True
        assert b.append("t", 0, rows((b"a", b"1")), producer_id="task-0", sequence=0) is False
        assert b.append("t", 0, rows((b"b", b"1")), producer_id="task-1", sequence=0) is True
        assert b.append("t", 0, rows((b"a", b"2")), producer_id="task-0", sequence=1) is True
        assert b.end_offsets("t") == {0: 3}
    os.unlink(tmp_path / "t" / "0" / "producers.json")  # the snapshot is only a cache
    with open_backend(url) as b:
        assert b.append("t", 0, rows((b"a", b"2")), producer_id="task-0", sequence=1) is False
        assert b.append("t", 0, rows((b"b", b"1")), producer_id="task-1", sequence=0) is False
        b.compact("t")
        assert b.append("t", 0, rows((b"a", b"2")), producer_id="task-0", sequence=1) is False
    with open_backend(url) as other_process_view:
        assert other_process_view.append("t", 0, rows((b"x", b"1")), producer_id="task-1", sequence=0) is False
        assert other_process_view.append("t", 0, rows((b"x", b"1")), producer_id="task-1", sequence=1) is True
        assert other_process_view.end_offsets("t") == {0: 4}


def test_local_topic_deleted_and_recreated_by_another_backend_is_seen_as_it_is_now(tmp_path):
    url = f"local://{tmp_path}"
    with open_backend(url) as worker, open_backend(url) as admin:
        worker.create_topic("t")
        worker.append("t", 0, rows((b"a", b"1")), producer_id="task-0", sequence=0)
        assert worker.end_offsets("t") == {0: 1}
        admin.delete_topic("t")  # e.g. python -m streamlib reset, while a Spark worker keeps its handles
        with pytest.raises(TopicNotFound):
            worker.end_offsets("t")
        admin.create_topic("t", partitions=2)
        assert worker.end_offsets("t") == {0: 0, 1: 0}
        assert worker.append("t", 1, rows((b"b", b"2")), producer_id="task-0", sequence=0) is True
        admin.delete_topic("t")
    assert not os.path.exists(tmp_path / "t")  # closing handles of a deleted topic is harmless


def test_local_unknown_partition_and_bad_urls(tmp_path):
    with open_backend(f"local://{tmp_path}") as b:
        b.create_topic("t", partitions=2)
        with pytest.raises(TopicsError, match="no partition 2"):
            b.produce("t", key=b"k", value=b"v", partition=2)
        with pytest.raises(TopicNotFound):
            b.end_offsets("missing")
    for url, message in [("nope://x", "bad bootstrap URL"), ("local://", "no path"),
                         ("kafka://host", "not host:port"), (f"local://{tmp_path}?fsync=maybe", "not a boolean"),
                         (f"local://{tmp_path}?colour=red", "unknown option")]:
        with pytest.raises(TopicsError, match=message):
            open_backend(url)


# ---- kafka -------------------------------------------------------------------

def test_kafka_creates_compacted_topics(kafka_backend, kafka_bootstrap):
    topic = fresh("changelog")
    kafka_backend.create_topic(topic, partitions=2, config={"cleanup.policy": "compact"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    # Read raw broker state, not the backend's own view of it.
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["cleanup.policy"].value == "compact"
    assert kafka_backend.num_partitions(topic) == 2


def test_kafka_exactly_once_append_is_transactional(kafka_bootstrap):
    topic = fresh()
    with open_backend(f"kafka://{kafka_bootstrap}", processing_guarantee="exactly_once") as b:
        b.create_topic(topic)
        assert b.append(topic, 0, rows((b"a", b"1"), (b"b", b"2")), producer_id="task-0", sequence=0)
        # The commit markers are written asynchronously after commit_transaction():
        # the records become readable (the end offset moves past them) soon after.
        deadline = time.monotonic() + 10
        while b.end_offsets(topic)[0] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        got = b.read(topic, 0, 0, b.end_offsets(topic)[0])
        assert [(r.key, r.value) for r in got] == [(b"a", b"1"), (b"b", b"2")]


def test_kafka_unreachable_broker_fails_fast_with_one_line():
    with pytest.raises(TopicsError) as info:
        open_backend("kafka://127.0.0.1:1", timeout=1).list_topics()
    assert "127.0.0.1:1" in str(info.value) and "\n" not in str(info.value)


def test_local_group_commit_syncs_each_written_file_once_at_the_end(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    with open_backend(f"local://{tmp_path}") as b:
        b.create_topic("t", partitions=3)
        for p in range(3):
            b.append("t", p, rows((b"k", b"first")))  # segments exist: no more segment syncs

        def counting_fsync(fd):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", counting_fsync)
        b.append("t", 0, rows((b"k", b"plain")))
        assert len(synced) == 1  # outside a group commit: every append syncs
        synced.clear()
        with b.group_commit():
            for p in range(3):
                assert b.append("t", p, rows((b"k", b"a"), (b"k", b"b")), producer_id="task", sequence=p)
                assert b.append("t", p, rows((b"k", b"c")))
            assert synced == []  # nothing synced yet, yet everything is readable
            assert b.end_offsets("t") == {0: 5, 1: 4, 2: 4}
            assert b.read_arrow("t", 1, 1, 4).column("value").to_pylist() == [b"a", b"b", b"c"]
        assert sorted(synced) == sorted({path for path in synced}) and len(synced) == 3
        assert {os.path.basename(os.path.dirname(path)) for path in synced} == {"0", "1", "2"}
