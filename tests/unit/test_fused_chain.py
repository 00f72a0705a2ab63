"""A stateless chain run over whole columns (``Task.process_table``, as Spark tasks do)
emits exactly what record-at-a-time processing emits, and falls back to it for
bad input and failing functions, whose errors and handlers stay the same."""
from __future__ import annotations

import re

import pyarrow as pa
import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig
from streamlib.processors import DeserializationFailure, ProcessingError
from streamlib.runtime.fused import FusedChain
from streamlib.runtime.order import processing_order
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores
from streamlib.topics.base import HEADER_TYPE

S, L = Serdes.string(), Serdes.long()
SPLIT = re.compile(r"\W+")
ROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.int64()), ("key", pa.binary()), ("value", pa.binary()),
                        ("headers", HEADER_TYPE)])


def rows_of(records: list[tuple], topic: str = "in") -> pa.Table:
    """(partition, offset, timestamp, key bytes, value bytes[, headers]) -> input rows."""
    full = [r if len(r) == 6 else (*r, ()) for r in records]
    return pa.table({
        "topic": [topic] * len(full), "partition": [r[0] for r in full], "offset": [r[1] for r in full],
        "timestamp": [r[2] for r in full], "key": [r[3] for r in full], "value": [r[4] for r in full],
        "headers": [[{"key": k, "value": v} for k, v in r[5]] for r in full]}, schema=ROW_SCHEMA)


def run_both(topology, rows: pa.Table, **config):
    """(output, metrics, stream time) of the columnar path and of record-at-a-time
    processing in ``rows``' processing order; or the exception each raised."""
    cfg = StreamsConfig(application_id="fused", bootstrap="local:///unused", **config)
    results = []
    for columnar in (True, False):
        task = Task(topology, topology.subtopologies[0], 0, cfg)
        task.begin(None, 0)
        try:
            if columnar:
                task.process_table(rows)
            else:
                ordered = rows.take(processing_order(rows)).to_pylist()
                for r in ordered:
                    task.process(r["topic"], r["partition"], r["offset"], r["timestamp"], r["key"], r["value"],
                                 tuple((h["key"], h["value"]) for h in r["headers"]))
            task.commit()
            results.append((task.take_output(), dict(task.metrics), task.context.stream_time))
        except Exception as exc:  # noqa: BLE001 - compared below
            results.append(exc)
    return results


def chain_topology(build, key_serde=S, value_serde=S, produced=None):
    builder = StreamsBuilder()
    build(builder.stream("in", consumed=Consumed.with_(key_serde, value_serde))).to(
        "out", produced=produced or Produced.with_(S, S))
    return builder.build()


def fused_of(topology, config: StreamsConfig = None):
    cfg = config or StreamsConfig(application_id="fused", bootstrap="local:///unused")
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    task.begin(None, 0)
    return FusedChain.of(task.processors, task.context)


LINES = [(0, i, 10 + i, None if i % 3 else f"k{i}".encode(), f"The quick {i} fox, the DOG {i % 4}".encode())
         for i in range(30)] + [(0, 30, 45, b"k", None), (0, 31, 46, b"k", b"")]


def test_wordcount_chain_emits_what_record_at_a_time_emits():
    topology = chain_topology(lambda s: s.flat_map_values(lambda v: [w for w in SPLIT.split((v or "").lower()) if w])
                              .select_key(lambda k, w: w))
    assert fused_of(topology) is not None
    columnar, per_record = run_both(topology, rows_of(LINES))
    assert columnar == per_record
    output, metrics, stream_time = columnar
    assert len(output) == sum(len([w for w in SPLIT.split(line[4].decode().lower()) if w])
                              for line in LINES if line[4])
    assert output[0] == ("out", None, 10, b"the", b"the", ())
    assert metrics["records_in"] == len(LINES) and metrics["records_out"] == len(output)
    assert stream_time == 46


