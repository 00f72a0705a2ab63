"""Window definitions, ported from Kafka Streams' TimeWindowsTest, SlidingWindowsTest,
SessionWindowsTest, JoinWindowsTest, WindowTest, internals/TimeWindowTest and
internals/SessionWindowTest (streams/src/test/java/org/apache/kafka/streams/kstream/)."""
import pickle
import random
from datetime import timedelta

import numpy as np
import pytest

import streamlib
from streamlib import (EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, TimeWindows, Window,
                       Windowed)

ANY_SIZE = 123
ANY_OTHER_SIZE = 456
ANY_GRACE = 1024


def verify_equality(a, b):
    assert a == b and b == a and hash(a) == hash(b)
    assert pickle.loads(pickle.dumps(a)) == b


def verify_inequality(a, b):
    assert a != b and b != a and hash(a) != hash(b)


# --- TimeWindowsTest ---------------------------------------------------------------------------

def test_time_windows_set_window_size():
    """TimeWindowsTest.shouldSetWindowSize"""
    assert TimeWindows.of_size_with_no_grace(ANY_SIZE).size_ms == ANY_SIZE
    assert TimeWindows.of_size_and_grace(ANY_SIZE, ANY_GRACE).size_ms == ANY_SIZE
    assert TimeWindows.of(timedelta(milliseconds=ANY_SIZE), grace=timedelta(seconds=1)).size_ms == ANY_SIZE


def test_time_windows_set_window_advance():
    """TimeWindowsTest.shouldSetWindowAdvance"""
    assert TimeWindows.of_size_with_no_grace(ANY_SIZE).advance_by(4).advance_ms == 4
    assert TimeWindows.of(ANY_SIZE).advance_ms == ANY_SIZE  # tumbling


@pytest.mark.parametrize("size", [0, -1, timedelta(0), timedelta(milliseconds=-1)])
def test_time_windows_size_must_be_positive(size):
    """TimeWindowsTest.windowSizeMustNotBeZero / windowSizeMustNotBeNegative"""
    with pytest.raises(ValueError, match="size"):
        TimeWindows.of_size_with_no_grace(size)


@pytest.mark.parametrize("advance", [0, -1, ANY_SIZE + 1])
def test_time_windows_advance_bounds(advance):
    """TimeWindowsTest.advanceIntervalMustNotBeZero / advanceIntervalMustNotBeNegative /
    advanceIntervalMustNotBeLargerThanWindowSize"""
    with pytest.raises(ValueError, match="advance"):
        TimeWindows.of_size_with_no_grace(ANY_SIZE).advance_by(advance)


def test_time_windows_grace_period_boundaries():
    """TimeWindowsTest.gracePeriodShouldEnforceBoundaries"""
    assert TimeWindows.of_size_and_grace(3, 0).grace_ms == 0
    with pytest.raises(ValueError, match="grace"):
        TimeWindows.of_size_and_grace(3, -1)
    with pytest.raises(ValueError, match="grace"):
        TimeWindows.of(3, grace=timedelta(milliseconds=-1))


def test_time_windows_for_hopping_windows():
    """TimeWindowsTest.shouldComputeWindowsForHoppingWindows"""
    matched = TimeWindows.of_size_with_no_grace(12).advance_by(5).windows_for(21)
    assert len(matched) == 12 // 5 + 1
    assert matched == [Window(10, 22), Window(15, 27), Window(20, 32)]


def test_time_windows_for_barely_overlapping_hopping_windows():
    """TimeWindowsTest.shouldComputeWindowsForBarelyOverlappingHoppingWindows"""
    assert TimeWindows.of_size_with_no_grace(6).advance_by(5).windows_for(7) == [Window(5, 11)]


def test_time_windows_for_tumbling_windows():
    """TimeWindowsTest.shouldComputeWindowsForTumblingWindows"""
    assert TimeWindows.of_size_with_no_grace(12).windows_for(21) == [Window(12, 24)]


