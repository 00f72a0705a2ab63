"""Kafka Streams' own unit tests for stream-stream joins and stateless KStream operators,
ported to streamlib's API with their expected outputs (records, keys, values,
timestamps and order) unchanged.

Sources (apache/kafka, streams/src/test/java/org/apache/kafka/streams/kstream/internals/):
KStreamKStreamJoinTest, KStreamKStreamLeftJoinTest, KStreamKStreamOuterJoinTest,
KStreamImplTest, KStreamFlatMapTest, KStreamSplitTest. Kafka captures results with a
mock processor; here the result goes to a topic and the test reads it, which shows the
same records in the same order. Kafka's input topics there are created with a start
time of 0 and no auto-advance, so a record piped without a timestamp has timestamp 0;
the tests below pass that 0 explicitly.

Tests already ported in tests/unit/test_kstream_kstream_join.py, test_kstream_map.py,
test_kstream_branch_merge.py and test_kstream_to_table_repartition.py are not repeated.
"""
from __future__ import annotations

import re
from contextlib import contextmanager

import pytest

from streamlib import Consumed, Grouped, JoinWindows, Materialized, Produced, StreamsBuilder

from join_helpers import tostring_joiner
from streams_helpers import I, L, S, driver_for, kvt

KEYS = (0, 1, 2, 3)


@contextmanager
def joined_driver(how: str, windows: JoinWindows, right_serde=S):
    """topic1 (Integer, String) ``how``-joined with topic2 (Integer, ``right_serde``)
    by Kafka's TOSTRING_JOINER, written to "out"."""
    builder = StreamsBuilder()
    s1 = builder.stream("topic1", consumed=Consumed.with_(I, S))
    s2 = builder.stream("topic2", consumed=Consumed.with_(I, right_serde))
    getattr(s1, how)(s2, tostring_joiner, windows).to("out", Produced.with_(I, S))
    with driver_for(builder) as driver:
        yield (driver.create_input_topic("topic1", I, S), driver.create_input_topic("topic2", I, right_serde),
               driver.create_output_topic("out", I, S), driver)


def take(out) -> list[tuple]:
    """(key, value, timestamp) of everything emitted since the last call."""
    return kvt(out.read_records_to_list())


def push(topic, prefix: str, time: int, keys=KEYS, increasing: bool = False) -> None:
    """Pipe ``prefix + key`` for every key at ``time`` (``time + i`` when ``increasing``)."""
    for i, k in enumerate(keys):
        topic.pipe_input(k, f"{prefix}{k}", time + i if increasing else time)


def push_long(topic, offset: int, time: int, keys=KEYS, increasing: bool = False) -> None:
    """Pipe the Long value ``key + offset`` for every key (Kafka's outer-join tests)."""
    for i, k in enumerate(keys):
        topic.pipe_input(k, k + offset, time + i if increasing else time)


# --------------------------------------------------------------------------------------
# KStreamKStreamJoinTest
# --------------------------------------------------------------------------------------

def test_join_sums_values_with_default_stores():
    """KStreamKStreamJoinTest.shouldJoinWithDslStoreSuppliersIfNoStoreSupplied (its
    ``runJoin``): String keys, Integer values, ``Integer::sum`` joiner, 100 ms, no grace."""
    builder = StreamsBuilder()
    left = builder.stream("left", consumed=Consumed.with_(S, I))
    right = builder.stream("right", consumed=Consumed.with_(S, I))
    left.join(right, lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(100)) \
        .to("out", Produced.with_(S, I))
    with driver_for(builder) as driver:
        lt = driver.create_input_topic("left", S, I)
        rt = driver.create_input_topic("right", S, I)
        out = driver.create_output_topic("out", S, I)
        lt.pipe_input("A", 1, 1)
        lt.pipe_input("B", 1, 2)
        rt.pipe_input("A", 1, 1)
        rt.pipe_input("B", 2, 2)
        assert take(out) == [("A", 2, 1), ("B", 3, 2)]


def test_outer_join_with_24h_grace_full():
    """KStreamKStreamJoinTest.testOuterJoin (all six steps): with 24 h grace nothing
    unmatched is emitted, so the output is the inner join's."""
    windows = JoinWindows.of_time_difference_and_grace(100, 24 * 3600 * 1000)
    with joined_driver("outer_join", windows) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push(t2, "a", 0, KEYS[:2])
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
        push(t1, "B", 0)
        assert take(out) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
        push(t2, "b", 0)
        assert take(out) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                             (2, "B2+b2", 0), (3, "B3+b3", 0)]
        push(t1, "C", 0)
        assert take(out) == [(0, "C0+a0", 0), (0, "C0+b0", 0), (1, "C1+a1", 0), (1, "C1+b1", 0),
                             (2, "C2+b2", 0), (3, "C3+b3", 0)]
        push(t2, "c", 0, KEYS[:2])
        assert take(out) == [(0, "A0+c0", 0), (0, "B0+c0", 0), (0, "C0+c0", 0),
                             (1, "A1+c1", 0), (1, "B1+c1", 0), (1, "C1+c1", 0)]


