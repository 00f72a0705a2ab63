"""Read-only store queries: the expectations of Kafka Streams' own store tests, ported to
streamlib's query views (``driver.get_key_value_store`` / ``get_window_store`` /
``get_session_store``, the same API as ``app.store(name)``), with the stores filled by
DSL topologies fed through the ``TopologyTestDriver``.

Sources (apache/kafka, ``streams/src/test/java/org/apache/kafka/streams/``):
``state/internals/AbstractKeyValueStoreTest``, ``CompositeReadOnlyKeyValueStoreTest``,
``AbstractWindowBytesStoreTest``, ``CompositeReadOnlyWindowStoreTest``,
``ReadOnlyWindowStoreFacadeTest``, ``AbstractSessionBytesStoreTest``,
``CompositeReadOnlySessionStoreTest`` and ``integration/QueryableStateIntegrationTest``.

How the ports are adapted:

- Kafka's store tests write with ``put``/``delete``; here a key-value store is a
  materialized source table (a put is a record, a delete a tombstone), a window store is a
  windowed ``reduce`` keeping the latest value (a put is a record in that window) and a
  session store a session ``reduce`` (a put is a record forming that session).
- A record lands in exactly one window with start = its timestamp only for tumbling
  windows of size 1, so window-store tests use size 1 (Kafka's ``WINDOW_SIZE`` stays the
  constant the query bounds are computed with; only the ``Windowed`` ends differ). The
  grace is chosen so that the DSL's retention (size + grace, as in Kafka's
  ``WindowStoreMaterializer``/``SessionStoreMaterializer``) equals the test's retention.
- The driver runs one task per sub-topology, so the ``Composite*`` tests over two
  underlying stores become tests over one store holding both stores' entries; the
  expected contents and order are Kafka's.
- Kafka's single-window ``fetch(key, time)`` is ``fetch(key, time, time)`` here.
- Where Kafka compares sets or maps, sets or dicts are compared.
"""
from __future__ import annotations

import re

import pytest

from streamlib import (Consumed, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder,
                       TimeWindows, Window, Windowed)

from streams_helpers import I, L, S, driver_for

B = Serdes.bytes()


def latest(_agg, value):
    return value


# -- key-value stores ----------------------------------------------------------------------

def kv_table(key_serde=I, value_serde=S, name="kv"):
    """A materialized source table: the store under test (``put`` = a record)."""
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(key_serde, value_serde),
                  materialized=Materialized.as_(name))
    return builder


class KV:
    """A driver over :func:`kv_table` with Kafka's store-writing verbs."""

    def __init__(self, driver, key_serde=I, value_serde=S, name="kv"):
        self.input = driver.create_input_topic("in", key_serde, value_serde)
        self.store = driver.get_key_value_store(name)

    def put(self, key, value):
        self.input.pipe_input(key, value, 10)

    def delete(self, key):
        self.input.pipe_input(key, None, 10)


@pytest.fixture
def kv():
    with driver_for(kv_table()) as driver:
        yield KV(driver)


@pytest.fixture
def skv():
    """String keys and values (the ``CompositeReadOnlyKeyValueStoreTest`` store)."""
    with driver_for(kv_table(S, S)) as driver:
        yield KV(driver, S, S)


def test_kv_put_get_range(kv):
    """AbstractKeyValueStoreTest#testPutGetRange"""
    for k, v in [(0, "zero"), (1, "one"), (2, "two"), (4, "four"), (5, "five")]:
        kv.put(k, v)
    s = kv.store
    assert s.approximate_num_entries() == 5
    assert [s.get(k) for k in range(6)] == ["zero", "one", "two", None, "four", "five"]
    kv.delete(5)
    assert s.approximate_num_entries() == 4
    assert s.get(5) is None
    expected = {2: "two", 4: "four"}
    assert dict(s.range(2, 4)) == expected
    assert dict(s.range(2, 6)) == expected
    expected.update({0: "zero", 1: "one"})
    assert dict(s.all()) == expected


def test_kv_put_get_with_default_serdes():
    """AbstractKeyValueStoreTest#testPutGetWithDefaultSerdes (serdes from the config)"""
    builder = StreamsBuilder()
    builder.table("in", materialized=Materialized.as_("kv"))
    with driver_for(builder, default_key_serde=I, default_value_serde=S) as driver:
        kv = KV(driver)
        for k, v in [(0, "zero"), (1, "one"), (2, "two"), (4, "four"), (5, "five")]:
            kv.put(k, v)
        assert kv.store.approximate_num_entries() == 5
        assert [kv.store.get(k) for k in range(6)] == ["zero", "one", "two", None, "four", "five"]
        kv.delete(5)
        assert kv.store.get(5) is None and kv.store.get(4) == "four"


def test_kv_should_not_include_deleted_from_range_result(kv):
    """AbstractKeyValueStoreTest#shouldNotIncludeDeletedFromRangeResult"""
    kv.put(0, "zero")
    kv.put(1, "one")
    kv.put(2, "two")
    kv.delete(0)
    kv.delete(1)
    assert dict(kv.store.all()) == {2: "two"}