def test_time_windows_matched_windows_ordered_by_timestamp():
    """internals/TimeWindowTest.shouldReturnMatchedWindowsOrderedByTimestamp"""
    starts = [w.start for w in TimeWindows.of_size_with_no_grace(12).advance_by(5).windows_for(21)]
    assert starts == [10, 15, 20]


def test_time_windows_never_start_below_zero():
    """TimeWindows.windowsFor clamps the first start at 0 (Math.max(0, ...)): a record at
    t < size only belongs to the windows starting at 0..t; negative timestamps to none."""
    w = TimeWindows.of(10).advance_by(3)
    assert w.windows_for(4) == [Window(0, 10), Window(3, 13)]
    assert w.windows_for(0) == [Window(0, 10)]
    assert w.windows_for(-1) == []


def test_time_windows_for_matches_the_definition():
    """TimeWindows.windowsFor: every [start, start+size) with start % advance == 0 and
    0 <= start <= t < start + size, ascending (brute force over many specs)."""
    rng = random.Random(7)
    for _ in range(300):
        size = rng.randint(1, 40)
        advance = rng.randint(1, size)
        t = rng.randint(0, 200)
        expected = [Window(s, s + size) for s in range(0, t + 1) if s % advance == 0 and t < s + size]
        assert TimeWindows.of(size).advance_by(advance).windows_for(t) == expected


@pytest.mark.parametrize("size,advance", [(12, 5), (6, 5), (12, 12), (1, 1), (10, 3), (60_000, 60_000)])
def test_time_windows_assign_is_windows_for_vectorised(size, advance):
    """TimeWindows.windowsFor, vectorised: same windows, same order, rows kept in order."""
    w = TimeWindows.of(size).advance_by(advance)
    ts = np.array([21, 0, 7, 3, 100, 5, 5, 1_000_003, -1, 11], dtype=np.int64)
    rows, starts = w.assign(ts)
    assert rows.dtype == np.int64 and starts.dtype == np.int64
    expected = [(i, win.start) for i, t in enumerate(ts.tolist()) for win in w.windows_for(t)]
    assert list(zip(rows.tolist(), starts.tolist())) == expected


def test_time_windows_assign_empty_input():
    """TimeWindows.windowsFor, vectorised over no records."""
    rows, starts = TimeWindows.of(5).assign(np.array([], dtype=np.int64))
    assert rows.tolist() == [] and starts.tolist() == []


def test_time_windows_retention_is_size_plus_grace():
    """WindowStoreMaterializer.retentionPeriod: size + grace by default."""
    assert TimeWindows.of(10, grace=5).advance_by(2).retention_ms == 15
    assert TimeWindows.of(timedelta(minutes=1)).retention_ms == 60_000


def test_time_windows_equality_positive_cases():
    """TimeWindowsTest.equalsAndHashcodeShouldBeValidForPositiveCases"""
    verify_equality(TimeWindows.of_size_with_no_grace(3), TimeWindows.of_size_with_no_grace(3))
    verify_equality(TimeWindows.of_size_with_no_grace(3).advance_by(1),
                    TimeWindows.of_size_with_no_grace(3).advance_by(1))
    verify_equality(TimeWindows.of_size_and_grace(3, 4), TimeWindows.of_size_and_grace(3, 4))
    verify_equality(TimeWindows.of_size_and_grace(3, 33), TimeWindows.of(3, grace=timedelta(milliseconds=33)))