def test_windowing_full():
    """KStreamKStreamJoinTest.testWindowing (all steps): both window bounds (±100 ms,
    inclusive) seen from either side; the result carries the larger timestamp."""
    with joined_driver("join", JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push(t2, "a", 0, KEYS[:2])
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]

        # the other stream's records against B0..B3 at 1000..1003
        push(t1, "B", 1000, increasing=True)
        assert take(out) == []
        push(t2, "b", 1100)
        assert take(out) == [(0, "B0+b0", 1100), (1, "B1+b1", 1100), (2, "B2+b2", 1100), (3, "B3+b3", 1100)]
        push(t2, "c", 1101)
        assert take(out) == [(1, "B1+c1", 1101), (2, "B2+c2", 1101), (3, "B3+c3", 1101)]
        push(t2, "d", 1102)
        assert take(out) == [(2, "B2+d2", 1102), (3, "B3+d3", 1102)]
        push(t2, "e", 1103)
        assert take(out) == [(3, "B3+e3", 1103)]
        push(t2, "f", 1104)
        assert take(out) == []
        push(t2, "g", 899)
        assert take(out) == []
        push(t2, "h", 900)
        assert take(out) == [(0, "B0+h0", 1000)]
        push(t2, "i", 901)
        assert take(out) == [(0, "B0+i0", 1000), (1, "B1+i1", 1001)]
        push(t2, "j", 902)
        assert take(out) == [(0, "B0+j0", 1000), (1, "B1+j1", 1001), (2, "B2+j2", 1002)]
        push(t2, "k", 903)
        assert take(out) == [(0, "B0+k0", 1000), (1, "B1+k1", 1001), (2, "B2+k2", 1002), (3, "B3+k3", 1003)]

        # the primary stream's records against l0..l3 at 2000..2003
        push(t2, "l", 2000, increasing=True)
        assert take(out) == []
        push(t1, "C", 2100)
        assert take(out) == [(0, "C0+l0", 2100), (1, "C1+l1", 2100), (2, "C2+l2", 2100), (3, "C3+l3", 2100)]
        push(t1, "D", 2101)
        assert take(out) == [(1, "D1+l1", 2101), (2, "D2+l2", 2101), (3, "D3+l3", 2101)]
        push(t1, "E", 2102)
        assert take(out) == [(2, "E2+l2", 2102), (3, "E3+l3", 2102)]
        push(t1, "F", 2103)
        assert take(out) == [(3, "F3+l3", 2103)]
        push(t1, "G", 2104)
        assert take(out) == []
        push(t1, "H", 1899)
        assert take(out) == []
        push(t1, "I", 1900)
        assert take(out) == [(0, "I0+l0", 2000)]
        push(t1, "J", 1901)
        assert take(out) == [(0, "J0+l0", 2000), (1, "J1+l1", 2001)]
        push(t1, "K", 1902)
        assert take(out) == [(0, "K0+l0", 2000), (1, "K1+l1", 2001), (2, "K2+l2", 2002)]
        push(t1, "L", 1903)
        assert take(out) == [(0, "L0+l0", 2000), (1, "L1+l1", 2001), (2, "L2+l2", 2002), (3, "L3+l3", 2003)]


def test_asymmetric_windowing_after_full():
    """KStreamKStreamJoinTest.testAsymmetricWindowingAfter (all steps):
    ``ofTimeDifferenceWithNoGrace(0).after(100)``: a left record at t joins right
    records in [t, t + 100]."""
    windows = JoinWindows.of_time_difference_with_no_grace(0).after(100)
    with joined_driver("join", windows) as (t1, t2, out, _):
        push(t1, "A", 1000, increasing=True)
        assert take(out) == []
        push(t2, "a", 999)
        assert take(out) == []
        push(t2, "b", 1000)
        assert take(out) == [(0, "A0+b0", 1000)]
        push(t2, "c", 1001)
        assert take(out) == [(0, "A0+c0", 1001), (1, "A1+c1", 1001)]
        push(t2, "d", 1002)
        assert take(out) == [(0, "A0+d0", 1002), (1, "A1+d1", 1002), (2, "A2+d2", 1002)]
        push(t2, "e", 1003)
        assert take(out) == [(0, "A0+e0", 1003), (1, "A1+e1", 1003), (2, "A2+e2", 1003), (3, "A3+e3", 1003)]
        push(t2, "f", 1100)
        assert take(out) == [(0, "A0+f0", 1100), (1, "A1+f1", 1100), (2, "A2+f2", 1100), (3, "A3+f3", 1100)]
        push(t2, "g", 1101)
        assert take(out) == [(1, "A1+g1", 1101), (2, "A2+g2", 1101), (3, "A3+g3", 1101)]
        push(t2, "h", 1102)
        assert take(out) == [(2, "A2+h2", 1102), (3, "A3+h3", 1102)]
        push(t2, "i", 1103)
        assert take(out) == [(3, "A3+i3", 1103)]
        push(t2, "j", 1104)
        assert take(out) == []


