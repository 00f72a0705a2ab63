"""Stream–stream joins, ported from Kafka Streams' KStreamKStreamJoinTest,
KStreamKStreamLeftJoinTest and KStreamKStreamOuterJoinTest (TopologyTestDriver).

Kafka's tests capture the join's output with a mock processor; here the join writes
to a topic and the test reads it, which shows the same records in the same order."""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from streamlib import Consumed, JoinWindows, Joined, Produced, StreamsBuilder
from streamlib.topology import TopologyError

from join_helpers import tostring_joiner
from streams_helpers import I, L, S, driver_for, kvt

KEYS = (0, 1, 2, 3)


@contextmanager
def joined_driver(how: str, windows: JoinWindows, right_serde=S):
    """topic1 ⋈ topic2 (Integer keys; String values, ``right_serde`` on topic2) into "out"."""
    builder = StreamsBuilder()
    s1 = builder.stream("topic1", consumed=Consumed.with_(I, S))
    s2 = builder.stream("topic2", consumed=Consumed.with_(I, right_serde))
    getattr(s1, how)(s2, tostring_joiner, windows).to("out", Produced.with_(I, S))
    with driver_for(builder) as driver:
        yield (driver.create_input_topic("topic1", I, S), driver.create_input_topic("topic2", I, right_serde),
               driver.create_output_topic("out", I, S), driver)


def take(out) -> list[tuple]:
    return kvt(out.read_records_to_list())


def test_join():
    """KStreamKStreamJoinTest.testJoin: every record meets all the other side's records
    of its key in the window, duplicates included."""
    with joined_driver("join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        for k in KEYS[:2]:
            t1.pipe_input(k, f"A{k}", 0)
        assert take(out) == []
        for k in KEYS[:2]:
            t2.pipe_input(k, f"a{k}", 0)
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
        for k in KEYS:
            t1.pipe_input(k, f"B{k}", 0)
        assert take(out) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
        for k in KEYS:
            t2.pipe_input(k, f"b{k}", 0)
        assert take(out) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                             (2, "B2+b2", 0), (3, "B3+b3", 0)]
        for k in KEYS:
            t1.pipe_input(k, f"C{k}", 0)
        assert take(out) == [(0, "C0+a0", 0), (0, "C0+b0", 0), (1, "C1+a1", 0), (1, "C1+b1", 0),
                             (2, "C2+b2", 0), (3, "C3+b3", 0)]
        for k in KEYS[:2]:
            t2.pipe_input(k, f"c{k}", 0)
        assert take(out) == [(0, "A0+c0", 0), (0, "B0+c0", 0), (0, "C0+c0", 0),
                             (1, "A1+c1", 0), (1, "B1+c1", 0), (1, "C1+c1", 0)]


def test_outer_join_holds_unmatched_records_within_grace():
    """KStreamKStreamJoinTest.testOuterJoin: with 24h grace, unmatched records are held
    back, so the output equals the inner join's."""
    windows = JoinWindows.of_time_difference(100, grace=24 * 3600 * 1000)
    with joined_driver("outer_join", windows) as (t1, t2, out, _):
        for k in KEYS[:2]:
            t1.pipe_input(k, f"A{k}", 0)
        assert take(out) == []
        for k in KEYS[:2]:
            t2.pipe_input(k, f"a{k}", 0)
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
        for k in KEYS:
            t1.pipe_input(k, f"B{k}", 0)
        assert take(out) == [(0, "B0+a0", 0), (1, "B1+a1", 0)]
        for k in KEYS:
            t2.pipe_input(k, f"b{k}", 0)
        assert take(out) == [(0, "A0+b0", 0), (0, "B0+b0", 0), (1, "A1+b1", 0), (1, "B1+b1", 0),
                             (2, "B2+b2", 0), (3, "B3+b3", 0)]