def test_time_windows_equality_negative_cases():
    """TimeWindowsTest.equalsAndHashcodeShouldBeValidForNegativeCases"""
    verify_inequality(TimeWindows.of_size_with_no_grace(9), TimeWindows.of_size_with_no_grace(3))
    verify_inequality(TimeWindows.of_size_and_grace(9, 9), TimeWindows.of_size_and_grace(3, 9))
    verify_inequality(TimeWindows.of_size_with_no_grace(3).advance_by(2),
                      TimeWindows.of_size_with_no_grace(3).advance_by(1))
    verify_inequality(TimeWindows.of_size_and_grace(3, 2), TimeWindows.of_size_and_grace(3, 1))
    verify_inequality(TimeWindows.of_size_and_grace(3, 9), TimeWindows.of_size_and_grace(3, 4))
    verify_inequality(TimeWindows.of_size_and_grace(4, 2).advance_by(2),
                      TimeWindows.of_size_and_grace(3, 2).advance_by(2))
    verify_inequality(TimeWindows.of_size_and_grace(3, 2).advance_by(1),
                      TimeWindows.of_size_and_grace(3, 2).advance_by(2))
    assert TimeWindows.of_size_and_grace(3, 1).advance_by(2) != TimeWindows.of_size_and_grace(3, 2).advance_by(2)


def test_durations_must_be_timedelta_or_int():
    """Kafka's validateMillisecondDuration: a duration of the wrong type is rejected, naming it."""
    with pytest.raises(TypeError, match="size"):
        TimeWindows.of(1.5)
    with pytest.raises(TypeError, match="gap"):
        SessionWindows.with_inactivity_gap("5")


# --- SlidingWindowsTest ------------------------------------------------------------------------

def test_sliding_windows_set_time_difference():
    """SlidingWindowsTest.shouldSetTimeDifference"""
    assert SlidingWindows.of_time_difference_and_grace(ANY_SIZE, ANY_GRACE).time_difference_ms == ANY_SIZE
    assert SlidingWindows.of_time_difference_with_no_grace(ANY_SIZE).time_difference_ms == ANY_SIZE


def test_sliding_windows_time_difference_must_not_be_negative():
    """SlidingWindowsTest.timeDifferenceMustNotBeNegative"""
    with pytest.raises(ValueError):
        SlidingWindows.of_time_difference_and_grace(-1, 5)



def test_sliding_time_difference_zero_is_refused_at_definition():
    """Issue 39: Kafka accepts a time difference of 0 and fails on the first record
    ("Window endMs must be greater than window startMs"); refused here when defined."""
    with pytest.raises(ValueError, match="time difference must be positive"):
        SlidingWindows.of(0)
    with pytest.raises(ValueError, match="got 0 ms"):
        SlidingWindows.of_time_difference_and_grace(0, 5)


def test_sliding_windows_set_grace_period():
    """SlidingWindowsTest.shouldSetGracePeriod"""
    assert SlidingWindows.of_time_difference_and_grace(10, ANY_SIZE).grace_ms == ANY_SIZE
    assert SlidingWindows.of(10).grace_ms == 0


def test_sliding_windows_grace_must_not_be_negative():
    """SlidingWindowsTest.gracePeriodMustNotBeNegative"""
    with pytest.raises(ValueError, match="grace"):
        SlidingWindows.of_time_difference_and_grace(10, -1)


def test_sliding_windows_retention():
    """SlidingWindowStoreMaterializer.retentionPeriod: 2 * time difference + grace."""
    assert SlidingWindows.of(10, grace=3).retention_ms == 23


def test_sliding_windows_equality():
    """SlidingWindowsTest.equalsAndHashcodeShouldBeValidForPositiveCases /
    equalsAndHashcodeShouldNotBeEqualForDifferentTimeDifference /
    equalsAndHashcodeShouldNotBeEqualForDifferentGracePeriod"""
    rng = random.Random(3)
    grace, diff = rng.randint(1, 19), rng.randint(1, 19)
    verify_equality(SlidingWindows.of_time_difference_and_grace(diff, grace),
                    SlidingWindows.of_time_difference_and_grace(diff, grace))
    verify_equality(SlidingWindows.of_time_difference_with_no_grace(diff),
                    SlidingWindows.of_time_difference_with_no_grace(diff))
    verify_inequality(SlidingWindows.of_time_difference_and_grace(rng.randint(1, 9), grace),
                      SlidingWindows.of_time_difference_and_grace(rng.randint(21, 40), grace))
    verify_inequality(SlidingWindows.of_time_difference_and_grace(diff, rng.randint(1, 9)),
                      SlidingWindows.of_time_difference_and_grace(diff, rng.randint(21, 40)))