def test_asymmetric_windowing_before():
    """KStreamKStreamJoinTest.testAsymmetricWindowingBefore:
    ``ofTimeDifferenceWithNoGrace(0).before(100)``: a left record at t joins right
    records in [t - 100, t]."""
    windows = JoinWindows.of_time_difference_with_no_grace(0).before(100)
    with joined_driver("join", windows) as (t1, t2, out, _):
        push(t1, "A", 1000, increasing=True)
        assert take(out) == []
        push(t2, "a", 899)
        assert take(out) == []
        push(t2, "b", 900)
        assert take(out) == [(0, "A0+b0", 1000)]
        push(t2, "c", 901)
        assert take(out) == [(0, "A0+c0", 1000), (1, "A1+c1", 1001)]
        push(t2, "d", 902)
        assert take(out) == [(0, "A0+d0", 1000), (1, "A1+d1", 1001), (2, "A2+d2", 1002)]
        push(t2, "e", 903)
        assert take(out) == [(0, "A0+e0", 1000), (1, "A1+e1", 1001), (2, "A2+e2", 1002), (3, "A3+e3", 1003)]
        push(t2, "f", 1000)
        assert take(out) == [(0, "A0+f0", 1000), (1, "A1+f1", 1001), (2, "A2+f2", 1002), (3, "A3+f3", 1003)]
        push(t2, "g", 1001)
        assert take(out) == [(1, "A1+g1", 1001), (2, "A2+g2", 1002), (3, "A3+g3", 1003)]
        push(t2, "h", 1002)
        assert take(out) == [(2, "A2+h2", 1002), (3, "A3+h3", 1003)]
        push(t2, "i", 1003)
        assert take(out) == [(3, "A3+i3", 1003)]
        push(t2, "j", 1004)
        assert take(out) == []


def test_rekeyed_stream_joined_twice_reuses_one_repartition_topic():
    """KStreamKStreamJoinTest.shouldReuseRepartitionTopicWithGeneratedName (its structure,
    not the description string): a re-keyed stream joined with two streams is
    repartitioned once, and both joins read that one topic in one sub-topology."""
    builder = StreamsBuilder()
    rekeyed = builder.stream("topic", consumed=Consumed.with_(S, S)).map(lambda k, v: (v, k))
    s2 = builder.stream("topic2", consumed=Consumed.with_(S, S))
    s3 = builder.stream("topic3", consumed=Consumed.with_(S, S))
    rekeyed.join(s2, lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(100)).to("out-one")
    rekeyed.join(s3, lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(100)).to("out-to")
    topology = builder.build()
    text = topology.describe()
    assert len(set(re.findall(r"Sink: \S+ \(topic: (\S+-repartition)\)", text))) == 1
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        driver.create_input_topic("topic2", S, S).pipe_input("v", "2", 5)
        driver.create_input_topic("topic3", S, S).pipe_input("v", "3", 5)
        driver.create_input_topic("topic", S, S).pipe_input("k", "v", 6)
        assert take(driver.create_output_topic("out-one", S, S)) == [("v", "k2", 6)]
        assert take(driver.create_output_topic("out-to", S, S)) == [("v", "k3", 6)]


# --------------------------------------------------------------------------------------
# KStreamKStreamLeftJoinTest
# --------------------------------------------------------------------------------------

def test_left_expired_non_joined_records_are_emitted_by_the_left_processor_exact():
    """KStreamKStreamLeftJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor,
    with its exact timestamps (the right-side dummy at 401, the same time as the left one)."""
    windows = JoinWindows.of_time_difference_and_grace(100, 0)
    with joined_driver("left_join", windows) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 1)
        t1.pipe_input(1, "A1", 2)
        t1.pipe_input(0, "A0-0", 3)
        assert take(out) == []
        t2.pipe_input(1, "a1", 3)
        assert take(out) == [(1, "A1+a1", 3)]
        t1.pipe_input(2, "dummy", 401)
        assert take(out) == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
        t2.pipe_input(2, "dummy", 401)
        assert take(out) == [(2, "dummy+dummy", 401)]


def test_left_joined_records_with_zero_after_are_emitted():
    """KStreamKStreamLeftJoinTest.testLeftJoinedRecordsWithZeroAfterAreEmitted:
    ``ofTimeDifferenceWithNoGrace(100).after(0)``; a left record's window closes as soon
    as stream time passes it, yet a later right record still joins it (Kafka emits
    both the ``+null`` and the joined result)."""
    windows = JoinWindows.of_time_difference_with_no_grace(100).after(0)
    with joined_driver("left_join", windows) as (t1, t2, out, _):
        push(t1, "A", 1000, increasing=True)
        assert take(out) == [(0, "A0+null", 1000), (1, "A1+null", 1001), (2, "A2+null", 1002)]
        push(t2, "a", 999)
        assert take(out) == [(0, "A0+a0", 1000), (1, "A1+a1", 1001), (2, "A2+a2", 1002), (3, "A3+a3", 1003)]
        push(t2, "b", 1000)
        assert take(out) == [(0, "A0+b0", 1000), (1, "A1+b1", 1001), (2, "A2+b2", 1002), (3, "A3+b3", 1003)]
        push(t2, "c", 1001)
        assert take(out) == [(1, "A1+c1", 1001), (2, "A2+c2", 1002), (3, "A3+c3", 1003)]
        push(t2, "d", 1002)
        assert take(out) == [(2, "A2+d2", 1002), (3, "A3+d3", 1003)]
        push(t2, "e", 1003)
        assert take(out) == [(3, "A3+e3", 1003)]
        push(t2, "f", 1100)
        assert take(out) == []


def test_left_join_with_default_suppliers():
    """KStreamKStreamLeftJoinTest.testLeftJoinWithDefaultSuppliers (its ``runLeftJoin``),
    all records at time 0, 100 ms windows without grace."""
    with joined_driver("left_join", JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push(t2, "a", 0, KEYS[:2])
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
        push(t1, "B", 0, KEYS[:3])
        assert take(out) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
        push(t2, "b", 0)
        assert take(out) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                             (2, "B2+b2", 0)]
        push(t1, "C", 0)
        assert take(out) == [(0, "C0+a0", 0), (0, "C0+b0", 0), (1, "C1+a1", 0), (1, "C1+b1", 0),
                             (2, "C2+b2", 0), (3, "C3+b3", 0)]
        t1.pipe_input(0, "dummy", 1000)
        assert take(out) == []