def test_every_fusable_step_and_headers_across_partitions():
    topology = chain_topology(
        lambda s: s.filter(lambda k, v: "skip" not in v)
        .filter_not(lambda k, v: v.endswith("!"))
        .map(lambda k, v: (v[:1], [k, v]))
        .flat_map(lambda k, kv: [(k, kv[1]), (kv[0], kv[1].upper())] if kv[0] else [(k, kv[1])])
        .map_values(lambda v: v * 2)
        .select_key(lambda k, v: None if k is None else k + "!"),
        produced=Produced.with_(S, S))
    assert fused_of(topology) is not None
    records = [(p, i, 100 - 3 * i + p, f"k{i}".encode() if i % 2 else None,
                ("skip" if i % 5 == 0 else "v!" if i % 7 == 0 else f"v{i}").encode(),
                (("h", f"{p}/{i}".encode()),) if i % 4 == 0 else ())
               for p in range(3) for i in range(12)]
    columnar, per_record = run_both(topology, rows_of(records))
    assert columnar == per_record
    assert any(headers for *_, headers in columnar[0])  # headers followed their records


@pytest.mark.parametrize("handler", ["log_and_continue", "dead_letter"])
def test_bad_utf8_still_reaches_the_handler_with_its_position(handler):
    topology = chain_topology(lambda s: s.map_values(str.upper))
    records = [(0, 0, 1, None, b"ok"), (0, 1, 2, None, b"\xff\xfe"), (0, 2, 3, b"\xc3", b"x"), (0, 3, 4, None, b"z")]
    columnar, per_record = run_both(topology, rows_of(records), deserialization_exception_handler=handler)
    assert columnar == per_record
    output, metrics, _ = columnar
    good = [row for row in output if row[0] == "out"]
    assert [row[4] for row in good] == [b"OK", b"Z"]
    if handler == "dead_letter":
        dead = [row for row in output if row[0] != "out"]
        assert [row[4] for row in dead] == [b"\xff\xfe", b"x"]
        headers = dict(dead[0][5])
        assert headers["streamlib.topic"] == b"in" and headers["streamlib.offset"] == (1).to_bytes(8, "big")
        assert metrics["dead_letter_records"] == 2
    else:
        assert metrics["skipped_records"] == 2


def test_bad_bytes_with_fail_handler_name_topic_partition_offset_and_node():
    topology = chain_topology(lambda s: s.map_values(lambda v: v + 1), value_serde=L,
                              produced=Produced.with_(S, L))
    records = [(2, 7, 1, None, (5).to_bytes(8, "big")), (2, 8, 2, None, b"abc")]
    columnar, per_record = run_both(topology, rows_of(records))
    assert isinstance(columnar, DeserializationFailure)
    assert str(columnar) == str(per_record)
    assert "topic 'in' partition 2 offset 8" in str(columnar) and "KSTREAM-SOURCE" in str(columnar)