# --- SessionWindowsTest ------------------------------------------------------------------------

def test_session_windows_set_window_gap():
    """SessionWindowsTest.shouldSetWindowGap"""
    assert SessionWindows.of_inactivity_gap_with_no_grace(42).gap_ms == 42
    assert SessionWindows.of_inactivity_gap_and_grace(42, ANY_GRACE).gap_ms == 42
    assert SessionWindows.with_inactivity_gap(timedelta(seconds=1)).gap_ms == 1000


def test_session_windows_grace_period_boundaries():
    """SessionWindowsTest.gracePeriodShouldEnforceBoundaries"""
    assert SessionWindows.of_inactivity_gap_and_grace(3, 0).grace_ms == 0
    with pytest.raises(ValueError, match="grace"):
        SessionWindows.of_inactivity_gap_and_grace(3, -1)


def test_session_windows_no_grace_api_sets_no_grace():
    """SessionWindowsTest.noGraceAPIShouldNotSetGracePeriod"""
    for gap in (3, ANY_SIZE, ANY_OTHER_SIZE):
        assert SessionWindows.of_inactivity_gap_with_no_grace(gap).grace_ms == 0


def test_session_windows_with_grace_api_sets_grace():
    """SessionWindowsTest.withGraceAPIShouldSetGracePeriod"""
    for gap in (3, ANY_SIZE, ANY_OTHER_SIZE):
        assert SessionWindows.of_inactivity_gap_and_grace(gap, ANY_GRACE).grace_ms == ANY_GRACE


@pytest.mark.parametrize("gap", [-1, 0])
def test_session_windows_gap_must_be_positive(gap):
    """SessionWindowsTest.windowSizeMustNotBeNegative / windowSizeMustNotBeZero"""
    with pytest.raises(ValueError, match="[Gg]ap"):
        SessionWindows.of_inactivity_gap_with_no_grace(gap)


def test_session_windows_retention():
    """SessionStoreMaterializer.retentionPeriod: inactivity gap + grace."""
    assert SessionWindows.with_inactivity_gap(5, grace=2).retention_ms == 7


def test_session_windows_equality():
    """SessionWindowsTest.equalsAndHashcodeShouldBeValidForPositiveCases / ...NegativeCases"""
    verify_equality(SessionWindows.of_inactivity_gap_with_no_grace(1), SessionWindows.of_inactivity_gap_with_no_grace(1))
    verify_equality(SessionWindows.of_inactivity_gap_and_grace(1, 11), SessionWindows.of_inactivity_gap_and_grace(1, 11))
    verify_inequality(SessionWindows.of_inactivity_gap_with_no_grace(9), SessionWindows.of_inactivity_gap_with_no_grace(1))
    verify_inequality(SessionWindows.of_inactivity_gap_and_grace(9, 9), SessionWindows.of_inactivity_gap_and_grace(1, 9))
    verify_inequality(SessionWindows.of_inactivity_gap_and_grace(1, 9), SessionWindows.of_inactivity_gap_and_grace(1, 6))


# --- JoinWindowsTest ---------------------------------------------------------------------------