def test_left_join_ordering():
    """KStreamKStreamLeftJoinTest.testOrdering: the expired ``A0+null`` comes out before
    the join result of the record that closed its window."""
    with joined_driver("left_join", JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0)
        t1.pipe_input(1, "A1", 100)
        assert take(out) == []
        t2.pipe_input(1, "a1", 110)
        assert take(out) == [(0, "A0+null", 0), (1, "A1+a1", 110)]


def test_left_join_grace_period():
    """KStreamKStreamLeftJoinTest.testGracePeriod: 100 ms windows with 10 ms grace;
    unmatched left records wait until stream time passes window end + grace."""
    windows = JoinWindows.of_time_difference_and_grace(100, 10)
    with joined_driver("left_join", windows) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push(t2, "a", 101)
        assert take(out) == []
        t2.pipe_input(0, "dummy", 1201)
        assert take(out) == [(0, "A0+null", 0), (1, "A1+null", 0)]


def test_left_join_windowing():
    """KStreamKStreamLeftJoinTest.testWindowing with testUpperWindowBound and
    testLowerWindowBound: late left records outside every window are emitted at once
    with ``null``; unmatched ones wait for their window to close."""
    with joined_driver("left_join", JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push(t2, "a", 0)
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]

        # testUpperWindowBound
        push(t2, "b", 1000, increasing=True)
        assert take(out) == []
        push(t1, "B", 1100)
        assert take(out) == [(0, "B0+b0", 1100), (1, "B1+b1", 1100), (2, "B2+b2", 1100), (3, "B3+b3", 1100)]
        push(t1, "C", 1101)
        assert take(out) == [(1, "C1+b1", 1101), (2, "C2+b2", 1101), (3, "C3+b3", 1101)]
        push(t1, "D", 1102)
        assert take(out) == [(2, "D2+b2", 1102), (3, "D3+b3", 1102)]
        push(t1, "E", 1103)
        assert take(out) == [(3, "E3+b3", 1103)]
        push(t1, "F", 1104)
        assert take(out) == []
        t1.pipe_input(0, "dummy", 1405)
        assert take(out) == [(0, "C0+null", 1101), (0, "D0+null", 1102), (1, "D1+null", 1102),
                             (0, "E0+null", 1103), (1, "E1+null", 1103), (2, "E2+null", 1103),
                             (0, "F0+null", 1104), (1, "F1+null", 1104), (2, "F2+null", 1104),
                             (3, "F3+null", 1104)]

        # testLowerWindowBound
        push(t1, "G", 899)
        assert take(out) == [(0, "G0+null", 899), (1, "G1+null", 899), (2, "G2+null", 899), (3, "G3+null", 899)]
        push(t1, "H", 900)
        assert take(out) == [(0, "H0+b0", 1000), (1, "H1+null", 900), (2, "H2+null", 900), (3, "H3+null", 900)]
        push(t1, "I", 901)
        assert take(out) == [(0, "I0+b0", 1000), (1, "I1+b1", 1001), (2, "I2+null", 901), (3, "I3+null", 901)]
        push(t1, "J", 902)
        assert take(out) == [(0, "J0+b0", 1000), (1, "J1+b1", 1001), (2, "J2+b2", 1002), (3, "J3+null", 902)]
        push(t1, "K", 903)
        assert take(out) == [(0, "K0+b0", 1000), (1, "K1+b1", 1001), (2, "K2+b2", 1002), (3, "K3+b3", 1003)]
        t1.pipe_input(0, "dummy", 1203)
        assert take(out) == [(0, "dummy+null", 1203)]


def test_left_join_should_not_emit_left_join_result_for_asymmetric_window():
    """KStreamKStreamLeftJoinTest.shouldNotEmitLeftJoinResultForAsymmetricWindow:
    ``ofTimeDifferenceWithNoGrace(100).before(0)``."""
    windows = JoinWindows.of_time_difference_with_no_grace(100).before(0)
    with joined_driver("left_join", windows) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2], increasing=True)
        assert take(out) == []
        t2.pipe_input(0, "a0", 100)
        assert take(out) == [(0, "A0+a0", 100)]
        t2.pipe_input(1, "a1", 102)
        assert take(out) == [(1, "A1+null", 1)]


# --------------------------------------------------------------------------------------
# KStreamKStreamOuterJoinTest  (topic2 carries Long values)
# --------------------------------------------------------------------------------------

def outer(windows):
    return joined_driver("outer_join", windows, right_serde=L)


def test_outer_left_expired_non_joined_records_are_emitted_by_the_left_processor():
    """KStreamKStreamOuterJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor."""
    with outer(JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 1)
        t1.pipe_input(1, "A1", 2)
        t1.pipe_input(0, "A0-0", 3)
        assert take(out) == []
        t2.pipe_input(1, 11, 3)
        assert take(out) == [(1, "A1+11", 3)]
        t1.pipe_input(2, "dummy", 401)
        assert take(out) == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
        t2.pipe_input(2, 100, 401)
        assert take(out) == [(2, "dummy+100", 401)]