@pytest.mark.parametrize("key_from, key_to, expected", [
    (None, 1, [(0, "zero"), (1, "one")]),
    (1, None, [(1, "one"), (2, "two")]),
    (None, None, [(0, "zero"), (1, "one"), (2, "two")]),
], ids=["null_to_key", "key_to_null", "null_to_null"])
def test_kv_range_with_null_bounds(kv, key_from, key_to, expected):
    """AbstractKeyValueStoreTest#shouldReturnValueOnRangeNullToKey,
    #shouldReturnValueOnRangeKeyToNull, #shouldReturnValueOnRangeNullToNull"""
    kv.put(0, "zero")
    kv.put(1, "one")
    kv.put(2, "two")
    assert list(kv.store.range(key_from, key_to)) == expected


def test_kv_size(kv):
    """AbstractKeyValueStoreTest#testSize"""
    assert kv.store.approximate_num_entries() == 0
    for k, v in [(0, "zero"), (1, "one"), (2, "two"), (4, "four"), (5, "five")]:
        kv.put(k, v)
    assert kv.store.approximate_num_entries() == 5


def test_kv_put_all_then_all_in_key_order(kv):
    """AbstractKeyValueStoreTest#shouldPutAll"""
    kv.put(1, "one")
    kv.put(2, "two")
    assert list(kv.store.all()) == [(1, "one"), (2, "two")]


def test_kv_delete_from_store(kv):
    """AbstractKeyValueStoreTest#shouldDeleteFromStore"""
    kv.put(1, "one")
    kv.put(2, "two")
    kv.delete(2)
    assert kv.store.get(2) is None


def test_kv_same_results_for_get_and_range_with_equal_keys(kv):
    """AbstractKeyValueStoreTest#shouldReturnSameResultsForGetAndRangeWithEqualKeys"""
    for k, v in [(1, "one"), (2, "two"), (3, "three")]:
        kv.put(k, v)
    assert [v for _, v in kv.store.range(2, 2)] == [kv.store.get(2)]


def test_kv_range_with_negative_from_key_is_empty(kv):
    """AbstractKeyValueStoreTest#shouldNotThrowInvalidRangeExceptionWithNegativeFromKey:
    ranges compare serialized bytes, and -1 serializes after 1 (0xffffffff)."""
    kv.put(-1, "minus one")
    kv.put(0, "zero")
    kv.put(1, "one")
    assert list(kv.store.range(-1, 1)) == []
    # the same byte order in all() (RocksDBStore iterates serialized keys): -1 last
    assert [k for k, _ in kv.store.all()] == [0, 1, -1]


def test_kv_range_with_from_larger_than_to_is_empty(kv):
    """AbstractKeyValueStoreTest#shouldNotThrowInvalidRangeExceptionWithFromLargerThanTo"""
    kv.put(1, "one")
    kv.put(2, "two")
    assert list(kv.store.range(2, 1)) == []


def test_kv_range_iterator_survives_a_later_write(kv):
    """AbstractKeyValueStoreTest#shouldNotThrowConcurrentModificationException"""
    kv.put(0, "zero")
    results = iter(kv.store.range(0, 2))
    kv.put(1, "one")
    assert next(results) == (0, "zero")


def test_kv_prefix_scan_iterator_survives_a_later_delete(kv):
    """AbstractKeyValueStoreTest#prefixScanShouldNotThrowConcurrentModificationException"""
    for k, v in [(0, "zero"), (1, "one"), (222, "two-hundred-twenty-two"), (2, "two"),
                 (22, "twenty-two"), (3, "three")]:
        kv.put(k, v)
    results = iter(kv.store.prefix_scan(2))
    kv.delete(22)
    list(results)       # no exception while iterating