def test_a_failing_function_names_its_node_and_the_record():
    topology = chain_topology(lambda s: s.map_values(lambda v: v.upper()).map_values(lambda v: str(1 // (v != "B"))))
    records = [(0, i, i, None, v) for i, v in enumerate([b"a", b"b", b"c"])]
    columnar, per_record = run_both(topology, rows_of(records))
    assert isinstance(columnar, ProcessingError) and str(columnar) == str(per_record)
    assert "ZeroDivisionError" in str(columnar) and "KSTREAM-MAPVALUES-0000000002" in str(columnar)
    assert "offset 1" in str(columnar)


def test_an_object_the_sink_serde_rejects_names_the_sink():
    topology = chain_topology(lambda s: s.map_values(len))  # ints into a string serde
    columnar, per_record = run_both(topology, rows_of([(0, 0, 1, None, b"abc")]))
    assert isinstance(columnar, ProcessingError) and str(columnar) == str(per_record)
    assert "cannot serialize record for topic 'out'" in str(columnar)


def test_invalid_timestamps_go_the_record_at_a_time_way():
    topology = chain_topology(lambda s: s.map_values(str.upper))
    records = [(0, 0, 5, None, b"a"), (0, 1, -1, None, b"b")]
    columnar, per_record = run_both(topology, rows_of(records), deserialization_exception_handler="log_and_continue")
    # a record's own negative timestamp stops the task whatever the handler (Kafka's default)
    assert isinstance(columnar, ProcessingError) and str(columnar) == str(per_record)
    assert "invalid (negative or missing) timestamp -1" in str(columnar)


def test_only_straight_stateless_chains_are_fused():
    assert fused_of(chain_topology(lambda s: s)) is not None
    assert fused_of(chain_topology(lambda s: s.peek(print))) is None  # side effects keep their order
    assert fused_of(chain_topology(lambda s: s, produced=Produced.with_(S, S, lambda k, v, n: 0))) is None
    builder = StreamsBuilder()
    stream = builder.stream("in", consumed=Consumed.with_(S, S))
    stream.to("a")
    stream.map_values(str.upper).to("b")  # two children: records interleave across sinks
    assert fused_of(builder.build()) is None
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S, timestamp_extractor=lambda k, v, ts: ts)).to("out")
    assert fused_of(builder.build()) is None


# -- a caching count's flush sends its updates down the chain below it over columns --
def count_task(tmp_path, after):
    builder = StreamsBuilder()
    after(builder.stream("in", consumed=Consumed.with_(S, S)).group_by_key()
          .count(materialized=Materialized.as_("counts")).to_stream()).to("out", produced=Produced.with_(S, L))
    topology = builder.build()
    cfg = StreamsConfig(application_id="fused", bootstrap="local:///unused", state_dir=str(tmp_path))
    task = Task(topology, topology.subtopologies[0], 0, cfg)
    stores = open_task_stores(tmp_path / "0_0", task.store_specs())
    task.begin(stores, 0)
    return task, stores


def test_caching_count_flushes_through_the_chain_below_it(tmp_path):
    task, stores = count_task(tmp_path, lambda s: s.map_values(lambda n: n * 10).filter(lambda k, n: k != "c"))
    try:
        words = ["a", "b", "a", "c", "b", "a"]
        task.process_table(rows_of([(0, i, 100 + i, w.encode(), b"x", (("h", w.encode()),) if w == "b" else ())
                                    for i, w in enumerate(words)]))
        task.commit()
        assert any(isinstance(segment, pa.Table) for segment in task.context.emitted)  # columns, not records
        output = task.take_output()
    finally:
        stores.close()
    # each key's last update of the commit, in the order keys were last updated
    assert output == [("out", None, 104, b"b", Serdes.long().serialize(20), (("h", b"b"),)),
                      ("out", None, 105, b"a", Serdes.long().serialize(30), ())]


def test_a_failing_function_below_a_count_still_names_its_node(tmp_path):
    task, stores = count_task(tmp_path, lambda s: s.map_values(lambda n: n // (n - 2)))
    try:
        task.process_table(rows_of([(0, i, 100 + i, w, b"x") for i, w in enumerate([b"a", b"b", b"b"])]))
        with pytest.raises(ProcessingError, match=r"ZeroDivisionError.* in KSTREAM-MAPVALUES-\d+ at topic 'in' "
                                                  r"partition 0 offset 2"):
            task.commit()
    finally:
        stores.close()


# -- the Spark task's glue (run_task, output_table, sink appends), run without a query --
def test_wordcount_stages_through_the_spark_task_glue(tmp_path):
    from engine import Workspace, latest_per_key, python_count, wordcount_topology
    from streamlib.topics.spec import BackendSpec
    from streamlib.spark.tasks import StagePlan, run_task
    from streamlib.preflight import prepare_changelogs

    workspace = Workspace(tmp_path)
    lines = [f"the {i} quick fox {i % 3} the" for i in range(40)] + ["", "Ünïcode wörds ünïcode"]
    workspace.produce("lines", [(None, line, 1_000 + i) for i, line in enumerate(lines)])
    workspace.backend.create_topic("counts-out", partitions=1, exist_ok=True)
    topology = wordcount_topology()
    config = workspace.config(num_partitions=1)
    prepare_changelogs(topology, config, workspace.backend, {sub.id: 1 for sub in topology.subtopologies})
    internal = frozenset(t for sub in topology.subtopologies for t in sub.repartition_inputs)
    spec = BackendSpec(workspace.bootstrap)
    rows = rows_of([(0, r.offset, r.timestamp, r.key, r.value)
                    for r in workspace.backend.read("lines", 0, 0, len(lines))], topic="lines")
    repartitioned, _ = run_task(StagePlan(topology, config, spec, 0, 1, internal), 0, 0, rows, "p")
    assert repartitioned.num_rows == sum(python_count(lines).values())
    assert set(repartitioned.column("topic").to_pylist()) == set(internal)
    assert repartitioned.column("offset").to_pylist() == list(range(repartitioned.num_rows))
    _, metrics = run_task(StagePlan(topology, config, spec, 1, 1, internal), 0, 0,
                          repartitioned.cast(ROW_SCHEMA), "p")
    assert metrics["stores"]["counts"] == len(python_count(lines))
    assert latest_per_key(workspace.read("counts-out", value_serde=L)) == dict(python_count(lines))
