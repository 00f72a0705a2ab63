"""Final results of windowed aggregations with ``suppress(Suppressed.until_window_closes())``,
ported from the windowed scenarios of Kafka Streams'
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/SuppressScenarioTest.java``
(``untilWindowCloses(unbounded())``; caching disabled, as in Kafka's tests). Keys are printed
like Kafka's ``Windowed.toString()``, ``[key@start/end]``. (Tests pending the windowed DSL.)
"""
from streamlib import (Consumed, Grouped, Materialized, Produced, SessionWindows, SlidingWindows, StreamsBuilder,
                       Suppressed, TimeWindows)

from streams_helpers import L, S, driver_for, kvt


def _as_string(k, v):
    return f"[{k.key}@{k.window.start}/{k.window.end}]", v


def _scenario(windows, inputs, materialized):
    builder = StreamsBuilder()
    counts = builder.stream("input", consumed=Consumed.with_(S, S)) \
        .group_by(lambda k, v: k, Grouped.with_(S, S)) \
        .windowed_by(windows) \
        .count(materialized=materialized)
    counts.suppress(Suppressed.until_window_closes()).to_stream().map(_as_string) \
        .to("output-suppressed", produced=Produced.with_(S, L))
    counts.to_stream().map(_as_string).to("output-raw", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("input", S, S)
        for k, ts in inputs:
            inp.pipe_input(k, "v1", ts)
        return (kvt(driver.create_output_topic("output-raw", S, L).read_records_to_list()),
                kvt(driver.create_output_topic("output-suppressed", S, L).read_records_to_list()))


COUNTS = Materialized.as_("counts").with_caching_disabled()


def test_final_results_for_time_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForTimeWindows: size 2, grace 1; the late
    k1@0 after stream time 5 is dropped ([0,2) closed at 3); each window is emitted once, when
    stream time reaches end + grace, with its max record timestamp."""
    raw, suppressed = _scenario(TimeWindows.of(2, grace=1),
                                [("k1", 0), ("k1", 1), ("k1", 2), ("k1", 1), ("k1", 0), ("k1", 5), ("k1", 0)],
                                COUNTS)
    assert raw == [("[k1@0/2]", 1, 0), ("[k1@0/2]", 2, 1), ("[k1@2/4]", 1, 2), ("[k1@0/2]", 3, 1),
                   ("[k1@0/2]", 4, 1), ("[k1@4/6]", 1, 5)]
    assert suppressed == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 1, 2)]


def test_final_results_for_time_windows_with_large_jump():
    """SuppressScenarioTest.shouldSupportFinalResultsForTimeWindowsWithLargeJump: size 2, grace 2;
    a jump to stream time 30 closes every open window at once, emitted by window start."""
    raw, suppressed = _scenario(
        TimeWindows.of(2, grace=2),
        [("k1", 0), ("k1", 1), ("k1", 2), ("k1", 0), ("k1", 3), ("k1", 0), ("k1", 4), ("k1", 0), ("k1", 30)],
        COUNTS.with_key_serde(S))
    assert raw == [("[k1@0/2]", 1, 0), ("[k1@0/2]", 2, 1), ("[k1@2/4]", 1, 2), ("[k1@0/2]", 3, 1),
                   ("[k1@2/4]", 2, 3), ("[k1@0/2]", 4, 1), ("[k1@4/6]", 1, 4), ("[k1@30/32]", 1, 30)]
    assert suppressed == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 2, 3), ("[k1@4/6]", 1, 4)]


def test_final_results_for_sliding_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForSlidingWindows: time difference 5, grace
    15; windows are [start, start + 5] inclusive; k1@7 arrives after stream time 24 closed its
    windows and is dropped. Kafka sorts the raw output by (key string, timestamp) before
    comparing (stable sort); so do we."""
    raw, suppressed = _scenario(
        SlidingWindows.of(5, grace=15),
        [("k1", 10), ("k1", 11), ("k1", 10), ("k1", 13), ("k1", 10), ("k1", 24), ("k1", 5), ("k1", 7), ("k1", 90)],
        COUNTS.with_key_serde(S))
    assert sorted(raw, key=lambda r: (r[0], r[2])) == [
        ("[k1@11/16]", 1, 11), ("[k1@11/16]", 2, 13), ("[k1@12/17]", 1, 13), ("[k1@19/24]", 1, 24),
        ("[k1@5/10]", 1, 10), ("[k1@5/10]", 2, 10), ("[k1@5/10]", 3, 10), ("[k1@5/10]", 4, 10),
        ("[k1@5/10]", 5, 10), ("[k1@6/11]", 2, 11), ("[k1@6/11]", 3, 11), ("[k1@6/11]", 4, 11),
        ("[k1@6/11]", 5, 11), ("[k1@8/13]", 4, 13), ("[k1@8/13]", 5, 13), ("[k1@85/90]", 1, 90)]
    assert suppressed == [("[k1@5/10]", 5, 10), ("[k1@6/11]", 5, 11), ("[k1@8/13]", 5, 13),
                          ("[k1@11/16]", 2, 13), ("[k1@12/17]", 1, 13), ("[k1@19/24]", 1, 24)]


def test_final_results_for_session_windows():
    """SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows: gap 5, no grace; the merged
    session [0,5] and k2's [11,11] are final once stream time 30 closes them; the tombstones of
    merged-away sessions are not final results."""
    raw, suppressed = _scenario(SessionWindows.with_inactivity_gap(5),
                                [("k1", 0), ("k1", 5), ("k1", 1), ("k2", 11), ("k1", 5), ("k1", 30)], COUNTS)
    assert raw == [("[k1@0/0]", 1, 0), ("[k1@0/0]", None, 0), ("[k1@0/5]", 2, 5), ("[k1@0/5]", None, 5),
                   ("[k1@0/5]", 3, 5), ("[k2@11/11]", 1, 11), ("[k1@30/30]", 1, 30)]
    assert suppressed == [("[k1@0/5]", 3, 5), ("[k2@11/11]", 1, 11)]