def test_join_windows_valid_windows():
    """JoinWindowsTest.validWindows"""
    w = JoinWindows.of_time_difference_with_no_grace(ANY_OTHER_SIZE)
    assert (w.before_ms, w.after_ms) == (ANY_OTHER_SIZE, ANY_OTHER_SIZE)
    w = w.before(ANY_SIZE).before(0).before(-ANY_SIZE).before(-ANY_OTHER_SIZE)
    assert (w.before_ms, w.after_ms) == (-ANY_OTHER_SIZE, ANY_OTHER_SIZE)
    w = JoinWindows.of_time_difference_with_no_grace(ANY_OTHER_SIZE) \
        .after(ANY_SIZE).after(0).after(-ANY_SIZE).after(timedelta(milliseconds=-ANY_OTHER_SIZE))
    assert (w.before_ms, w.after_ms) == (ANY_OTHER_SIZE, -ANY_OTHER_SIZE)
    assert w.size_ms == 0


def test_join_windows_before_and_after_do_not_modify_grace():
    """JoinWindowsTest.beforeShouldNotModifyGrace / afterShouldNotModifyGrace"""
    w = JoinWindows.of_time_difference_and_grace(ANY_SIZE, ANY_OTHER_SIZE)
    assert w.before(timedelta(seconds=ANY_SIZE)).grace_ms == ANY_OTHER_SIZE
    assert w.after(timedelta(seconds=ANY_SIZE)).grace_ms == ANY_OTHER_SIZE
    assert w.before(timedelta(seconds=ANY_SIZE)).before_ms == ANY_SIZE * 1000


def test_join_windows_time_difference_must_not_be_negative():
    """JoinWindowsTest.timeDifferenceMustNotBeNegative"""
    with pytest.raises(ValueError):
        JoinWindows.of_time_difference_with_no_grace(-1)
    with pytest.raises(ValueError):
        JoinWindows.of_time_difference_and_grace(-1, ANY_GRACE)


def test_join_windows_end_not_before_start():
    """JoinWindowsTest.endTimeShouldNotBeBeforeStart / startTimeShouldNotBeAfterEnd"""
    w = JoinWindows.of_time_difference_with_no_grace(ANY_SIZE)
    with pytest.raises(ValueError, match="must not be negative"):
        w.after(-ANY_SIZE - 1)
    with pytest.raises(ValueError, match="must not be negative"):
        w.before(-ANY_SIZE - 1)


def test_join_windows_grace_period_boundaries():
    """JoinWindowsTest.gracePeriodShouldEnforceBoundaries"""
    assert JoinWindows.of_time_difference_and_grace(3, 0).grace_ms == 0
    with pytest.raises(ValueError, match="grace"):
        JoinWindows.of_time_difference_and_grace(3, -1)


def test_join_windows_grace_apis():
    """JoinWindowsTest.noGraceAPIShouldNotSetGracePeriod / withGraceAPIShouldSetGracePeriod"""
    for d in (3, ANY_SIZE, ANY_OTHER_SIZE):
        assert JoinWindows.of_time_difference_with_no_grace(d).grace_ms == 0
        assert JoinWindows.of_time_difference_and_grace(d, ANY_GRACE).grace_ms == ANY_GRACE
        assert JoinWindows.of_time_difference(d, grace=ANY_GRACE).grace_ms == ANY_GRACE


def test_join_windows_size_and_retention():
    """JoinWindows.size() = before + after; KStreamImplJoin's store retention = size + grace."""
    w = JoinWindows.of_time_difference(10, grace=2).after(3)
    assert (w.size_ms, w.retention_ms) == (13, 15)