def test_kv_composite_get_missing_and_present(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldReturnNullIfKeyDoesNotExist,
    #shouldReturnValueIfExists"""
    assert skv.store.get("whatever") is None
    skv.put("key", "value")
    assert skv.store.get("key") == "value"


def test_kv_composite_get_null_key_is_an_error(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldThrowNullPointerExceptionOnGetNullKey
    (also AbstractKeyValueStoreTest#shouldThrowNullPointerExceptionOnGetNullKey): Kafka's
    NullPointerException is an argument error here (TypeError or ValueError), not a
    ``KeyError`` that reads like "key not found"."""
    skv.put("key", "value")
    with pytest.raises((TypeError, ValueError)):
        skv.store.get(None)


def test_kv_composite_prefix_scan_null_prefix_is_an_error(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldThrowNullPointerExceptionOnPrefixScanNullPrefix"""
    with pytest.raises((TypeError, ValueError)):
        list(skv.store.prefix_scan(None))


@pytest.mark.parametrize("key_from, key_to, expected", [
    (None, "1", [("0", "zero"), ("1", "one")]),
    ("1", None, [("1", "one"), ("2", "two")]),
], ids=["null_from", "null_to"])
def test_kv_composite_range_with_a_null_bound(skv, key_from, key_to, expected):
    """CompositeReadOnlyKeyValueStoreTest#shouldReturnValueOnRangeNullFromKey,
    #shouldReturnValueOnRangeNullToKey"""
    for k, v in [("0", "zero"), ("1", "one"), ("2", "two")]:
        skv.put(k, v)
    assert list(skv.store.range(key_from, key_to)) == expected


def test_kv_composite_support_range(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldSupportRange"""
    for k in "abc":
        skv.put(k, k)
    results = list(skv.store.range("a", "b"))
    assert ("a", "a") in results and ("b", "b") in results and len(results) == 2


def test_kv_composite_prefix_excludes_the_next_larger_key(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldReturnKeysWithGivenPrefixExcludingNextKeyLargestKey"""
    skv.put("abc", "a")
    skv.put("abcd", "b")
    skv.put("abce", "c")
    assert list(skv.store.prefix_scan("abcd")) == [("abcd", "b")]


def test_kv_composite_support_prefix_scan(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldSupportPrefixScan"""
    skv.put("a", "a")
    skv.put("aa", "b")
    skv.put("b", "c")
    results = list(skv.store.prefix_scan("a"))
    assert ("a", "a") in results and ("aa", "b") in results and len(results) == 2


def test_kv_composite_across_stores_range_prefix_all_and_size(skv):
    """CompositeReadOnlyKeyValueStoreTest#shouldFindValueForKeyWhenMultiStores,
    #shouldSupportRangeAcrossMultipleKVStores, #shouldSupportPrefixScanAcrossMultipleKVStores,
    #shouldSupportAllAcrossMultipleStores, #shouldGetApproximateEntriesAcrossAllStores
    (both underlying stores' entries in the driver's one store)"""
    for k in ["a", "b", "z", "c", "d", "x"]:
        skv.put(k, k)
    skv.put("key-two", "key-two-value")
    skv.put("key-one", "key-one-value")
    s = skv.store
    assert s.get("key-two") == "key-two-value" and s.get("key-one") == "key-one-value"
    assert list(s.range("a", "e")) == [("a", "a"), ("b", "b"), ("c", "c"), ("d", "d")]
    skv.delete("key-two")
    skv.delete("key-one")
    skv.put("aa", "c")
    skv.put("ab", "d")
    assert list(s.prefix_scan("a")) == [("a", "a"), ("aa", "c"), ("ab", "d")]
    skv.delete("aa")
    skv.delete("ab")
    results = list(s.all())
    assert sorted(results) == [(k, k) for k in "abcdxz"] and len(results) == 6
    assert s.approximate_num_entries() == 6


def test_kv_composite_not_values_from_other_stores():
    """CompositeReadOnlyKeyValueStoreTest#shouldNotGetValuesFromOtherStores"""
    builder = StreamsBuilder()
    builder.table("in", consumed=Consumed.with_(S, S), materialized=Materialized.as_("my-store"))
    builder.table("other", consumed=Consumed.with_(S, S), materialized=Materialized.as_("other-store"))
    with driver_for(builder) as driver:
        driver.create_input_topic("other", S, S).pipe_input("otherKey", "otherValue", 0)
        assert driver.get_key_value_store("my-store").get("otherKey") is None
        assert driver.get_key_value_store("other-store").get("otherKey") == "otherValue"


# -- window stores ----------------------------------------------------------------------------

WINDOW_SIZE = 3                 # Kafka's; the windows below are 1 ms (module docstring)
SEGMENT_INTERVAL = 60_000
RETENTION_PERIOD = 2 * SEGMENT_INTERVAL
START = SEGMENT_INTERVAL - 4    # Kafka's defaultStartTime


def window_reduce(size=1, retention=RETENTION_PERIOD, key_serde=I, value_serde=S, name="w",
                  topic="in", builder=None):
    """Tumbling windows of ``size`` keeping each window's latest value; the grace makes
    the store's retention (size + grace) ``retention``."""
    builder = builder or StreamsBuilder()
    builder.stream(topic, consumed=Consumed.with_(key_serde, value_serde)).group_by_key() \
        .windowed_by(TimeWindows.of(size, grace=retention - size)) \
        .reduce(latest, materialized=Materialized.as_(name))
    return builder


class WS:
    """A driver over :func:`window_reduce`: ``put(key, value, start)`` as in Kafka."""

    def __init__(self, driver, key_serde=I, value_serde=S, name="w", topic="in"):
        self.input = driver.create_input_topic(topic, key_serde, value_serde)
        self.store = driver.get_window_store(name)

    def put(self, key, value, start):
        self.input.pipe_input(key, value, start)

    def values(self, key, time_from, time_to):
        return {v for _, v in self.store.fetch(key, time_from, time_to)}


@pytest.fixture
def ws():
    with driver_for(window_reduce()) as driver:
        yield WS(driver)


def windowed(key, value, start, size=1):
    return (Windowed(key, Window(start, start + size)), value)


ZERO, ONE, TWO = windowed(0, "zero", START), windowed(1, "one", START + 1), windowed(2, "two", START + 2)
THREE, FOUR, FIVE = windowed(3, "three", START + 2), windowed(4, "four", START + 4), windowed(5, "five", START + 5)


def put_first_batch(ws):
    ws.put(0, "zero", START)
    ws.put(1, "one", START + 1)
    ws.put(2, "two", START + 2)
    ws.put(3, "three", START + 2)
    ws.put(4, "four", START + 4)
    ws.put(5, "five", START + 5)


def put_second_batch(ws):
    for i in range(1, 7):
        ws.put(2, f"two+{i}", START + 2 + i)


def twos(*suffixes):
    return {"two" if i == 0 else f"two+{i}" for i in suffixes}


def test_window_range_and_single_point_fetch(ws):
    """AbstractWindowBytesStoreTest#testRangeAndSinglePointFetch (the changelog part is
    not a query)"""
    put_first_batch(ws)
    assert ws.values(0, START - WINDOW_SIZE, START + WINDOW_SIZE) == {"zero"}
    put_second_batch(ws)
    for i in range(1, 7):
        assert ws.store.fetch(2, START + 2 + i, START + 2 + i) == [(START + 2 + i, f"two+{i}")]
    expected = {-2: set(), -1: twos(0), 0: twos(0, 1), 1: twos(0, 1, 2), 2: twos(0, 1, 2, 3),
                3: twos(0, 1, 2, 3, 4), 4: twos(0, 1, 2, 3, 4, 5), 5: twos(0, 1, 2, 3, 4, 5, 6),
                6: twos(1, 2, 3, 4, 5, 6), 7: twos(2, 3, 4, 5, 6), 8: twos(3, 4, 5, 6),
                9: twos(4, 5, 6), 10: twos(5, 6), 11: twos(6), 12: set()}
    for offset, values in expected.items():
        t = START + offset
        assert ws.values(2, t - WINDOW_SIZE, t + WINDOW_SIZE) == values, offset


def test_window_get_all(ws):
    """AbstractWindowBytesStoreTest#shouldGetAll"""
    put_first_batch(ws)
    assert ws.store.all() == [ZERO, ONE, TWO, THREE, FOUR, FIVE]


def test_window_get_all_returns_timestamp_ordered_records(ws):
    """AbstractWindowBytesStoreTest#shouldGetAllReturnTimestampOrderedRecords"""
    ws.put(4, "four", START + 4)
    ws.put(0, "zero", START)
    ws.put(2, "two", START + 2)
    ws.put(3, "three", START + 3)
    ws.put(1, "one", START + 1)
    assert ws.store.all() == [ZERO, ONE, TWO, windowed(3, "three", START + 3), FOUR]


def test_window_all_after_an_earlier_all(ws):
    """AbstractWindowBytesStoreTest#shouldEarlyClosedIteratorStillGetAllRecords"""
    ws.put(0, "zero", START)
    ws.put(1, "one", START + 1)
    assert next(iter(ws.store.all())) == ZERO
    assert ws.store.all() == [ZERO, ONE]


def test_window_fetch_all_in_time_range(ws):
    """AbstractWindowBytesStoreTest#shouldFetchAllInTimeRange"""
    put_first_batch(ws)
    assert ws.store.fetch_all(START + 1, START + 4) == [ONE, TWO, THREE, FOUR]
    assert ws.store.fetch_all(START, START + 3) == [ZERO, ONE, TWO, THREE]
    assert ws.store.fetch_all(START + 1, START + 5) == [ONE, TWO, THREE, FOUR, FIVE]


def test_window_put_and_fetch_before(ws):
    """AbstractWindowBytesStoreTest#testPutAndFetchBefore (the changelog part is not a query)"""
    put_first_batch(ws)
    for key, name, offset in [(0, "zero", 0), (1, "one", 1), (2, "two", 2), (3, "three", 3),
                              (4, "four", 4), (5, "five", 5)]:
        t = START + offset
        # Kafka's "three" is at START + 2, inside [START + 3 - 3, START + 3]
        assert ws.values(key, t - WINDOW_SIZE, t) == {name}, key
    put_second_batch(ws)
    expected = {-1: set(), 0: set(), 1: set(), 2: twos(0), 3: twos(0, 1), 4: twos(0, 1, 2),
                5: twos(0, 1, 2, 3), 6: twos(1, 2, 3, 4), 7: twos(2, 3, 4, 5), 8: twos(3, 4, 5, 6),
                9: twos(4, 5, 6), 10: twos(5, 6), 11: twos(6), 12: set(), 13: set()}
    for offset, values in expected.items():
        t = START + offset
        assert ws.values(2, t - WINDOW_SIZE, t) == values, offset


def test_window_put_and_fetch_after(ws):
    """AbstractWindowBytesStoreTest#testPutAndFetchAfter (the changelog part is not a query)"""
    put_first_batch(ws)
    for key, expected, offset in [(0, {"zero"}, 0), (1, {"one"}, 1), (2, {"two"}, 2), (3, set(), 3),
                                  (4, {"four"}, 4), (5, {"five"}, 5)]:
        t = START + offset
        assert ws.values(key, t, t + WINDOW_SIZE) == expected, key
    put_second_batch(ws)
    expected = {-2: set(), -1: twos(0), 0: twos(0, 1), 1: twos(0, 1, 2), 2: twos(0, 1, 2, 3),
                3: twos(1, 2, 3, 4), 4: twos(2, 3, 4, 5), 5: twos(3, 4, 5, 6), 6: twos(4, 5, 6),
                7: twos(5, 6), 8: twos(6), 9: set(), 10: set(), 11: set(), 12: set()}
    for offset, values in expected.items():
        t = START + offset
        assert ws.values(2, t, t + WINDOW_SIZE) == values, offset


def test_window_fetch_and_iterate_over_exact_keys():
    """AbstractWindowBytesStoreTest#shouldFetchAndIterateOverExactKeys (the single-key
    fetches; the key-range fetches are not in the API). Retention 0x7a00000000000000 as
    in Kafka, so nothing expires."""
    far = 0x7A00000000000000
    with driver_for(window_reduce(retention=far, key_serde=S)) as driver:
        ws = WS(driver, key_serde=S)
        ws.put("a", "0001", 0)
        ws.put("aa", "0002", 0)
        ws.put("a", "0003", 1)
        ws.put("aa", "0004", 1)
        ws.put("a", "0005", far - 1)
        assert ws.values("a", 0, 2**63 - 1) == {"0001", "0003", "0005"}
        assert ws.values("aa", 0, 2**63 - 1) == {"0002", "0004"}


def test_window_update_same_window(ws):
    """AbstractWindowBytesStoreTest#testDeleteAndUpdate (the update; a window store
    delete has no DSL counterpart)"""
    ws.put(1, "one", 0)
    ws.put(1, "one v2", 0)
    assert ws.store.fetch(1, 0, 0) == [(0, "one v2")]


def test_window_not_found(ws):
    """AbstractWindowBytesStoreTest#shouldReturnNullOnWindowNotFound"""
    assert ws.store.fetch(1, 0, 0) == []


def test_window_fetch_null_key_is_an_error(ws):
    """AbstractWindowBytesStoreTest#shouldThrowNullPointerExceptionOnGetNullKey,
    CompositeReadOnlyWindowStoreTest#shouldThrowNPEIfKeyIsNull"""
    with pytest.raises((TypeError, ValueError)):
        ws.store.fetch(None, 1, 2)


def test_window_fetch_and_iterate_over_exact_binary_keys():
    """AbstractWindowBytesStoreTest#shouldFetchAndIterateOverExactBinaryKeys. Kafka's store
    retains duplicates, so key3 keeps "6" and "9" at 59999; a DSL window keeps the latest
    value, so key3's window at 59999 holds "9" only."""
    with driver_for(window_reduce(key_serde=B)) as driver:
        ws = WS(driver, key_serde=B)
        key1, key2, key3 = b"\x00", b"\x00\x00", b"\x00\x00\x00"
        for key, value, t in [(key1, "1", 0), (key2, "2", 0), (key3, "3", 0), (key1, "4", 1),
                              (key2, "5", 1), (key3, "6", 59999), (key1, "7", 59999),
                              (key2, "8", 59999), (key3, "9", 59999)]:
            ws.put(key, value, t)
        assert ws.values(key1, 0, 2**63 - 1) == {"1", "4", "7"}
        assert ws.values(key2, 0, 2**63 - 1) == {"2", "5", "8"}
        assert ws.values(key3, 0, 2**63 - 1) == {"3", "9"}


def test_window_fetch_range_that_is_expired(ws):
    """AbstractWindowBytesStoreTest#shouldNotThrowExceptionWhenFetchRangeIsExpired"""
    ws.put(1, "one", 0)
    ws.put(1, "two", 4 * RETENTION_PERIOD)
    assert ws.store.fetch(1, 0, 10) == []


def test_window_expired_windows_are_hidden_from_fetch_fetch_all_and_all():
    """AbstractWindowBytesStoreTest#shouldNotThrowExceptionWhenFetchRangeIsExpired with
    AbstractRocksDBSegmentedBytesStore's rule behind it: reads start at
    max(from, observed stream time - retention + 1), the observed time being the largest
    window start put. Retention 120000: a window at 0 is hidden once a window starts at
    120000, still visible while the largest start is 119999."""
    with driver_for(window_reduce()) as driver:
        ws = WS(driver)
        ws.put(1, "one", 0)
        ws.put(2, "two", RETENTION_PERIOD - 1)
        assert ws.store.fetch(1, 0, 10) == [(0, "one")]
        ws.put(2, "three", RETENTION_PERIOD)
        assert ws.store.fetch(1, 0, 10) == []
        assert ws.store.fetch_all(0, 10) == []
        assert [w.key for w, _ in ws.store.all()] == [2, 2]


def test_window_iterator_and_value_fetches(ws):
    """AbstractWindowBytesStoreTest#testWindowIteratorPeek, #testValueIteratorPeek (what
    the iterators hold; peeking is not in the API)"""
    ws.put(1, "one", 0)
    assert ws.store.fetch_all(0, 0) == [windowed(1, "one", 0)]
    assert ws.store.fetch(1, 0, 10) == [(0, "one")]


def test_window_all_taken_before_later_writes(ws):
    """AbstractWindowBytesStoreTest#shouldNotThrowConcurrentModificationException. Kafka's
    lazily opened RocksDB iterator also returns the windows put after ``all()`` was
    called; streamlib's ``all()`` is a list as of the last committed batch (DESIGN.md:
    a view reflects one committed batch), so it holds the first two and a new ``all()``
    holds all four, in Kafka's order."""
    ws.put(1, "one", 0)
    ws.put(1, "two", WINDOW_SIZE * 10)
    before = ws.store.all()
    ws.put(1, "three", WINDOW_SIZE * 20)
    ws.put(2, "four", WINDOW_SIZE * 30)
    assert before == [windowed(1, "one", 0), windowed(1, "two", 30)]
    assert ws.store.all() == [windowed(1, "one", 0), windowed(1, "two", 30),
                              windowed(1, "three", 60), windowed(2, "four", 90)]


# CompositeReadOnlyWindowStoreTest: Kafka's stub puts a value in the window starting at the
# given time, with WINDOW_SIZE 30000; tumbling windows of 10 put 0 and 10 in two windows.
COMPOSITE_SIZE = 10


@pytest.fixture
def cws():
    with driver_for(window_reduce(COMPOSITE_SIZE, key_serde=S)) as driver:
        yield WS(driver, key_serde=S)


def test_window_composite_fetch_values(cws):
    """CompositeReadOnlyWindowStoreTest#shouldFetchValuesFromWindowStore"""
    cws.put("my-key", "my-value", 0)
    cws.put("my-key", "my-later-value", 10)
    assert cws.store.fetch("my-key", 0, 25) == [(0, "my-value"), (10, "my-later-value")]


def test_window_composite_empty_if_no_data(cws):
    """CompositeReadOnlyWindowStoreTest#shouldReturnEmptyIteratorIfNoData"""
    assert cws.store.fetch("my-key", 0, 25) == []


def test_window_composite_find_value_for_key_when_multi_stores(cws):
    """CompositeReadOnlyWindowStoreTest#shouldFindValueForKeyWhenMultiStores"""
    cws.put("key-one", "value-one", 0)
    cws.put("key-two", "value-two", 10)
    assert cws.store.fetch("key-one", 0, 1) == [(0, "value-one")]
    assert cws.store.fetch("key-two", 10, 11) == [(10, "value-two")]


def test_window_composite_not_values_from_other_stores():
    """CompositeReadOnlyWindowStoreTest#shouldNotGetValuesFromOtherStores (windows of 1 ms:
    Kafka's stub windows start at 0 and 1)"""
    builder = window_reduce(key_serde=S, name="window-store")
    window_reduce(key_serde=S, name="other-window-store", topic="other", builder=builder)
    with driver_for(builder) as driver:
        other = WS(driver, key_serde=S, name="other-window-store", topic="other")
        mine = WS(driver, key_serde=S, name="window-store")
        other.put("some-key", "some-value", 0)
        mine.put("some-key", "my-value", 1)
        assert mine.store.fetch("some-key", 0, 2) == [(1, "my-value")]


def test_window_composite_fetch_key_value_across_stores(cws):
    """CompositeReadOnlyWindowStoreTest#shouldFetchKeyValueAcrossStores"""
    cws.put("a", "a", 0)
    cws.put("b", "b", 10)
    assert cws.store.fetch("a", 0, 0) == [(0, "a")]
    assert cws.store.fetch("b", 10, 10) == [(10, "b")]
    assert cws.store.fetch("c", 10, 10) == []
    assert cws.store.fetch("a", 10, 10) == []


def test_window_composite_all_and_fetch_all_across_stores(cws):
    """CompositeReadOnlyWindowStoreTest#shouldGetAllAcrossStores, #shouldFetchAllAcrossStores"""
    cws.put("a", "a", 0)
    cws.put("b", "b", 10)
    expected = [windowed("a", "a", 0, COMPOSITE_SIZE), windowed("b", "b", 10, COMPOSITE_SIZE)]
    assert cws.store.all() == expected
    assert cws.store.fetch_all(0, 10) == expected


def test_window_facade_returns_plain_values():
    """ReadOnlyWindowStoreFacadeTest#shouldReturnPlainKeyValuePairsOnSingleKeyFetch,
    #...OnSingleKeyFetchLongParameters, #...OnFetchAllLongParameters, #...OnAll: the view
    of a timestamped window store gives plain values, never (value, timestamp). Kafka's
    mocked windows are [21, 22) and [42, 43): tumbling windows of 1."""
    with driver_for(window_reduce(key_serde=S)) as driver:
        ws = WS(driver, key_serde=S)
        ws.put("key1", "value1", 21)
        ws.put("key1", "value2", 42)
        ws.put("key2", "value2", 42)
        assert ws.store.fetch("key1", 21, 21) == [(21, "value1")]
        assert ws.store.fetch("unknownKey", 21, 21) == []
        assert ws.store.fetch("key1", 21, 42) == [(21, "value1"), (42, "value2")]
        assert ws.store.fetch_all(21, 42)[0] == windowed("key1", "value1", 21)
        assert ws.store.fetch_all(21, 42)[-1] == windowed("key2", "value2", 42)
        assert ws.store.all()[0] == windowed("key1", "value1", 21)
        assert ws.store.all()[-1] == windowed("key2", "value2", 42)


# -- session stores ---------------------------------------------------------------------------

SESSION_RETENTION = 10_000      # AbstractSessionBytesStoreTest.RETENTION_PERIOD
GAP = 5


def session_reduce(gap=GAP, retention=SESSION_RETENTION, name="s", topic="in", builder=None):
    """Sessions keeping their latest value; retention (gap + grace) = ``retention``."""
    builder = builder or StreamsBuilder()
    builder.stream(topic, consumed=Consumed.with_(S, L)).group_by_key() \
        .windowed_by(SessionWindows.with_inactivity_gap(gap, grace=retention - gap)) \
        .reduce(latest, materialized=Materialized.as_(name))
    return builder


class SS:
    def __init__(self, driver, name="s", topic="in"):
        self.input = driver.create_input_topic(topic, S, L)
        self.store = driver.get_session_store(name)

    def put(self, key, value, t):
        """A record at ``t``: a session [t, t] unless it merges."""
        self.input.pipe_input(key, value, t)


@pytest.fixture
def ss():
    with driver_for(session_reduce()) as driver:
        yield SS(driver)


def session(key, start, end, value):
    return (Windowed(key, Window(start, end)), value)


def test_session_fetch_all_sessions_with_same_record_key(ss):
    """AbstractSessionBytesStoreTest#shouldFetchAllSessionsWithSameRecordKey"""
    expected = [session("a", 0, 0, 1), session("a", 10, 10, 2), session("a", 100, 100, 3),
                session("a", 1000, 1000, 4)]
    for (w, value) in expected:
        ss.put("a", value, w.window.start)
    ss.put("aa", 5, 0)
    assert ss.store.fetch_sessions("a") == expected


def test_session_composite_fetch_results(ss):
    """CompositeReadOnlySessionStoreTest#shouldFetchResultsFromUnderlyingSessionStore"""
    ss.put("a", 1, 0)
    ss.put("a", 2, 10)
    assert ss.store.fetch_sessions("a") == [session("a", 0, 0, 1), session("a", 10, 10, 2)]


def test_session_composite_empty_if_no_data(ss):
    """CompositeReadOnlySessionStoreTest#shouldReturnEmptyIteratorIfNoData"""
    assert ss.store.fetch_sessions("b") == []


def test_session_composite_find_value_for_key_when_multi_stores(ss):
    """CompositeReadOnlySessionStoreTest#shouldFindValueForKeyWhenMultiStores"""
    ss.put("key-one", 0, 0)
    ss.put("key-two", 10, 0)
    assert ss.store.fetch_sessions("key-one") == [session("key-one", 0, 0, 0)]
    assert ss.store.fetch_sessions("key-two") == [session("key-two", 0, 0, 10)]


def test_session_composite_not_values_from_other_stores():
    """CompositeReadOnlySessionStoreTest#shouldNotGetValueFromOtherStores"""
    builder = session_reduce(name="session-store")
    session_reduce(name="other-session-store", topic="other", builder=builder)
    with driver_for(builder) as driver:
        other = SS(driver, name="other-session-store", topic="other")
        mine = SS(driver, name="session-store")
        other.put("foo", 10, 10)
        mine.put("foo", 1, 0)
        assert mine.store.fetch_sessions("foo") == [session("foo", 0, 0, 1)]


def test_session_fetch_null_key_is_an_error(ss):
    """CompositeReadOnlySessionStoreTest#shouldThrowNullPointerExceptionIfFetchingNullKey,
    AbstractSessionBytesStoreTest#shouldThrowNullPointerExceptionOnFetchNullKey"""
    with pytest.raises((TypeError, ValueError)):
        ss.store.fetch_sessions(None)


# Not ported: AbstractSessionBytesStoreTest#shouldRemoveExpired and
# #shouldNotFetchExpiredSessions. Kafka's bare RocksDB session store hides sessions ending
# at or before its largest session end - retention from every fetch; streamlib keeps them
# until their segment is dropped, as Kafka's cached store (what DSL users query) still
# serves them: SessionWindowedKStreamImplTest#shouldMaterializeCount and its siblings
# (tests/unit/test_session_windowed_kstream.py) expect session [10,15] in the store after a
# record at 600 with retention 90. Merges never see them (SessionAggregateProcessor.find_from).


# -- QueryableStateIntegrationTest --------------------------------------------------------------

NOW = 1_729_800_123_456         # stands in for MockTime
KEYS = ["hello", "goodbye", "welcome", "go", "kafka"]
TWO_DAYS = 2 * 24 * 3600 * 1000


@pytest.mark.parametrize("cache_max_bytes", [0, 10 * 1024 * 1024], ids=["zero_cache", "cache"])
def test_queryable_count_and_windowed_count(cache_max_bytes):
    """QueryableStateIntegrationTest#shouldBeAbleToQueryStateWithZeroSizedCache,
    #shouldBeAbleToQueryStateWithNonZeroSizedCache (verifyCanQueryState,
    verifyCanGetByKey, verifyRangeAndAll)"""
    builder = StreamsBuilder()
    s1 = builder.stream("stream-one", consumed=Consumed.with_(S, S))
    s1.group_by_key().count(materialized=Materialized.as_("my-count")).to_stream() \
        .to("output", produced=Produced.with_(S, L))
    s1.group_by_key().windowed_by(TimeWindows.of(TWO_DAYS)) \
        .count(materialized=Materialized.as_("windowed-count"))
    with driver_for(builder, cache_max_bytes=cache_max_bytes) as driver:
        inp = driver.create_input_topic("stream-one", S, S)
        for key in sorted(KEYS):
            inp.pipe_input(key, key, NOW)
        my_count = driver.get_key_value_store("my-count")
        window_store = driver.get_window_store("windowed-count")
        expected = {(k, 1) for k in KEYS}
        window_state = set()
        for key in KEYS:
            fetched = window_store.fetch(key, 0, NOW)
            if fetched:
                window_state.add((key, fetched[0][1]))
        assert window_state == expected
        assert {(k, my_count.get(k)) for k in KEYS} == expected
        assert set(my_count.range("go", "kafka")) == {("hello", 1), ("go", 1), ("goodbye", 1),
                                                        ("kafka", 1)}
        assert set(my_count.all()) == expected


BATCH1 = {"hello": 1, "goodbye": 1, "welcome": 3, "go": 5, "kafka": 2}


def test_queryable_filter_state():
    """QueryableStateIntegrationTest#shouldBeAbleToQueryFilterState"""
    builder = StreamsBuilder()
    t1 = builder.table("stream-one", consumed=Consumed.with_(S, L))
    pred = lambda k, v: "kafka" in k  # noqa: E731
    t2 = t1.filter(pred, materialized=Materialized.as_("queryFilter"))
    t1.filter_not(pred, materialized=Materialized.as_("queryFilterNot"))
    t2.to_stream().to("output", produced=Produced.with_(S, L))
    with driver_for(builder, default_key_serde=S, default_value_serde=L) as driver:
        inp = driver.create_input_topic("stream-one", S, L)
        for k, v in BATCH1.items():
            inp.pipe_input(k, v, NOW)
        flt = driver.get_key_value_store("queryFilter")
        flt_not = driver.get_key_value_store("queryFilterNot")
        assert {k: flt.get(k) for k in BATCH1} == {k: (2 if k == "kafka" else None) for k in BATCH1}
        assert {k: flt_not.get(k) for k in BATCH1} == {k: (None if k == "kafka" else v)
                                                        for k, v in BATCH1.items()}


def _map_values_topology(with_filter=False):
    builder = StreamsBuilder()
    t = builder.table("stream-one", consumed=Consumed.with_(S, S))
    if with_filter:
        t = t.filter(lambda k, v: "kafka" in k, materialized=Materialized.as_("queryFilter"))
    t.map_values(int, materialized=Materialized.as_("queryMapValues").with_value_serde(L)) \
        .to_stream().to("output", produced=Produced.with_(S, L))
    return builder


def _pipe_batch1_as_strings(driver):
    inp = driver.create_input_topic("stream-one", S, S)
    for k, v in BATCH1.items():
        inp.pipe_input(k, str(v), NOW)


def test_queryable_map_values_state():
    """QueryableStateIntegrationTest#shouldBeAbleToQueryMapValuesState"""
    with driver_for(_map_values_topology()) as driver:
        _pipe_batch1_as_strings(driver)
        store = driver.get_key_value_store("queryMapValues")
        assert {k: store.get(k) for k in BATCH1} == BATCH1
        list(store.range("hello", "kafka"))     # Kafka only prints it


def test_queryable_keys_with_given_prefix():
    """QueryableStateIntegrationTest#shouldBeAbleToQueryKeysWithGivenPrefix"""
    with driver_for(_map_values_topology()) as driver:
        _pipe_batch1_as_strings(driver)
        store = driver.get_key_value_store("queryMapValues")
        assert list(store.prefix_scan("go")) == [("go", 5), ("goodbye", 1)]


def test_queryable_map_values_after_filter_state():
    """QueryableStateIntegrationTest#shouldBeAbleToQueryMapValuesAfterFilterState"""
    with driver_for(_map_values_topology(with_filter=True)) as driver:
        _pipe_batch1_as_strings(driver)
        store = driver.get_key_value_store("queryMapValues")
        assert store.get("kafka") == 2
        assert all(store.get(k) is None for k in BATCH1 if k != "kafka")


def test_queryable_count_by_key():
    """QueryableStateIntegrationTest#shouldNotMakeStoreAvailableUntilAllStoresAvailable
    (the count before the restart; the driver cannot restart)"""
    builder = StreamsBuilder()
    builder.stream("stream-three", consumed=Consumed.with_(S, S)).group_by_key() \
        .count(materialized=Materialized.as_("count-by-key"))
    with driver_for(builder) as driver:
        driver.create_input_topic("stream-three", S, S).pipe_key_value_list([("hello", "hello")] * 8)
        assert driver.get_key_value_store("count-by-key").get("hello") == 8


def test_queryable_reduce():
    """QueryableStateIntegrationTest#shouldAllowToQueryAfterThreadDied (the store before
    the injected failure)"""
    builder = StreamsBuilder()
    builder.stream("stream-one", consumed=Consumed.with_(S, S)).group_by_key() \
        .reduce(lambda v1, v2: v1 + v2, materialized=Materialized.as_("store")) \
        .to_stream().to("output", produced=Produced.with_(S, S))
    with driver_for(builder) as driver:
        driver.create_input_topic("stream-one", S, S).pipe_key_value_list(
            [("a", "1"), ("a", "2"), ("b", "3"), ("b", "4")])
        store = driver.get_key_value_store("store")
        assert store.get("a") == "12" and store.get("b") == "34"


INPUT_VALUES = ["hello world", "all streams lead to kafka", "streams", "kafka streams",
                "the cat in the hat", "green eggs and ham", "that Sam i am",
                "up the creek without a paddle", "run forest run", "a tank full of gas",
                "eat sleep rave repeat", "one jolly sailor", "king of the world"]


def test_queryable_word_count_every_key_queryable():
    """QueryableStateIntegrationTest's createCountStream with verifyAllKVKeys and
    verifyAllWindowedKeys (from the rebalance tests: every word has a count and a
    windowed count; Kafka queries windows with from=0, to=now)"""
    builder = StreamsBuilder()
    grouped = builder.stream("stream-concurrent", consumed=Consumed.with_(S, S)) \
        .flat_map_values(lambda v: re.split(r"\W+", v)) \
        .group_by(lambda k, v: v)
    grouped.count(materialized=Materialized.as_("word-count-stream-concurrent")).to_stream() \
        .to("output-concurrent", produced=Produced.with_(S, L))
    grouped.windowed_by(TimeWindows.of(TWO_DAYS)) \
        .count(materialized=Materialized.as_("windowed-word-count-stream-concurrent")) \
        .to_stream(lambda k, v: k.key).to("output-concurrent-windowed", produced=Produced.with_(S, L))
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("stream-concurrent", S, S)
        for i, sentence in enumerate(INPUT_VALUES):
            inp.pipe_input(str(i), sentence, NOW)
        keys = {w for sentence in INPUT_VALUES for w in re.split(r"\W+", sentence)}
        counts = driver.get_key_value_store("word-count-stream-concurrent")
        windows = driver.get_window_store("windowed-word-count-stream-concurrent")
        assert [k for k in sorted(keys) if counts.get(k) is None] == []
        assert [k for k in sorted(keys) if not windows.fetch(k, 0, NOW)] == []