def test_outer_left_expired_non_joined_records_are_emitted_by_the_right_processor():
    """KStreamKStreamOuterJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor."""
    with outer(JoinWindows.of_time_difference_and_grace(100, 0)) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 1)
        t1.pipe_input(1, "A1", 2)
        t1.pipe_input(0, "A0-0", 3)
        assert take(out) == []
        t2.pipe_input(1, 11, 3)
        assert take(out) == [(1, "A1+11", 3)]
        t2.pipe_input(2, 100, 401)
        assert take(out) == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
        t1.pipe_input(2, "dummy", 402)
        assert take(out) == [(2, "dummy+100", 402)]


def test_outer_right_expired_non_joined_records_are_emitted_by_the_right_processor():
    """KStreamKStreamOuterJoinTest.testRightExpiredNonJoinedRecordsAreEmittedByTheRightProcessor."""
    with outer(JoinWindows.of_time_difference_and_grace(100, 0)) as (t1, t2, out, _):
        t2.pipe_input(0, 10, 1)
        t2.pipe_input(1, 11, 2)
        t2.pipe_input(0, 12, 3)
        assert take(out) == []
        t1.pipe_input(1, "A1", 3)
        assert take(out) == [(1, "A1+11", 3)]
        t2.pipe_input(2, 100, 401)
        assert take(out) == [(0, "null+10", 1), (0, "null+12", 3)]
        t1.pipe_input(2, "dummy", 402)
        assert take(out) == [(2, "dummy+100", 402)]


def test_outer_emit_all_non_joined_results_for_asymmetric_window():
    """KStreamKStreamOuterJoinTest.testEmitAllNonJoinedResultsForAsymmetricWindow:
    ``ofTimeDifferenceWithNoGrace(5).after(20)``: a left record waits ``after`` (20 ms),
    a right record ``before`` (5 ms) before it is emitted unmatched."""
    windows = JoinWindows.of_time_difference_with_no_grace(5).after(20)
    with outer(windows) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 29)
        assert take(out) == []
        t1.pipe_input(1, "A1", 30)
        assert take(out) == []
        t2.pipe_input(2, 12, 31)
        assert take(out) == []
        t2.pipe_input(3, 13, 36)
        assert take(out) == []
        t2.pipe_input(4, 14, 37)
        assert take(out) == [(2, "null+12", 31)]
        t2.pipe_input(5, 15, 50)
        assert take(out) == [(0, "A0+null", 29), (3, "null+13", 36), (4, "null+14", 37)]


def test_outer_join_with_default_suppliers():
    """KStreamKStreamOuterJoinTest.testOuterJoinWithDefaultSuppliers (its ``runOuterJoin``),
    all records at time 0."""
    with outer(JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push_long(t2, 10, 0, KEYS[:2])
        assert take(out) == [(0, "A0+10", 0), (1, "A1+11", 0)]
        push(t1, "B", 0, KEYS[:3])
        assert take(out) == [(0, "B0+10", 0), (1, "B1+11", 0)]
        push_long(t2, 20, 0)
        assert take(out) == [(0, "A0+20", 0), (0, "B0+20", 0), (1, "A1+21", 0), (1, "B1+21", 0),
                             (2, "B2+22", 0)]
        push(t1, "C", 0)
        assert take(out) == [(0, "C0+10", 0), (0, "C0+20", 0), (1, "C1+11", 0), (1, "C1+21", 0),
                             (2, "C2+22", 0), (3, "C3+23", 0)]
        t1.pipe_input(0, "dummy", 400)
        assert take(out) == []


def test_outer_join_windowing():
    """KStreamKStreamOuterJoinTest.testWindowing with testUpperWindowBound and
    testLowerWindowBound."""
    with outer(JoinWindows.of_time_difference_with_no_grace(100)) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2])
        assert take(out) == []
        push_long(t2, 10, 0)
        assert take(out) == [(0, "A0+10", 0), (1, "A1+11", 0)]

        # testUpperWindowBound
        push_long(t2, 20, 1000, increasing=True)
        assert take(out) == [(2, "null+12", 0), (3, "null+13", 0)]
        push(t1, "B", 1100)
        assert take(out) == [(0, "B0+20", 1100), (1, "B1+21", 1100), (2, "B2+22", 1100), (3, "B3+23", 1100)]
        push(t1, "C", 1101)
        assert take(out) == [(1, "C1+21", 1101), (2, "C2+22", 1101), (3, "C3+23", 1101)]
        push(t1, "D", 1102)
        assert take(out) == [(2, "D2+22", 1102), (3, "D3+23", 1102)]
        push(t1, "E", 1103)
        assert take(out) == [(3, "E3+23", 1103)]
        push(t1, "F", 1104)
        assert take(out) == []
        t1.pipe_input(0, "dummy", 1405)
        assert take(out) == [(0, "C0+null", 1101), (0, "D0+null", 1102), (1, "D1+null", 1102),
                             (0, "E0+null", 1103), (1, "E1+null", 1103), (2, "E2+null", 1103),
                             (0, "F0+null", 1104), (1, "F1+null", 1104), (2, "F2+null", 1104),
                             (3, "F3+null", 1104)]

        # testLowerWindowBound
        push(t1, "G", 899)
        assert take(out) == [(0, "G0+null", 899), (1, "G1+null", 899), (2, "G2+null", 899), (3, "G3+null", 899)]
        push(t1, "H", 900)
        assert take(out) == [(0, "H0+20", 1000), (1, "H1+null", 900), (2, "H2+null", 900), (3, "H3+null", 900)]
        push(t1, "I", 901)
        assert take(out) == [(0, "I0+20", 1000), (1, "I1+21", 1001), (2, "I2+null", 901), (3, "I3+null", 901)]
        push(t1, "J", 902)
        assert take(out) == [(0, "J0+20", 1000), (1, "J1+21", 1001), (2, "J2+22", 1002), (3, "J3+null", 902)]
        push(t1, "K", 903)
        assert take(out) == [(0, "K0+20", 1000), (1, "K1+21", 1001), (2, "K2+22", 1002), (3, "K3+23", 1003)]
        t1.pipe_input(0, "dummy", 1103)
        assert take(out) == [(0, "dummy+null", 1103)]