def test_windowing():
    """KStreamKStreamJoinTest.testWindowing (first part): records join only within
    ±100 ms; the result carries the larger timestamp."""
    with joined_driver("join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        for k in KEYS[:2]:
            t1.pipe_input(k, f"A{k}", 0)
        for k in KEYS[:2]:
            t2.pipe_input(k, f"a{k}", 0)
        assert take(out) == [(0, "A0+a0", 0), (1, "A1+a1", 0)]
        for i, k in enumerate(KEYS):
            t1.pipe_input(k, f"B{k}", 1000 + i)
        assert take(out) == []
        expected = {1100: [0, 1, 2, 3], 1101: [1, 2, 3], 1102: [2, 3], 1103: [3], 1104: []}
        for prefix, (time, keys) in zip("bcdef", expected.items()):
            for k in KEYS:
                t2.pipe_input(k, f"{prefix}{k}", time)
            assert take(out) == [(k, f"B{k}+{prefix}{k}", time) for k in keys]
        for k in KEYS:   # before the window's lower bound of B0 (1000 - 100 - 1)
            t2.pipe_input(k, f"g{k}", 899)
        assert take(out) == []
        for k in KEYS:
            t2.pipe_input(k, f"h{k}", 900)
        assert take(out) == [(0, "B0+h0", 1000)]


def test_asymmetric_windows_after():
    """KStreamKStreamJoinTest.testAsymmetricWindowingAfter (first steps): with
    ``before(0).after(100)`` a left record joins right records in [t, t + 100]."""
    windows = JoinWindows.of_time_difference(0).after(100)
    with joined_driver("join", windows) as (t1, t2, out, _):
        for i, k in enumerate(KEYS):
            t1.pipe_input(k, f"A{k}", 1000 + i)
        for k in KEYS:
            t2.pipe_input(k, f"b{k}", 999)
        assert take(out) == []
        for k in KEYS:
            t2.pipe_input(k, f"c{k}", 1000)
        assert take(out) == [(0, "A0+c0", 1000)]
        for k in KEYS:
            t2.pipe_input(k, f"d{k}", 1103)
        assert take(out) == [(k, f"A{k}+d{k}", 1103) for k in (3,)]


def test_null_key_or_value_is_dropped_by_an_inner_join():
    """KStreamKStreamJoinTest.shouldLogAndMeterOnSkippedRecordsWithNullValue...: a record
    with a None key or value joins nothing and is counted as dropped."""
    with joined_driver("join", JoinWindows.of_time_difference(100)) as (t1, t2, out, driver):
        t1.pipe_input(None, "A", 0)
        t1.pipe_input(1, None, 0)
        t2.pipe_input(1, "a", 0)
        assert take(out) == []
        assert driver.metrics()["dropped_records"] == 2


def test_left_join_duplicates():
    """KStreamKStreamLeftJoinTest.testLeftJoinDuplicates."""
    windows = JoinWindows.of_time_difference(100, grace=10)
    with joined_driver("left_join", windows) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0)
        t1.pipe_input(0, "A0-0", 0)
        t2.pipe_input(1, "a0", 111)
        t2.pipe_input(2, "dummy", 500)
        assert take(out) == [(0, "A0+null", 0), (0, "A0-0+null", 0)]
        t1.pipe_input(2, "A2", 1000)
        t1.pipe_input(2, "A2-0", 1000)
        t2.pipe_input(2, "a2", 1001)
        assert take(out) == [(2, "A2+a2", 1001), (2, "A2-0+a2", 1001)]
        t2.pipe_input(3, "a3", 315)
        assert take(out) == []