def test_join_windows_equality():
    """JoinWindowsTest.equalsAndHashcodeShouldBeValidForPositiveCases / ...NegativeCases"""
    J = JoinWindows
    verify_equality(J.of_time_difference_with_no_grace(3), J.of_time_difference_with_no_grace(3))
    verify_equality(J.of_time_difference_and_grace(3, 2), J.of_time_difference_and_grace(3, 2))
    verify_equality(J.of_time_difference_with_no_grace(3).after(2), J.of_time_difference_with_no_grace(3).after(2))
    verify_equality(J.of_time_difference_with_no_grace(3).before(2), J.of_time_difference_with_no_grace(3).before(2))
    verify_equality(J.of_time_difference_and_grace(3, 2).after(4), J.of_time_difference_and_grace(3, 2).after(4))
    verify_equality(J.of_time_difference_and_grace(3, 2).before(4), J.of_time_difference_and_grace(3, 2).before(4))
    verify_inequality(J.of_time_difference_with_no_grace(9), J.of_time_difference_with_no_grace(3))
    verify_inequality(J.of_time_difference_and_grace(3, 9), J.of_time_difference_and_grace(3, 2))
    verify_inequality(J.of_time_difference_with_no_grace(3).after(9), J.of_time_difference_with_no_grace(3).after(2))
    verify_inequality(J.of_time_difference_with_no_grace(3).before(9), J.of_time_difference_with_no_grace(3).before(2))
    verify_inequality(J.of_time_difference_and_grace(3, 3).before(9).after(2),
                      J.of_time_difference_and_grace(3, 3).before(1).after(2))
    verify_inequality(J.of_time_difference_and_grace(3, 3).before(1).after(9),
                      J.of_time_difference_and_grace(3, 3).before(1).after(2))
    verify_inequality(J.of_time_difference_and_grace(3, 9).before(1).after(2),
                      J.of_time_difference_and_grace(3, 3).before(1).after(2))


# --- WindowTest, internals/TimeWindowTest, internals/SessionWindowTest -------------------------

def test_window_start_must_not_be_negative():
    """WindowTest.shouldThrowIfStartIsNegative"""
    with pytest.raises(ValueError, match="negative"):
        Window(-1, 0)


def test_window_end_must_not_be_smaller_than_start():
    """WindowTest.shouldThrowIfEndIsSmallerThanStart"""
    with pytest.raises(ValueError, match="smaller"):
        Window(1, 0)


def test_window_equality():
    """WindowTest.shouldBeEqualIfStartAndEndSame / shouldNotBeEqualIfNull /
    shouldNotBeEqualIfStartOrEndIsDifferent"""
    window = Window(5, 10)
    verify_equality(window, Window(5, 10))
    assert window != None  # noqa: E711
    for other in (Window(0, 10), Window(7, 10), Window(5, 7), Window(5, 15), Window(7, 8), Window(0, 15)):
        assert window != other


def test_window_order_hash_and_repr():
    """Windows are ordered by (start, end) and hashable (Kafka's Window.hashCode); reprs evaluate."""
    assert sorted([Window(5, 9), Window(0, 10), Window(5, 6)]) == [Window(0, 10), Window(5, 6), Window(5, 9)]
    assert len({Window(1, 2), Window(1, 2), Window(1, 3)}) == 2
    assert eval(repr(Windowed("k", Window(1, 2)))) == Windowed("k", Window(1, 2))
    with pytest.raises(TypeError):
        Window(0.5, 2)
    with pytest.raises(Exception):
        Window(0, 1).start = 3  # frozen


def test_windowed_key_and_window():
    """Windowed: key + window, equal when both are, hashable, picklable."""
    w = Windowed("a", Window(0, 10))
    assert (w.key, w.window.start, w.window.end) == ("a", 0, 10)
    verify_equality(w, Windowed("a", Window(0, 10)))
    verify_inequality(w, Windowed("b", Window(0, 10)))
    verify_inequality(w, Windowed("a", Window(0, 11)))
    with pytest.raises(TypeError):
        Windowed("a", (0, 10))


START, END = 50, 100


def test_time_window_no_overlap_if_other_is_before():
    """internals/TimeWindowTest.shouldNotOverlapIfOtherWindowIsBeforeThisWindow"""
    w = Window(START, END)
    for other in (Window(0, 25), Window(0, START - 1), Window(0, START)):
        assert not w.overlaps_time(other)