def test_outer_should_not_emit_left_join_result_for_asymmetric_before_window():
    """KStreamKStreamOuterJoinTest.testShouldNotEmitLeftJoinResultForAsymmetricBeforeWindow:
    ``ofTimeDifferenceWithNoGrace(100).before(0)``."""
    windows = JoinWindows.of_time_difference_with_no_grace(100).before(0)
    with outer(windows) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2], increasing=True)
        assert take(out) == []
        t2.pipe_input(0, 10, 100)
        assert take(out) == [(0, "A0+10", 100)]
        t2.pipe_input(1, 11, 102)
        assert take(out) == [(1, "A1+null", 1)]
        t2.pipe_input(2, 12, 103)
        assert take(out) == [(1, "null+11", 102)]
        t1.pipe_input(2, "A2", 103)
        assert take(out) == [(2, "A2+12", 103)]


def test_outer_should_not_emit_left_join_result_for_asymmetric_after_window():
    """KStreamKStreamOuterJoinTest.testShouldNotEmitLeftJoinResultForAsymmetricAfterWindow:
    ``ofTimeDifferenceWithNoGrace(100).after(0)``."""
    windows = JoinWindows.of_time_difference_with_no_grace(100).after(0)
    with outer(windows) as (t1, t2, out, _):
        push(t1, "A", 0, KEYS[:2], increasing=True)
        assert take(out) == [(0, "A0+null", 0)]
        t2.pipe_input(1, 11, 1)
        assert take(out) == [(1, "A1+11", 1)]
        t2.pipe_input(2, 12, 101)
        assert take(out) == []
        t2.pipe_input(3, 13, 101)
        assert take(out) == []
        t1.pipe_input(2, "A2", 201)
        assert take(out) == [(2, "A2+12", 201)]


def test_outer_join_should_forward_current_headers():
    """KStreamKStreamOuterJoinTest.testShouldForwardCurrentHeaders: results, including
    expired unmatched records emitted later, carry the headers of the record being
    processed (Kafka calls this undefined but pins it)."""
    with outer(JoinWindows.of_time_difference_and_grace(100, 10)) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0, headers={"h": b"\x01"})
        t2.pipe_input(1, 10, 0, headers={"h": b"\x02"})
        t2.pipe_input(3, 100, 211, headers={"h": b"\x03"})
        records = out.read_records_to_list()
        assert kvt(records) == [(1, "null+10", 0), (0, "A0+null", 0)]
        assert [r.headers for r in records] == [{"h": b"\x03"}, {"h": b"\x03"}]
        t1.pipe_input(2, "A2", 200, headers={"h": b"\x04"})
        t2.pipe_input(2, 12, 200, headers={"h": b"\x05"})
        records = out.read_records_to_list()
        assert kvt(records) == [(2, "A2+12", 200)]
        assert [r.headers for r in records] == [{"h": b"\x05"}]


# --------------------------------------------------------------------------------------
# KStreamImplTest (semantic methods)
# --------------------------------------------------------------------------------------

def test_merge_multiple_streams_keeps_processing_order_and_timestamps():
    """KStreamImplTest.shouldMergeMultipleStreams."""
    builder = StreamsBuilder()
    sources = [builder.stream(f"topic-{i}", consumed=Consumed.with_(S, S)) for i in range(1, 5)]
    sources[0].merge(sources[1]).merge(sources[2]).merge(sources[3]).to("out", Produced.with_(S, S))
    with driver_for(builder) as driver:
        topics = {i: driver.create_input_topic(f"topic-{i}", S, S) for i in range(1, 5)}
        for i, k, v, ts in [(1, "A", "aa", 1), (2, "B", "bb", 9), (3, "C", "cc", 2), (4, "D", "dd", 8),
                            (4, "E", "ee", 3), (3, "F", "ff", 7), (2, "G", "gg", 4), (1, "H", "hh", 6)]:
            topics[i].pipe_input(k, v, ts)
        assert take(driver.create_output_topic("out", S, S)) == [
            ("A", "aa", 1), ("B", "bb", 9), ("C", "cc", 2), ("D", "dd", 8),
            ("E", "ee", 3), ("F", "ff", 7), ("G", "gg", 4), ("H", "hh", 6)]


def test_send_data_to_topic_using_produced_and_read_it_back():
    """KStreamImplTest.shouldSendDataToTopicUsingProduced: a topic written with ``to``
    and read by another source of the same topology."""
    builder = StreamsBuilder()
    builder.stream("topic", consumed=Consumed.with_(S, S)).to("to-topic", Produced.with_(S, S))
    builder.stream("to-topic", consumed=Consumed.with_(S, S)).to("out", Produced.with_(S, S))
    with driver_for(builder) as driver:
        driver.create_input_topic("topic", S, S).pipe_input("e", "f", 0)
        assert take(driver.create_output_topic("out", S, S)) == [("e", "f", 0)]