@pytest.mark.parametrize("closing_topic", ["topic1", "topic2"])
def test_left_expired_non_joined_records_are_emitted_by_either_processor(closing_topic):
    """KStreamKStreamLeftJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor
    and ...ByTheRightProcessor: a record of either side that moves stream time past a
    window's close emits the unmatched left records of that window."""
    with joined_driver("left_join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 1)
        t1.pipe_input(1, "A1", 2)
        t1.pipe_input(0, "A0-0", 3)
        assert take(out) == []
        t2.pipe_input(1, "a1", 3)
        assert take(out) == [(1, "A1+a1", 3)]
        closing, other = (t1, t2) if closing_topic == "topic1" else (t2, t1)
        closing.pipe_input(2, "dummy", 401)
        assert take(out) == [(0, "A0+null", 1), (0, "A0-0+null", 3)]
        other.pipe_input(2, "dummy", 402)
        assert take(out) == [(2, "dummy+dummy", 402)]


@pytest.mark.parametrize("closing_topic", ["topic1", "topic2"])
def test_right_non_joined_records_are_never_emitted_by_a_left_join(closing_topic):
    """KStreamKStreamLeftJoinTest.testRightNonJoinedRecordsAreNeverEmittedByThe{Left,Right}Processor."""
    with joined_driver("left_join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        t2.pipe_input(0, "A0", 1)
        t2.pipe_input(1, "A1", 2)
        t2.pipe_input(0, "A0-0", 3)
        assert take(out) == []
        t1.pipe_input(1, "a1", 3)
        assert take(out) == [(1, "a1+A1", 3)]
        closing, other = (t1, t2) if closing_topic == "topic1" else (t2, t1)
        closing.pipe_input(2, "dummy", 401)
        assert take(out) == []
        other.pipe_input(2, "dummy", 402)
        assert take(out) == [(2, "dummy+dummy", 402)]


def test_left_join_of_a_late_record_emits_at_once():
    """KStreamKStreamLeftJoinTest.testGracePeriod idea: a left record whose window is
    already closed (time + after < stream time) and has no partner yields
    ``joiner(v, None)`` at once instead of being buffered."""
    with joined_driver("left_join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        t2.pipe_input(9, "x", 1000)
        t1.pipe_input(0, "late", 500)
        assert take(out) == [(0, "late+null", 500)]


def test_left_join_of_a_none_key_emits_at_once():
    """Kafka's KIP-962: a left join forwards a record without a key as ``joiner(v, None)``."""
    with joined_driver("left_join", JoinWindows.of_time_difference(100)) as (t1, t2, out, _):
        t1.pipe_input(None, "A", 7)
        assert take(out) == [(None, "A+null", 7)]


def test_outer_join_duplicates():
    """KStreamKStreamOuterJoinTest.testOuterJoinDuplicates: unmatched records of both
    sides come out in time order, right before left at equal times."""
    windows = JoinWindows.of_time_difference(100, grace=10)
    with joined_driver("outer_join", windows, right_serde=L) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0)
        t1.pipe_input(0, "A0-0", 0)
        t2.pipe_input(1, 11, 0)
        t2.pipe_input(1, 12, 0)
        t2.pipe_input(1, 10, 111)
        t2.pipe_input(3, 100, 211)
        assert take(out) == [(1, "null+11", 0), (1, "null+12", 0), (0, "A0+null", 0),
                             (0, "A0-0+null", 0)]
        t1.pipe_input(2, "A2", 200)
        t1.pipe_input(2, "A2-0", 200)
        t2.pipe_input(2, 13, 201)
        t2.pipe_input(2, 14, 201)
        assert take(out) == [(2, "A2+13", 201), (2, "A2-0+13", 201), (2, "A2+14", 201),
                             (2, "A2-0+14", 201)]
        t2.pipe_input(3, 100, 1500)
        assert take(out) == [(1, "null+10", 111), (3, "null+100", 211)]


def test_outer_join_expiry_stops_per_buffered_value():
    """Kafka's outer-join store is a list-value store whose scan for expired records
    yields one entry per value: with both sides' windows open at ``b@39`` (two left
    values), the scan stops at the second value and remembers 39, so ``d@48`` emits the
    rest (issue 39's case, checked against Kafka Streams 4.3.1)."""
    windows = JoinWindows.of_time_difference(0, grace=8)
    builder = StreamsBuilder()
    left = builder.stream("topic1", consumed=Consumed.with_(S, S))
    right = builder.stream("topic2", consumed=Consumed.with_(S, S))
    left.outer_join(right, tostring_joiner, windows).to("out", Produced.with_(S, S))
    with driver_for(builder) as driver:
        t1, t2 = driver.create_input_topic("topic1", S, S), driver.create_input_topic("topic2", S, S)
        out = driver.create_output_topic("out", S, S)
        t2.pipe_input("a", "r0", 38)
        t1.pipe_input("b", "l1", 39)
        t1.pipe_input("b", "l2", 39)
        t2.pipe_input("c", "r3", 39)
        t2.pipe_input("z", "r4", 42)
        t2.pipe_input("d", "r5", 47)
        assert take(out) == [("a", "null+r0", 38)]
        t1.pipe_input("d", "l6", 48)
        assert take(out) == [("c", "null+r3", 39), ("b", "l1+null", 39), ("b", "l2+null", 39)]


def test_outer_join_right_expired_records_emitted_by_the_left_processor():
    """KStreamKStreamOuterJoinTest.testRightExpiredNonJoinedRecordsAreEmittedByTheLeftProcessor."""
    with joined_driver("outer_join", JoinWindows.of_time_difference(100), right_serde=L) as (t1, t2, out, _):
        t2.pipe_input(0, 10, 1)
        t2.pipe_input(1, 11, 2)
        t2.pipe_input(0, 12, 3)
        assert take(out) == []
        t1.pipe_input(1, "A1", 3)
        assert take(out) == [(1, "A1+11", 3)]
        t1.pipe_input(2, "dummy", 401)
        assert take(out) == [(0, "null+10", 1), (0, "null+12", 3)]
        t2.pipe_input(2, 100, 402)
        assert take(out) == [(2, "dummy+100", 402)]


def test_outer_join_ordering():
    """KStreamKStreamOuterJoinTest.testOrdering: an expired unmatched record comes out
    before the join result of the record that closed its window."""
    with joined_driver("outer_join", JoinWindows.of_time_difference(100), right_serde=L) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0)
        t1.pipe_input(1, "A1", 100)
        t2.pipe_input(1, 11, 110)
        assert take(out) == [(0, "A0+null", 0), (1, "A1+11", 110)]


def test_outer_join_grace_period():
    """KStreamKStreamOuterJoinTest.testGracePeriod: unmatched records wait for the grace
    period after their window, then come out right side first."""
    windows = JoinWindows.of_time_difference(100, grace=10)
    with joined_driver("outer_join", windows, right_serde=L) as (t1, t2, out, _):
        t1.pipe_input(0, "A0", 0)
        t2.pipe_input(1, 11, 0)
        assert take(out) == []
        t1.pipe_input(1, "A1", 101)
        t2.pipe_input(0, 10, 101)
        assert take(out) == []
        t2.pipe_input(0, 100, 112)
        assert take(out) == [(1, "null+11", 0), (0, "A0+null", 0)]


def test_stream_join_needs_join_windows():
    builder = StreamsBuilder()
    s1, s2 = builder.stream("a"), builder.stream("b")
    with pytest.raises(TopologyError, match="JoinWindows"):
        s1.join(s2, tostring_joiner)


def test_rekeyed_sides_are_repartitioned_and_describe_shows_it():
    """Both sides of a join are co-partitioned: a side whose key changed is repartitioned
    (Kafka's KStreamKStreamJoinTest.shouldReuseRepartitionTopicWithGeneratedName idea)."""
    builder = StreamsBuilder()
    s1 = builder.stream("topic1", consumed=Consumed.with_(I, S)).select_key(lambda k, v: k + 1)
    s2 = builder.stream("topic2", consumed=Consumed.with_(I, S))
    s1.join(s2, tostring_joiner, JoinWindows.of_time_difference(100),
            Joined.with_(I, S, S)).to("out", Produced.with_(I, S))
    topology = builder.build()
    text = topology.describe()
    assert "(topic: <application_id>-KSTREAM-KEY-SELECT-0000000001-repartition)" in text
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        driver.create_input_topic("topic1", I, S).pipe_input(0, "A", 5)
        driver.create_input_topic("topic2", I, S).pipe_input(1, "b", 6)
        assert take(driver.create_output_topic("out", I, S)) == [(1, "A+b", 6)]


def test_join_stores_are_window_stores_with_duplicates():
    with joined_driver("join", JoinWindows.of_time_difference(100)) as (t1, t2, out, driver):
        t1.pipe_input(0, "A", 5)
        t1.pipe_input(0, "B", 5)
        store = driver.get_window_store("KSTREAM-JOINTHIS-0000000004-store")
        assert store.fetch(0, 0, 10) == [(5, "A"), (5, "B")]


def test_join_of_inputs_with_different_partition_counts_fails_naming_both():
    """Kafka's co-partitioning rule (checked at start() with the topics' partition
    counts): two source topics of a join with different counts cannot be joined."""
    builder = StreamsBuilder()
    builder.stream("left").join(builder.stream("right"), tostring_joiner,
                                JoinWindows.of_time_difference(10)).to("out")
    topology = builder.build()
    topology.check_copartitioned({"left": 2, "right": 2})
    with pytest.raises(TopologyError, match=r"'left' \(2 partitions\), 'right' \(3 partitions\)"):
        topology.check_copartitioned({"left": 2, "right": 3})


def test_repartition_with_fixed_count_must_match_the_other_side():
    """A re-keyed side is repartitioned to the other side's count; a repartition fixed to
    another count cannot be, and the join fails naming both topics."""
    from streamlib import Repartitioned
    builder = StreamsBuilder()
    left = builder.stream("left").select_key(lambda k, v: v).repartition(
        Repartitioned(name="fixed", num_partitions=4))
    left.join(builder.stream("right"), tostring_joiner, JoinWindows.of_time_difference(10)).to("out")
    topology = builder.build()
    assert "fixed-repartition" in topology.describe()
    with pytest.raises(TopologyError, match=r"'right' \(2 partitions\), 'fixed-repartition' \(4 partitions\)"):
        topology.check_copartitioned({"left": 2, "right": 2})
    rekeyed = StreamsBuilder()
    rekeyed.stream("left").select_key(lambda k, v: v).join(
        rekeyed.stream("right"), tostring_joiner, JoinWindows.of_time_difference(10)).to("out")
    rekeyed.build().check_copartitioned({"left": 2, "right": 3})   # the re-keyed side adapts