def test_time_window_overlaps():
    """internals/TimeWindowTest.shouldOverlapIfOtherWindowEndIsWithinThisWindow /
    shouldOverlapIfOtherWindowContainsThisWindow / shouldOverlapIfOtherWindowIsWithinThisWindow /
    shouldOverlapIfOtherWindowStartIsWithinThisWindow"""
    w = Window(START, END)
    others = [(0, START + 1), (0, 75), (0, END - 1), (START - 1, START + 1), (START - 1, 75), (START - 1, END - 1),
              (0, END), (0, END + 1), (0, 150), (START - 1, END), (START - 1, END + 1), (START - 1, 150),
              (START, END), (START, END + 1), (START, 150), (START, 75), (75, END), (75, END + 1), (75, 150)]
    for s, e in others:
        assert w.overlaps_time(Window(s, e)), (s, e)


def test_time_window_no_overlap_if_other_is_after():
    """internals/TimeWindowTest.shouldNotOverlapIsOtherWindowIsAfterThisWindow"""
    w = Window(START, END)
    for s, e in ((END, END + 1), (END, 150), (END + 1, 150), (125, 150)):
        assert not w.overlaps_time(Window(s, e))


def test_session_window_no_overlap_if_other_is_before():
    """internals/SessionWindowTest.shouldNotOverlapIfOtherWindowIsBeforeThisWindow"""
    w = Window(START, END)
    for s, e in ((0, 25), (0, START - 1), (START - 1, START - 1)):
        assert not w.overlaps_session(Window(s, e))


def test_session_window_overlaps():
    """internals/SessionWindowTest.shouldOverlapIfOtherWindowEndIsWithinThisWindow /
    shouldOverlapIfOtherWindowContainsThisWindow / shouldOverlapIfOtherWindowIsWithinThisWindow /
    shouldOverlapIfOtherWindowStartIsWithinThisWindow"""
    w = Window(START, END)
    others = [(0, START), (0, START + 1), (0, 75), (0, END - 1), (0, END), (START - 1, START),
              (START - 1, START + 1), (START - 1, 75), (START - 1, END - 1), (START - 1, END),
              (0, END + 1), (0, 150), (START - 1, END + 1), (START - 1, 150), (START, END), (START, END + 1),
              (START, 150), (START, START), (START, 75), (75, END), (END, END), (75, END + 1), (75, 150),
              (END, END + 1), (END, 150)]
    for s, e in others:
        assert w.overlaps_session(Window(s, e)), (s, e)


def test_session_window_no_overlap_if_other_is_after():
    """internals/SessionWindowTest.shouldNotOverlapIsOtherWindowIsAfterThisWindow"""
    w = Window(START, END)
    for s, e in ((END + 1, END + 1), (END + 1, 150), (125, 150)):
        assert not w.overlaps_session(Window(s, e))


# --- EmitStrategy and the public names ---------------------------------------------------------

def test_emit_strategy_values():
    """EmitStrategy.onWindowUpdate()/onWindowClose() (KIP-825): two distinct, comparable values."""
    update, close = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
    verify_equality(update, EmitStrategy.on_window_update())
    verify_inequality(update, close)
    assert close.is_on_window_close and not update.is_on_window_close
    assert repr(close) == "EmitStrategy.on_window_close()"
    with pytest.raises(ValueError):
        EmitStrategy("sometimes")


def test_public_names_and_pickling_of_every_definition():
    """API.md's import list; specs travel to Spark executors, so each pickles to an equal value."""
    for name in ("Window", "Windowed", "TimeWindows", "SlidingWindows", "SessionWindows", "JoinWindows",
                 "EmitStrategy"):
        assert name in streamlib.__all__ and getattr(streamlib, name) is getattr(streamlib.windows, name)
    for spec in (TimeWindows.of(10, grace=2).advance_by(5), SlidingWindows.of(3, grace=1),
                 SessionWindows.with_inactivity_gap(4), JoinWindows.of_time_difference(5).before(1),
                 EmitStrategy.on_window_close(), Windowed("k", Window(0, 1))):
        assert pickle.loads(pickle.dumps(spec)) == spec