def test_repartition_flag_propagates_after_global_ktable_join():
    """KStreamImplTest.shouldPropagateRepartitionFlagAfterGlobalKTableJoin: a key changed
    before a global-table join still needs a repartition before ``group_by_key``."""
    builder = StreamsBuilder()
    gtable = builder.global_table("globalTopic")
    builder.stream("topic").select_key(lambda k, v: v) \
        .join(gtable, lambda k, v: k + v, lambda v1, v2: v1 + v2) \
        .group_by_key().count()
    text = builder.build().describe()
    match = re.search(r"Sink: .*-repartition", text)
    assert match is not None and match.group().endswith("repartition")


def test_to_table_without_materialization_forwards_every_record():
    """KStreamImplTest.shouldNotMaterializedKTableFromKStream (driver part): to_table()
    then to_stream() forwards every record with its own timestamp, out-of-order ones too."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).to_table().to_stream().to("output")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in [("A", "01", 5), ("B", "02", 100), ("C", "03", 0), ("D", "04", 0),
                         ("A", "05", 10), ("A", "06", 8)]:
            inp.pipe_input(k, v, ts)
        assert take(driver.create_output_topic("output", S, S)) == [
            ("A", "01", 5), ("B", "02", 100), ("C", "03", 0), ("D", "04", 0), ("A", "05", 10), ("A", "06", 8)]


def test_to_table_after_a_key_change():
    """KStreamImplTest.shouldSupportKeyChangeKTableFromKStream (driver part)."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)) \
        .map(lambda k, v: (ord(k[0]) - ord("A"), v)) \
        .to_table(Materialized.with_(I, None)) \
        .to_stream().to("output", Produced.with_(I, S))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in [("A", "01", 5), ("B", "02", 100), ("C", "03", 0), ("D", "04", 0),
                         ("A", "05", 10), ("A", "06", 8)]:
            inp.pipe_input(k, v, ts)
        assert take(driver.create_output_topic("output", I, S)) == [
            (0, "01", 5), (1, "02", 100), (2, "03", 0), (3, "04", 0), (0, "05", 10), (0, "06", 8)]


def test_to_table_then_foreign_key_join():
    """KStreamImplTest.shouldSupportForeignKeyTableTableJoinWithKTableFromKStream (driver part)."""
    builder = StreamsBuilder()
    left = builder.stream("input1", consumed=Consumed.with_(S, S)).to_table()
    right = builder.stream("input2", consumed=Consumed.with_(S, S)).to_table()
    left.join(right, lambda v1, v2: f"({v1},{v2})", foreign_key_extractor=lambda v: v.split("|")[1]) \
        .to_stream().to("output")
    with driver_for(builder) as driver:
        lt = driver.create_input_topic("input1", S, S)
        rt = driver.create_input_topic("input2", S, S)
        out = driver.create_output_topic("output", S, S)
        rt.pipe_input("rhs1", "rhsValue1", 0)
        rt.pipe_input("rhs2", "rhsValue2", 0)
        rt.pipe_input("rhs3", "rhsValue3", 0)
        assert out.read_key_values_to_map() == {}
        lt.pipe_input("lhs1", "lhsValue1|rhs1", 0)
        lt.pipe_input("lhs2", "lhsValue2|rhs2", 0)
        assert out.read_key_values_to_map() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)",
                                                "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        lt.pipe_input("lhs3", "lhsValue3|rhs1", 0)
        assert out.read_key_values_to_map() == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        lt.pipe_input("lhs1", None, 0)
        assert out.read_key_values_to_map() == {"lhs1": None}


def _table_join_after_to_table(stream_side: bool) -> None:
    builder = StreamsBuilder()
    table = builder.stream("right", consumed=Consumed.with_(S, S)).to_table()
    left = builder.stream("left", consumed=Consumed.with_(S, S))
    if stream_side:
        left.join(table, tostring_joiner).to("output")
    else:
        left.to_table().join(table, tostring_joiner).to_stream().to("output")
    with driver_for(builder) as driver:
        lt = driver.create_input_topic("left", S, S)
        rt = driver.create_input_topic("right", S, S)
        out = driver.create_output_topic("output", S, S)
        rt.pipe_input("lhs1", "rhsValue1", 0)
        rt.pipe_input("rhs2", "rhsValue2", 0)
        rt.pipe_input("lhs3", "rhsValue3", 0)
        assert out.read_key_values_to_map() == {}
        lt.pipe_input("lhs1", "lhsValue1", 0)
        lt.pipe_input("lhs2", "lhsValue2", 0)
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue1+rhsValue1"}
        lt.pipe_input("lhs3", "lhsValue3", 0)
        assert out.read_key_values_to_map() == {"lhs3": "lhsValue3+rhsValue3"}
        lt.pipe_input("lhs1", "lhsValue4", 0)
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue4+rhsValue1"}


def test_to_table_then_table_table_join():
    """KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable (driver part)."""
    _table_join_after_to_table(stream_side=False)


def test_stream_table_join_with_to_table():
    """KStreamImplTest.shouldSupportStreamTableJoinWithKStreamToKTable (driver part)."""
    _table_join_after_to_table(stream_side=True)


