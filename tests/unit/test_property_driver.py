"""Property test: random inputs through map/filter/flat_map/group_by/aggregate and a
KTable filter + group_by/aggregate, compared with a plain-Python model of the same
computation (the sequence of emitted updates and the final store contents)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlib import Consumed, Grouped, Materialized, Produced, StreamsBuilder

from streams_helpers import I, S, driver_for, kvt

keys = st.one_of(st.none(), st.sampled_from(["a", "ab", "b", "ba", "c"]))
values = st.one_of(st.none(), st.integers(min_value=-20, max_value=20))
records = st.lists(st.tuples(keys, values, st.integers(min_value=0, max_value=50)), max_size=10)


# -- the computation, once as a topology and once in plain Python ---------------------------
def explode(k, v):
    """flat_map: odd values fan out to a second key."""
    if v is None:
        return []
    return [(k, v), ((k or "") + "x", v * 2)] if v % 2 else [(k, v)]


def keep(k, v):
    return v % 5 != 0


def first_letter(k, v):
    return k[:1] if k else None


def even(k, v):
    return v % 2 == 0


def by_mod(k, v):
    return str(v % 3), v


def build():
    builder = StreamsBuilder()
    builder.stream("events", consumed=Consumed.with_(S, I)) \
        .flat_map(explode).filter(keep).map(lambda k, v: (k, v + 1)) \
        .group_by(first_letter, Grouped.with_(S, I, name="by-letter")) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + v, materialized=Materialized.as_("sums").with_value_serde(I)) \
        .to_stream().to("sums-out", produced=Produced.with_(S, I))
    builder.table("rows", consumed=Consumed.with_(S, I), materialized=Materialized.as_("rows")) \
        .filter(even) \
        .group_by(by_mod, Grouped.with_(S, I)) \
        .aggregate(lambda: 0, lambda k, v, agg: agg + v, lambda k, v, agg: agg - v,
                   materialized=Materialized.as_("by-mod").with_value_serde(I)) \
        .to_stream().to("mod-out", produced=Produced.with_(S, I))
    return builder.build()


TOPOLOGY = build()


def model_stream(inputs):
    store, emitted, dropped = {}, [], 0
    for k, v, ts in inputs:
        for k2, v2 in explode(k, v):
            if not keep(k2, v2):
                continue
            group = first_letter(k2, v2 + 1)
            if group is None:
                dropped += 1
                continue
            agg, agg_ts = store.get(group, (0, ts))
            store[group] = (agg + v2 + 1, max(ts, agg_ts))
            emitted.append((group, *store[group]))
    return emitted, {g: a for g, (a, _) in store.items()}, dropped


def model_table(inputs):
    table, groups, emitted, dropped = {}, {}, [], 0

    def apply(group, new, old, ts):
        prev = groups.get(group)
        agg = None if prev is None else prev[0]
        if old is not None and agg is not None:
            agg -= old
        if new is not None:
            agg = (agg or 0) + new
        groups[group] = (agg, ts if prev is None else max(ts, prev[1]))
        emitted.append((group, agg, groups[group][1]))

    for k, v, ts in inputs:
        if k is None:
            dropped += 1
            continue
        old_row = table.get(k)
        if v is None:
            table.pop(k, None)
        else:
            table[k] = v
        old = old_row if old_row is not None and even(k, old_row) else None
        new = v if v is not None and even(k, v) else None
        old_pair = None if old is None else by_mod(k, old)
        new_pair = None if new is None else by_mod(k, new)
        if old_pair and new_pair and old_pair[0] == new_pair[0]:
            apply(new_pair[0], new_pair[1], old_pair[1], ts)
            continue
        if old_pair:
            apply(old_pair[0], None, old_pair[1], ts)
        if new_pair:
            apply(new_pair[0], new_pair[1], None, ts)
    # final contents also follow directly from the table: the sum of the even rows per group
    for group in groups:
        assert groups[group][0] == sum(v for v in table.values() if even(None, v) and by_mod(None, v)[0] == group)
    return emitted, table, {g: a for g, (a, _) in groups.items()}, dropped


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=records, rows=records)
def test_driver_matches_a_plain_python_model(events, rows):
    with driver_for(TOPOLOGY) as driver:
        ev = driver.create_input_topic("events", S, I)
        for k, v, ts in events:
            ev.pipe_input(k, v, ts)
        tb = driver.create_input_topic("rows", S, I)
        for k, v, ts in rows:
            tb.pipe_input(k, v, ts)

        emitted, sums, dropped_s = model_stream(events)
        assert kvt(driver.create_output_topic("sums-out", S, I).read_records_to_list()) == emitted
        assert dict(driver.get_key_value_store("sums").all()) == sums

        emitted_t, table, groups, dropped_t = model_table(rows)
        assert kvt(driver.create_output_topic("mod-out", S, I).read_records_to_list()) == emitted_t
        assert dict(driver.get_key_value_store("rows").all()) == table
        assert dict(driver.get_key_value_store("by-mod").all()) == groups
        assert driver.metrics()["dropped_records"] == dropped_s + dropped_t
