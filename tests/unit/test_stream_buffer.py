"""The grace join's stream buffer against a plain list, over several committed batches:
a batch's own records (kept aside until the batch ends) and earlier batches' records
(in RocksDB) read, expire and re-run as one buffer."""
from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlib.processors.stores.stream_buffer import StreamBuffer
from streamlib.serdes import Serdes
from streamlib.state import StoreSpec, open_task_stores

S = Serdes.string()
KEYS = st.sampled_from("ABC")
TIMES = st.integers(0, 40)
OPS = st.one_of(
    st.tuples(st.just("put"), KEYS, TIMES, st.booleans()),
    st.tuples(st.just("fetch"), KEYS, TIMES, st.one_of(st.none(), TIMES)),
    st.tuples(st.just("expire"), TIMES),
)


def _run_batch(buffer: StreamBuffer, ops: list, model: list, tag: str) -> None:
    """Apply ``ops`` (batch ``tag``) to ``buffer`` and to ``model`` (``(key, ts, arrival,
    value, headers)``); each fetch's answer is checked against the model."""
    for i, op in enumerate(ops):
        if op[0] == "put":
            _, key, ts, with_header = op
            headers = (("h", tag.encode()),) if with_header else ()
            value = f"{key}{ts}-{tag}-{i}"
            buffer.put(key, value, ts, headers)
            model.append((key, ts, (int(tag), i), value, headers))
        elif op[0] == "fetch":
            _, key, lo, hi = op
            got = buffer.fetch(key, lo, hi)
            want = [(ts, value, headers) for k, ts, _, value, headers in sorted(model, key=lambda e: (e[1], e[2]))
                    if k == key and ts >= lo and (hi is None or ts <= hi)]
            assert got == want, op
        else:
            model[:] = [e for e in model if e[1] >= op[1]]
            buffer.expire(op[1])


def _raw(stores) -> list:
    return list(stores["b"].all())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(OPS, max_size=25), min_size=1, max_size=5))
def test_the_buffer_reads_as_a_list_across_batches_and_a_rerun_batch_writes_the_same(batches):
    with tempfile.TemporaryDirectory() as tmp:
        stores = open_task_stores(tmp, [StoreSpec("b", logging=False)])
        model: list = []
        for batch, ops in enumerate(batches):
            before = list(model)
            stores.begin(batch)
            buffer = StreamBuffer("b", stores["b"], S, S)
            _run_batch(buffer, ops, model, str(batch))
            buffer.write_back()
            stores.commit()
            written = _raw(stores)
            # the batch runs again (a retried Spark task): undone first, then the same
            stores.begin(batch)
            again = list(before)
            buffer = StreamBuffer("b", stores["b"], S, S)
            _run_batch(buffer, ops, again, str(batch))
            buffer.write_back()
            stores.commit()
            assert _raw(stores) == written and again == model
        stores.begin(len(batches))
        buffer = StreamBuffer("b", stores["b"], S, S)
        for key in "ABC":
            assert buffer.fetch(key, -1) == [(ts, v, h) for k, ts, _, v, h in sorted(model, key=lambda e: (e[1], e[2]))
                                             if k == key]
        stores.close()


def test_records_that_expire_within_their_batch_are_never_written():
    with tempfile.TemporaryDirectory() as tmp:
        stores = open_task_stores(tmp, [StoreSpec("b", logging=False)])
        stores.begin(0)
        buffer = StreamBuffer("b", stores["b"], S, S)
        for ts in range(10):
            buffer.put("A", f"v{ts}", ts)
        buffer.expire(8)
        buffer.write_back()
        stores.commit()
        # two records and their index entries, and the sequence number
        assert len(_raw(stores)) == 2 * 2 + 1
        stores.begin(1)
        assert [ts for ts, _, _ in StreamBuffer("b", stores["b"], S, S).fetch("A", 0)] == [8, 9]
        stores.close()