def test_to_table_group_by_count():
    """KStreamImplTest.shouldSupportGroupByCountWithKStreamToKTable (driver part): the
    subtract/add pair of a re-grouped update, with Kafka's result timestamps."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).to_table() \
        .group_by(lambda k, v: (v, v), Grouped.with_(S, S)).count() \
        .to_stream().to("output", Produced.with_(S, L))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12),
                         ("C", "yellow", 15), ("D", "green", 11)]:
            inp.pipe_input(k, v, ts)
        assert take(driver.create_output_topic("output", S, L)) == [
            ("green", 1, 10), ("green", 2, 10), ("green", 1, 12), ("blue", 1, 12),
            ("yellow", 1, 15), ("green", 2, 12)]


def test_to_table_then_materialized_map_values():
    """KStreamImplTest.shouldSupportTriggerMaterializedWithKTableFromKStream (driver part)."""
    builder = StreamsBuilder()
    builder.stream("input", consumed=Consumed.with_(S, S)).to_table() \
        .map_values(lambda v: ord(v[0]) - ord("a"), Materialized.as_("store").with_key_serde(S).with_value_serde(I)) \
        .to_stream().to("output", Produced.with_(S, I))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, v, ts in [("A", "green", 10), ("B", "green", 9), ("A", "blue", 12),
                         ("C", "yellow", 15), ("D", "green", 11)]:
            inp.pipe_input(k, v, ts)
        assert dict(driver.get_key_value_store("store").all()) == {"A": 1, "B": 6, "C": 24, "D": 6}
        assert take(driver.create_output_topic("output", S, I)) == [
            ("A", 6, 10), ("B", 6, 9), ("A", 1, 12), ("C", 24, 15), ("D", 6, 11)]


# --------------------------------------------------------------------------------------
# KStreamFlatMapTest, KStreamSplitTest
# --------------------------------------------------------------------------------------

def test_flat_map_mapper_returning_none_fails():
    """KStreamFlatMapTest.testKeyValueMapperResultNotNull: a flat_map mapper that returns
    None (not an iterable) is an error, not an empty result."""
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, I)).flat_map(lambda k, v: None).to("out")
    with driver_for(builder) as driver:
        with pytest.raises(Exception):
            driver.create_input_topic("in", S, I).pipe_input("K", 0, 0)


SPLIT_KEYS = (-1, 0, 1, 2, 3, 4, 5, 6, 7)


def _split_driver(builder, outputs):
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("topic", I, S)
        for k in SPLIT_KEYS:
            inp.pipe_input(k, f"V{k}", 0)
        return {name: driver.create_output_topic(name, I, S).read_values_to_list() for name in outputs}


def is_even(k, v):
    return k % 2 == 0


def is_multiple_of_three(k, v):
    return k % 3 == 0


def is_multiple_of_five(k, v):
    return k % 5 == 0


def is_multiple_of_seven(k, v):
    return k % 7 == 0


def is_negative(k, v):
    return k < 0


def test_kstream_split():
    """KStreamSplitTest.testKStreamSplit: each record goes to its first matching branch
    (Kafka's ``Branched.withConsumer(ks -> ks.to(...))`` written as ``to`` on the branches)."""
    builder = StreamsBuilder()
    branches = builder.stream("topic", consumed=Consumed.with_(I, S)).split() \
        .branch(is_even).branch(is_multiple_of_three).branch(is_multiple_of_five).no_default_branch()
    for name, topic in zip(sorted(branches), ("x2", "x3", "x5")):
        branches[name].to(topic, Produced.with_(I, S))
    got = _split_driver(builder, ["x2", "x3", "x5"])
    assert got == {"x2": ["V0", "V2", "V4", "V6"], "x3": ["V3"], "x5": ["V5"]}


def test_split_resulting_map():
    """KStreamSplitTest.testResultingMap: branch names are the split's prefix plus the
    branch's name or its 1-based position; the default branch is "0"."""
    builder = StreamsBuilder()
    branches = builder.stream("topic", consumed=Consumed.with_(I, S)).split(name="foo-") \
        .branch(is_even, name="bar") \
        .branch(is_multiple_of_three) \
        .branch(is_multiple_of_five) \
        .branch(is_negative) \
        .branch(is_multiple_of_seven) \
        .default_branch()
    # Kafka's map has 4 entries because branches 2 and 3 are consumed by Branched
    # functions; here all six are returned.
    assert set(branches) == {"foo-bar", "foo-2", "foo-3", "foo-4", "foo-5", "foo-0"}
    for name in ("foo-bar", "foo-4", "foo-5", "foo-0"):
        branches[name].to(name, Produced.with_(I, S))
    got = _split_driver(builder, ["foo-bar", "foo-4", "foo-5", "foo-0"])
    assert got == {"foo-bar": ["V0", "V2", "V4", "V6"], "foo-4": ["V-1"], "foo-5": ["V7"], "foo-0": ["V1"]}


def test_branches_writing_to_the_same_topic():
    """KStreamSplitTest.testBranchingWithNoTerminalOperation: two branches into one topic
    interleave in processing order; unmatched records are dropped."""
    builder = StreamsBuilder()
    branches = builder.stream("topic", consumed=Consumed.with_(I, S)).split() \
        .branch(is_even).branch(is_multiple_of_five).no_default_branch()
    for stream in branches.values():
        stream.to("output", Produced.with_(I, S))
    got = _split_driver(builder, ["output"])
    assert got == {"output": ["V0", "V2", "V4", "V5", "V6"]}
