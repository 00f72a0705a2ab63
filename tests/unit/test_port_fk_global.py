"""Foreign-key table–table joins and global tables: the parts of Kafka Streams' own tests
that test_ktable_fk_join.py and test_kstream_global_ktable_join.py do not port yet, with
Kafka's expectations (keys, values, timestamps, tombstones, store contents) unchanged.

Sources (apache/kafka, streams/src/test/java/org/apache/kafka/streams/):
kstream/internals/KTableKTableForeignKeyJoinScenarioTest,
integration/KTableKTableForeignKeyJoinIntegrationTest (its ``materialized=false`` and
``rejoin=true`` parameters, shouldEmitRecordWhenOldAndNewFkDiffer and the un-versioned
case of shouldIgnoreOutOfOrderRecordsIffVersioned; test_ktable_fk_join.py has the
``materialized=true, rejoin=false`` runs of the other methods),
integration/KTableKTableForeignKeyInnerJoinMultiIntegrationTest,
integration/KTableKTableForeignKeyJoinMaterializationIntegrationTest (the members of
ForeignKeyJoinSuite a driver can run), kstream/internals/KStreamGlobalKTableLeftJoinTest
(methods not yet ported), kstream/internals/GlobalKTableJoinsTest,
integration/GlobalKTableIntegrationTest and integration/GlobalKTableEOSIntegrationTest
(their join outputs and global store contents, run under the TopologyTestDriver).

Not ported: Kafka's ``TOPOLOGY_OPTIMIZATION`` parameter (streamlib has no such
setting), versioned stores (``Stores.persistentVersionedKeyValueStore``: no streamlib
counterpart), ``TableJoined`` partitioners, serde-scope pseudo-topic names
(shouldUseExpectedTopicsWithSerde), the subscription store's internal key layout
(shouldEmitRecordWhenOldAndNewFkDiffer's ``subscriptionStore.get(...)``), restarts,
broker transactions and checkpoint files (GlobalKTableEOSIntegrationTest's restore
methods, GlobalKTableIntegrationTest's restart).
"""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Produced, Serdes, StreamsBuilder

from join_helpers import tostring_joiner
from streams_helpers import I, L, S, driver_for, kvt

LEFT_TABLE = "left_table"
RIGHT_TABLE = "right_table"
OUTPUT = "output-topic"
REJOIN_OUTPUT = "rejoin-output-topic"
BASE = 1_700_000_000_000   # Kafka's baseTimestamp (MockTime's clock; any value works)


def joiner(value1, value2) -> str:
    """Kafka's ``"(" + value1 + "," + value2 + ")"`` (Java prints null as "null")."""
    return f"({'null' if value1 is None else value1},{'null' if value2 is None else value2})"


def rejoiner(value1, value2) -> str:
    """Kafka's ``"rejoin(" + value1 + "," + value2 + ")"``."""
    return f"rejoin({'null' if value1 is None else value1},{'null' if value2 is None else value2})"


def split_extractor(value: str) -> str:
    """Kafka's ``value -> value.split("\\\\|")[1]``."""
    return value.split("|")[1]


# ======================================================================================
# KTableKTableForeignKeyJoinScenarioTest
# ======================================================================================

def _scenario(variant: str):
    """The topology of one of Kafka's shouldWorkWith... methods: A ⋈fk B into "asdf",
    then A ⋈ (A ⋈fk B) on the key into "output"."""
    builder = StreamsBuilder()
    a = builder.table("A", consumed=Consumed.with_(I, S) if variant == "consumed" else None)
    b = builder.table("B")
    fk_store = Materialized.as_("asdf")
    if variant == "join_result":
        fk_store = fk_store.with_key_serde(I).with_value_serde(S)
    fk_result = a.join(b, lambda av, bv: f"({av},{bv})", materialized=fk_store,
                       foreign_key_extractor=lambda v: int(v.split("-")[0]))
    final = a.join(fk_result, lambda av, fv: f"({av},{fv})",
                   materialized=Materialized.with_(I, S) if variant == "equi_join_result" else None)
    final.to_stream().to("output", Produced.with_(I, S) if variant == "produced" else None)
    return builder


@pytest.mark.parametrize("variant", ["default", "consumed", "join_result", "equi_join_result", "produced"])
def test_scenario_serdes(variant):
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultSerdes (with its
    ``Materialized.as("asdf")``), shouldWorkWithDefaultAndConsumedSerdes,
    shouldWorkWithDefaultAndJoinResultSerdes, shouldWorkWithDefaultAndEquiJoinResultSerdes
    and shouldWorkWithDefaultAndProducedSerdes (validateTopologyCanProcessData: Integer
    keys and String values by default)."""
    with driver_for(_scenario(variant), default_key_serde=I, default_value_serde=S) as driver:
        driver.create_input_topic("A", I, S).pipe_input(1, "999-alpha")
        driver.create_input_topic("B", I, S).pipe_input(999, "beta")
        out = driver.create_output_topic("output", I, S)
        assert out.read_key_values_to_map() == {1: "(999-alpha,(999-alpha,beta))"}


# ======================================================================================
# KTableKTableForeignKeyJoinIntegrationTest
# ======================================================================================

class FkTopology:
    """KTableKTableForeignKeyJoinIntegrationTest.getTopology (un-versioned tables): left ⋈fk
    right into OUTPUT; with ``materialized`` the result is the uncached store "store",
    otherwise ``Materialized.with(null, String).withCachingDisabled()``; with ``rejoin`` the
    result is joined again with the left table (the same join kind) into REJOIN_OUTPUT."""

    def __init__(self, left_join: bool, materialized: bool, rejoin: bool, extract=split_extractor):
        builder = StreamsBuilder()
        left = builder.table(LEFT_TABLE, consumed=Consumed.with_(S, S))
        right = builder.table(RIGHT_TABLE, consumed=Consumed.with_(S, S))
        main = (Materialized.as_("store").with_value_serde(S) if materialized
                else Materialized.with_(None, S)).with_caching_disabled()
        how = "left_join" if left_join else "join"
        fk = getattr(left, how)(right, joiner, materialized=main, foreign_key_extractor=extract)
        fk.to_stream().to(OUTPUT, Produced.with_(S, S))
        if rejoin:
            again = (Materialized.as_("store-rejoin").with_value_serde(S).with_caching_disabled()
                     if materialized else Materialized.with_(None, S))
            getattr(fk, how)(left, rejoiner, materialized=again).to_stream().to(
                REJOIN_OUTPUT, Produced.with_(S, S))
        self.left_join, self.materialized, self.rejoin = left_join, materialized, rejoin
        self.builder = builder

    def __enter__(self):
        self._cm = driver_for(self.builder)
        self.driver = self._cm.__enter__()
        self.right = self.driver.create_input_topic(RIGHT_TABLE, S, S)
        self.left = self.driver.create_input_topic(LEFT_TABLE, S, S)
        self.out = self.driver.create_output_topic(OUTPUT, S, S)
        self.rejoin_out = self.driver.create_output_topic(REJOIN_OUTPUT, S, S)
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)

    def output(self) -> dict:
        return self.out.read_key_values_to_map()

    def rejoin_output(self) -> dict:
        return self.rejoin_out.read_key_values_to_map()

    def check_store(self, expected: dict) -> None:
        """Kafka's ``if (materialized) assertThat(asMap(store), is(expected))``."""
        if self.materialized:
            assert dict(self.driver.get_key_value_store("store").all()) == expected


#: (materialized, rejoin) runs of Kafka's parameter grid not in test_ktable_fk_join.py
NEW_PARAMS = [(True, True), (False, False), (False, True)]
NEW_IDS = ["materialized-rejoin", "unmaterialized", "unmaterialized-rejoin"]
ALL_PARAMS = [(True, False)] + NEW_PARAMS
ALL_IDS = ["materialized"] + NEW_IDS
#: for the methods that never read the rejoin output, one run with and one without the
#: extra rejoin topology (the output and store checks are the same in every run)
SOME_PARAMS = [(True, True), (False, False)]
SOME_IDS = ["materialized-rejoin", "unmaterialized"]


@pytest.fixture(params=[False, True], ids=["inner", "left"])
def left_join(request):
    return request.param


@pytest.mark.parametrize("materialized,rejoin", NEW_PARAMS, ids=NEW_IDS)
def test_join_from_left_then_delete_left_entity(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromLeftThenDeleteLeftEntity, with
    the rejoin output checked when ``rejoin``. Deleting lhs1 makes the left-join rejoin
    emit twice: ``rejoin(<old result>,null)`` at once (the left table is its other side)
    and, once the subscription round trip deletes the foreign-key result, a tombstone.
    Kafka's driver writes the first before it processes the records the deletion wrote to
    the subscription topic, so the tombstone is last and the map holds ``lhs1 -> null``."""
    with FkTopology(left_join, materialized, rejoin) as j:
        j.right.pipe_input("rhs1", "rhsValue1", BASE)
        j.right.pipe_input("rhs2", "rhsValue2", BASE + 1)
        j.right.pipe_input("rhs3", "rhsValue3", BASE + 2)
        assert j.output() == {}
        if rejoin:
            assert j.rejoin_output() == {}
        j.check_store({})

        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE + 3)
        j.left.pipe_input("lhs2", "lhsValue2|rhs2", BASE + 4)
        expected = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        assert j.output() == expected
        if rejoin:
            assert j.rejoin_output() == {
                "lhs1": "rejoin((lhsValue1|rhs1,rhsValue1),lhsValue1|rhs1)",
                "lhs2": "rejoin((lhsValue2|rhs2,rhsValue2),lhsValue2|rhs2)",
            }
        j.check_store(expected)

        j.left.pipe_input("lhs3", "lhsValue3|rhs1", BASE + 5)
        assert j.output() == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        if rejoin:
            assert j.rejoin_output() == {"lhs3": "rejoin((lhsValue3|rhs1,rhsValue1),lhsValue3|rhs1)"}
        j.check_store({"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)",
                       "lhs3": "(lhsValue3|rhs1,rhsValue1)"})

        j.left.pipe_input("lhs1", None, BASE + 6)
        assert j.output() == {"lhs1": None}
        if rejoin:
            assert j.rejoin_output() == {"lhs1": None}
        j.check_store({"lhs2": "(lhsValue2|rhs2,rhsValue2)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_join_from_right_then_delete_right_entity(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromRightThenDeleteRightEntity."""
    lj = left_join
    with FkTopology(left_join, materialized, rejoin) as j:
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE)
        j.left.pipe_input("lhs2", "lhsValue2|rhs2", BASE + 1)
        j.left.pipe_input("lhs3", "lhsValue3|rhs1", BASE + 2)
        half = {"lhs1": "(lhsValue1|rhs1,null)", "lhs2": "(lhsValue2|rhs2,null)",
                "lhs3": "(lhsValue3|rhs1,null)"}
        assert j.output() == (half if lj else {})
        j.check_store(half if lj else {})

        j.right.pipe_input("rhs1", "rhsValue1", BASE + 3)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        both = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        j.check_store({**both, "lhs2": "(lhsValue2|rhs2,null)"} if lj else both)

        j.right.pipe_input("rhs2", "rhsValue2", BASE + 4)
        assert j.output() == {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        full = {**both, "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        j.check_store(full)

        j.right.pipe_input("rhs3", "rhsValue3", BASE + 5)
        assert j.output() == {}
        j.check_store(full)

        j.right.pipe_input("rhs1", None, BASE + 6)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,null)" if lj else None,
                              "lhs3": "(lhsValue3|rhs1,null)" if lj else None}
        j.check_store({"lhs1": "(lhsValue1|rhs1,null)", "lhs2": "(lhsValue2|rhs2,rhsValue2)",
                       "lhs3": "(lhsValue3|rhs1,null)"} if lj
                      else {"lhs2": "(lhsValue2|rhs2,rhsValue2)"})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_emit_tombstone_when_deleting_non_joining_records(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitTombstoneWhenDeletingNonJoiningRecords."""
    with FkTopology(left_join, materialized, rejoin) as j:
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE)
        expected = {"lhs1": "(lhsValue1|rhs1,null)"} if left_join else {}
        assert j.output() == expected
        j.check_store(expected)
        j.left.pipe_input("lhs1", None, BASE + 1)
        assert j.output() == {"lhs1": None}
        j.check_store({})
        j.left.pipe_input("lhs1", None, BASE + 2)
        assert j.output() == {}
        j.check_store({})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_no_tombstones_when_deleting_non_existing_records(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldNotEmitTombstonesWhenDeletingNonExistingRecords."""
    with FkTopology(left_join, materialized, rejoin) as j:
        j.left.pipe_input("lhs1", None, BASE)
        assert j.output() == {}
        j.check_store({})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_nulls_when_value_has_non_matching_foreign_key(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.joinShouldProduceNullsWhenValueHasNonMatchingForeignKey."""
    lj = left_join
    with FkTopology(left_join, materialized, rejoin) as j:
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE)
        assert j.output() == ({"lhs1": "(lhsValue1|rhs1,null)"} if lj else {})
        j.check_store({"lhs1": "(lhsValue1|rhs1,null)"} if lj else {})
        j.left.pipe_input("lhs1", "lhsValue1|rhs2", BASE + 1)
        assert j.output() == {"lhs1": "(lhsValue1|rhs2,null)" if lj else None}
        j.check_store({"lhs1": "(lhsValue1|rhs2,null)"} if lj else {})
        j.left.pipe_input("lhs1", "lhsValue1|rhs3", BASE + 2)
        assert j.output() == {"lhs1": "(lhsValue1|rhs3,null)" if lj else None}
        j.check_store({"lhs1": "(lhsValue1|rhs3,null)"} if lj else {})
        j.right.pipe_input("rhs1", "rhsValue1", BASE + 3)
        assert j.output() == {}
        j.check_store({"lhs1": "(lhsValue1|rhs3,null)"} if lj else {})
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE + 4)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        j.check_store({"lhs1": "(lhsValue1|rhs1,rhsValue1)"})
        j.left.pipe_input("lhs1", "lhsValue1|rhs2", BASE + 5)
        assert j.output() == {"lhs1": "(lhsValue1|rhs2,null)" if lj else None}
        j.check_store({"lhs1": "(lhsValue1|rhs2,null)"} if lj else {})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_unsubscribe_old_foreign_key_if_left_side_is_updated(left_join, materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated."""
    with FkTopology(left_join, materialized, rejoin) as j:
        j.right.pipe_input("rhs1", "rhsValue1", BASE)
        j.right.pipe_input("rhs2", "rhsValue2", BASE + 1)
        assert j.output() == {}
        j.check_store({})
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE + 2)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        j.check_store({"lhs1": "(lhsValue1|rhs1,rhsValue1)"})
        j.left.pipe_input("lhs1", "lhsValue1|rhs2", BASE + 3)
        assert j.output() == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}
        j.check_store({"lhs1": "(lhsValue1|rhs2,rhsValue2)"})
        j.right.pipe_input("rhs1", "rhsValue1Delta", BASE + 4)
        assert j.output() == {}
        j.check_store({"lhs1": "(lhsValue1|rhs2,rhsValue2)"})


@pytest.mark.parametrize("materialized,rejoin", SOME_PARAMS, ids=SOME_IDS)
def test_emit_record_on_null_foreign_key_for_left_joins(materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordOnNullForeignKeyForLeftJoins
    (a left join whose extractor always returns null)."""
    with FkTopology(True, materialized, rejoin, extract=lambda v: None) as j:
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,null)"}
        j.check_store({"lhs1": "(lhsValue1|rhs1,null)"})


def _return_null_extractor(value: str):
    """shouldEmitRecordWhenOldAndNewFkDiffer's extractor: "returnNull" means no foreign key."""
    split = value.split("|")[1]
    return None if split == "returnNull" else split


@pytest.mark.parametrize("materialized,rejoin", ALL_PARAMS, ids=ALL_IDS)
def test_emit_record_when_old_and_new_fk_differ(materialized, rejoin):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordWhenOldAndNewFkDiffer (a left
    join; both records at the same timestamp). Kafka's check that the subscription
    store's entry for (rhs1, lhs1) is gone is not ported (internal key layout)."""
    with FkTopology(True, materialized, rejoin, extract=_return_null_extractor) as j:
        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE)
        assert j.output() == {"lhs1": "(lhsValue1|rhs1,null)"}
        j.check_store({"lhs1": "(lhsValue1|rhs1,null)"})
        j.left.pipe_input("lhs1", "lhsValue1|returnNull", BASE)
        assert j.output() == {"lhs1": "(lhsValue1|returnNull,null)"}
        j.check_store({"lhs1": "(lhsValue1|returnNull,null)"})


@pytest.mark.parametrize("materialized", [True, False], ids=["materialized", "unmaterialized"])
def test_out_of_order_records_when_not_versioned(left_join, materialized):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldIgnoreOutOfOrderRecordsIffVersioned
    with leftVersioned = rightVersioned = false (the versionedData grid: no rejoin): every
    out-of-order record, tombstones included, updates the result like an in-order one."""
    lj = left_join
    with FkTopology(left_join, materialized, False) as j:
        j.right.pipe_input("rhs1", "rhsValue1", BASE + 4)
        assert j.output() == {}
        j.check_store({})

        j.left.pipe_input("lhs1", "lhsValue1|rhs1", BASE + 3)
        j.left.pipe_input("lhs2", "lhsValue2|rhs1", BASE + 5)
        expected = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs1,rhsValue1)"}
        assert j.output() == expected
        j.check_store(expected)

        j.left.pipe_input("lhs2", None, BASE + 6)
        assert j.output() == {"lhs2": None}
        j.check_store({"lhs1": "(lhsValue1|rhs1,rhsValue1)"})

        # out-of-order left records (un-versioned: a new result)
        j.left.pipe_input("lhs1", "lhsValue1_ooo|rhs1", BASE + 2)
        j.left.pipe_input("lhs2", "lhsValue2_ooo|rhs1", BASE + 2)
        expected = {"lhs1": "(lhsValue1_ooo|rhs1,rhsValue1)", "lhs2": "(lhsValue2_ooo|rhs1,rhsValue1)"}
        assert j.output() == expected
        j.check_store(expected)

        # out-of-order left tombstone
        j.left.pipe_input("lhs1", None, BASE + 2)
        assert j.output() == {"lhs1": None}
        j.check_store({"lhs2": "(lhsValue2_ooo|rhs1,rhsValue1)"})

        j.left.pipe_input("lhs1", "lhsValue1_new|rhs1", BASE + 8)
        j.left.pipe_input("lhs2", "lhsValue2_new|rhs1", BASE + 8)
        expected = {"lhs1": "(lhsValue1_new|rhs1,rhsValue1)", "lhs2": "(lhsValue2_new|rhs1,rhsValue1)"}
        assert j.output() == expected
        j.check_store(expected)

        # out-of-order right record
        j.right.pipe_input("rhs1", "rhsValue1_ooo", BASE + 1)
        expected = {"lhs1": "(lhsValue1_new|rhs1,rhsValue1_ooo)", "lhs2": "(lhsValue2_new|rhs1,rhsValue1_ooo)"}
        assert j.output() == expected
        j.check_store(expected)

        # out-of-order right tombstone
        j.right.pipe_input("rhs1", None, BASE + 1)
        if lj:
            expected = {"lhs1": "(lhsValue1_new|rhs1,null)", "lhs2": "(lhsValue2_new|rhs1,null)"}
            assert j.output() == expected
            j.check_store(expected)
        else:
            assert j.output() == {"lhs1": None, "lhs2": None}
            j.check_store({})

        j.right.pipe_input("rhs1", "rhsValue1_new", BASE + 6)
        expected = {"lhs1": "(lhsValue1_new|rhs1,rhsValue1_new)", "lhs2": "(lhsValue2_new|rhs1,rhsValue1_new)"}
        assert j.output() == expected
        j.check_store(expected)


# ======================================================================================
# KTableKTableForeignKeyInnerJoinMultiIntegrationTest
# ======================================================================================

def test_inner_join_multi_partition_queryable():
    """KTableKTableForeignKeyInnerJoinMultiIntegrationTest.shouldInnerJoinMultiPartitionQueryable:
    table1 ⋈fk table2 ⋈fk table3, both results materialized without caching, one output
    record. Kafka's Float values become Double here (streamlib has no float serde; 1.33
    prints the same)."""
    builder = StreamsBuilder()
    D = Serdes.double()
    table1 = builder.table("table1", consumed=Consumed.with_(I, D))
    table2 = builder.table("table2", consumed=Consumed.with_(S, L))
    table3 = builder.table("table3", consumed=Consumed.with_(I, S))
    store1 = Materialized.as_("INNER-store1").with_key_serde(I).with_value_serde(S).with_caching_disabled()
    store2 = Materialized.as_("INNER-store2").with_key_serde(I).with_value_serde(S).with_caching_disabled()
    (table1.join(table2, lambda v1, v2: f"value1={v1},value2={v2}", materialized=store1,
                 foreign_key_extractor=lambda v: str(int(v)))
     .join(table3, lambda v1, v2: f"{v1},value3={v2}", materialized=store2,
           foreign_key_extractor=lambda v: 10 if "value2=10" in v else 0)
     .to_stream().to("output-", Produced.with_(I, S)))
    with driver_for(builder, cache_max_bytes=0) as driver:
        t1 = driver.create_input_topic("table1", I, D)
        t2 = driver.create_input_topic("table2", S, L)
        t3 = driver.create_input_topic("table3", I, S)
        out = driver.create_output_topic("output-", I, S)
        time = BASE
        for topic, rows in ((t1, [(1, 1.33), (2, 2.22), (3, -1.22), (4, -2.22)]),
                            (t2, [(str(k), k * 10) for k in range(10)]),
                            (t3, [(10, "waffle")])):
            for key, value in rows:           # produceKeyValuesSynchronously: MockTime, +1 ms each
                topic.pipe_input(key, value, time)
                time += 1
        assert set(out.read_key_values_to_list()) == {(1, "value1=1.33,value2=10,value3=waffle")}


# ======================================================================================
# KTableKTableForeignKeyJoinMaterializationIntegrationTest
# ======================================================================================

@pytest.mark.parametrize("materialized,queryable", [(False, False), (True, False), (True, True)])
def test_materialization_tombstone_when_deleting_non_joining_records(materialized, queryable):
    """KTableKTableForeignKeyJoinMaterializationIntegrationTest.shouldEmitTombstoneWhenDeletingNonJoiningRecords:
    an inner join emits an unnecessary tombstone for a key that never had a result.
    Adapted: with a queryable store, Kafka's test keeps the default caching, and its
    driver, which flushes the cache after every record, drops that tombstone (old and new
    both null); streamlib's driver emits every update without caching (API.md,
    "Testing"), so it emits it in every variant. A cached Spark run drops it too
    (``TableEmitter.flush``)."""
    builder = StreamsBuilder()
    left = builder.table(LEFT_TABLE, consumed=Consumed.with_(S, S))
    right = builder.table(RIGHT_TABLE, consumed=Consumed.with_(S, S))
    store = Materialized.as_("store").with_value_serde(S) if queryable else Materialized.with_(None, S)
    result = left.join(right, joiner, materialized=store if materialized else None,
                       foreign_key_extractor=split_extractor)
    result.to_stream().to(OUTPUT, Produced.with_(None, S))
    with driver_for(builder) as driver:
        lhs = driver.create_input_topic(LEFT_TABLE, S, S)
        out = driver.create_output_topic(OUTPUT, S, S)

        def store_map():
            return dict(driver.get_key_value_store("store").all())

        lhs.pipe_input("lhs1", "lhsValue1|rhs1")
        assert out.read_key_values_to_map() == {}
        if materialized and queryable:
            assert store_map() == {}
        lhs.pipe_input("lhs1", None)
        assert out.read_key_values_to_map() == {"lhs1": None}
        if materialized and queryable:
            assert store_map() == {}
        lhs.pipe_input("lhs1", None)
        assert out.read_key_values_to_map() == {}
        if materialized and queryable:
            assert store_map() == {}


# ======================================================================================
# KStreamGlobalKTableLeftJoinTest (methods not in test_kstream_global_ktable_join.py)
# ======================================================================================

class GlobalLeftJoin:
    """KStreamGlobalKTableLeftJoinTest's topology and input topics: the stream's values
    are "X0,FKey0" (the global key after the comma, or none); both input topics
    auto-advance their timestamps by 1 ms from 0."""

    KEYS = (0, 1, 2, 3)

    def __init__(self, left: bool = True):
        builder = StreamsBuilder()
        stream = builder.stream("streamTopic", consumed=Consumed.with_(I, S))
        table = builder.global_table("globalTableTopic", consumed=Consumed.with_(S, S))

        def key_mapper(key, value):
            tokens = value.split(",")
            return tokens[1] if len(tokens) > 1 else None

        (stream.left_join if left else stream.join)(table, key_mapper, tostring_joiner).to(
            "out", Produced.with_(I, S))
        self.topology = builder.build()
        self._cm = driver_for(self.topology, default_key_serde=I, default_value_serde=S)
        self.driver = self._cm.__enter__()
        self.stream = self.driver.create_input_topic("streamTopic", I, S)
        self.table = self.driver.create_input_topic("globalTableTopic", S, S)
        self.out = self.driver.create_output_topic("out", I, S)
        self.stream_time = 0
        self.table_time = 0

    def push_stream(self, count, prefix, include_fk=True, include_null_key=False):
        for i in range(count):
            value = f"{prefix}{self.KEYS[i]}" + (f",FKey{self.KEYS[i]}" if include_fk else "")
            key = None if include_null_key and i == 0 else self.KEYS[i]
            self.stream.pipe_input(key, value, self.stream_time)
            self.stream_time += 1

    def push_table(self, count, prefix):
        for i in range(count):
            self.table.pipe_input(f"FKey{self.KEYS[i]}", f"{prefix}{self.KEYS[i]}", self.table_time)
            self.table_time += 1

    def push_table_nulls(self, count):
        for i in range(count):
            self.table.pipe_input(f"FKey{self.KEYS[i]}", None, self.table_time)
            self.table_time += 1

    def take(self):
        return kvt(self.out.read_records_to_list())


@pytest.fixture
def gleft():
    g = GlobalLeftJoin()
    yield g
    g._cm.__exit__(None, None, None)


def test_global_left_join_should_not_require_copartitioning(gleft):
    """KStreamGlobalKTableLeftJoinTest.shouldNotRequireCopartitioning: one sub-topology
    reading only the stream; the global table is no task's input and nothing is
    repartitioned."""
    assert len(gleft.topology.subtopologies) == 1
    assert gleft.topology.source_topics() == ["streamTopic"]
    assert "repartition" not in gleft.topology.describe()


def test_global_left_join_regardless_if_match_found(gleft):
    """KStreamGlobalKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates."""
    gleft.push_table(2, "Y")
    assert gleft.take() == []
    gleft.push_stream(4, "X")
    assert gleft.take() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1),
                            (2, "X2,FKey2+null", 2), (3, "X3,FKey3+null", 3)]


def test_global_left_join_clears_entry_on_null_value_updates(gleft):
    """KStreamGlobalKTableLeftJoinTest.shouldClearGlobalTableEntryOnNullValueUpdates."""
    gleft.push_table(4, "Y")
    assert gleft.take() == []
    gleft.push_stream(4, "X")
    assert gleft.take() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1),
                            (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]
    gleft.push_table_nulls(2)
    assert gleft.take() == []
    gleft.push_stream(4, "XX")
    assert gleft.take() == [(0, "XX0,FKey0+null", 4), (1, "XX1,FKey1+null", 5),
                            (2, "XX2,FKey2+Y2", 6), (3, "XX3,FKey3+Y3", 7)]


def test_global_left_join_on_null_key_with_non_null_key_mapper_values(gleft):
    """KStreamGlobalKTableLeftJoinTest.shouldJoinOnNullKeyWithNonNullKeyMapperValues."""
    gleft.push_table(4, "Y")
    assert gleft.take() == []
    gleft.push_stream(4, "X", include_null_key=True)
    assert gleft.take() == [(None, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1),
                            (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]


def test_global_left_join_on_global_table_updates_with_more_rows(gleft):
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnGlobalTableUpdates, its last two
    steps (not in test_kstream_global_ktable_join.py): updates of all four rows emit
    nothing, the next four stream records meet them."""
    gleft.push_stream(2, "X")
    assert gleft.take() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]
    gleft.push_table(2, "Y")
    assert gleft.take() == []
    gleft.push_stream(4, "X")
    assert gleft.take() == [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3),
                            (2, "X2,FKey2+null", 4), (3, "X3,FKey3+null", 5)]
    gleft.push_table(4, "YY")
    assert gleft.take() == []
    gleft.push_stream(4, "X")
    assert gleft.take() == [(0, "X0,FKey0+YY0", 6), (1, "X1,FKey1+YY1", 7),
                            (2, "X2,FKey2+YY2", 8), (3, "X3,FKey3+YY3", 9)]
    gleft.push_table(4, "YYY")
    assert gleft.take() == []


# ======================================================================================
# GlobalKTableJoinsTest
# ======================================================================================

@pytest.mark.parametrize("left,expected", [
    (True, {"1": ("a+A", 2), "2": ("b+B", 10), "3": ("c+null", 3)}),
    (False, {"1": ("a+A", 2), "2": ("b+B", 10)}),
], ids=["shouldLeftJoinWithStream", "shouldInnerJoinWithStream"])
def test_global_ktable_joins(left, expected):
    """GlobalKTableJoinsTest.shouldLeftJoinWithStream / shouldInnerJoinWithStream: the last
    value and timestamp per key (the stream record's timestamp)."""
    builder = StreamsBuilder()
    consumed = Consumed.with_(S, S)
    table = builder.global_table("global", consumed=consumed)
    stream = builder.stream("stream", consumed=consumed)
    (stream.left_join if left else stream.join)(table, lambda k, v: v, tostring_joiner).to(
        "out", Produced.with_(S, S))
    with driver_for(builder) as driver:
        g = driver.create_input_topic("global", S, S)
        g.pipe_input("a", "A", 1)
        g.pipe_input("b", "B", 5)
        s = driver.create_input_topic("stream", S, S)
        s.pipe_input("1", "a", 2)
        s.pipe_input("2", "b", 10)
        s.pipe_input("3", "c", 3)
        last = {r.key: (r.value, r.timestamp) for r in driver.create_output_topic("out", S, S)
                .read_records_to_list()}
        assert last == expected


# ======================================================================================
# GlobalKTableIntegrationTest and GlobalKTableEOSIntegrationTest
# ======================================================================================

GLOBAL_STORE = "globalStore"


class GlobalIntegration:
    """Both classes' fixture: a global table of Long → String in "globalStore" and a
    stream of String → Long joined to it with ``(k, v) -> v`` and ``v1 + "+" + v2``.
    Records are produced with MockTime: ``now`` and then +1 ms each."""

    def __init__(self, left: bool, guarantee: str = "at_least_once", join: bool = True):
        builder = StreamsBuilder()
        table = builder.global_table("globalTable", consumed=Consumed.with_(L, S),
                                     materialized=Materialized.as_(GLOBAL_STORE)
                                     .with_key_serde(L).with_value_serde(S))
        if join:
            stream = builder.stream("stream", consumed=Consumed.with_(S, L))
            (stream.left_join if left else stream.join)(
                table, lambda k, v: v, lambda v1, v2: f"{v1}+{'null' if v2 is None else v2}").to(
                "out", Produced.with_(S, S))
        self._cm = driver_for(builder, cache_max_bytes=0, processing_guarantee=guarantee)
        self.driver = self._cm.__enter__()
        self.table = self.driver.create_input_topic("globalTable", L, S)
        self.stream = self.driver.create_input_topic("stream", S, L) if join else None
        self.out = self.driver.create_output_topic("out", S, S)
        self.now = BASE
        self.last = {}

    def produce(self, topic, rows):
        for key, value in rows:
            topic.pipe_input(key, value, self.now)
            self.now += 1

    def produce_initial_global_table_values(self):
        self.produce(self.table, [(1, "A"), (2, "B"), (3, "C"), (4, "D")])

    def produce_global_table_values(self):
        self.produce(self.table, [(1, "F"), (2, "G"), (3, "H"), (4, "I"), (5, "J")])

    def produce_topic_values(self):
        self.produce(self.stream, [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)])

    def last_value_and_timestamp_per_key(self) -> dict:
        """MockApiProcessor.lastValueAndTimestampPerKey over everything emitted so far."""
        for r in self.out.read_records_to_list():
            self.last[r.key] = (r.value, r.timestamp)
        return dict(self.last)

    def store(self):
        return self.driver.get_key_value_store(GLOBAL_STORE)

    def close(self):
        self._cm.__exit__(None, None, None)


@pytest.mark.parametrize("left", [True, False], ids=["shouldKStreamGlobalKTableLeftJoin",
                                                     "shouldKStreamGlobalKTableJoin"])
def test_global_ktable_integration_join(left):
    """GlobalKTableIntegrationTest.shouldKStreamGlobalKTableLeftJoin / shouldKStreamGlobalKTableJoin:
    the last value and timestamp per key, the replicated store's contents and the
    timestamp it keeps for key 5."""
    g = GlobalIntegration(left)
    try:
        g.produce_initial_global_table_values()
        first = g.now
        g.produce_topic_values()
        expected = {"a": ("1+A", first), "b": ("2+B", first + 1), "c": ("3+C", first + 2),
                    "d": ("4+D", first + 3)}
        if left:
            expected["e"] = ("5+null", first + 4)
        assert g.last_value_and_timestamp_per_key() == expected

        first = g.now
        g.produce_global_table_values()
        assert dict(g.store().all()) == {1: "F", 2: "G", 3: "H", 4: "I", 5: "J"}
        assert g.store().get_with_timestamp(5) == ("J", first + 4)

        first = g.now
        g.produce_topic_values()
        expected.update({"a": ("1+F", first), "b": ("2+G", first + 1), "c": ("3+H", first + 2),
                         "d": ("4+I", first + 3), "e": ("5+J", first + 4)})
        assert g.last_value_and_timestamp_per_key() == expected
    finally:
        g.close()


def test_global_ktable_store_entries():
    """GlobalKTableIntegrationTest.shouldRestoreGlobalInMemoryKTableOnRestart, before its
    restart (which needs a running application): the global store, read as a plain and
    as a timestamped store, holds the four records."""
    g = GlobalIntegration(left=False, join=False)
    try:
        g.produce_initial_global_table_values()
        assert g.store().approximate_num_entries() == 4
        assert [g.store().get_with_timestamp(k) for k in (1, 2, 3, 4)] == [
            ("A", BASE), ("B", BASE + 1), ("C", BASE + 2), ("D", BASE + 3)]
    finally:
        g.close()


def test_global_ktable_only_global_topology():
    """GlobalKTableIntegrationTest.shouldGetToRunningWithOnlyGlobalTopology: a topology
    with nothing but a global table builds and runs (and its store fills)."""
    g = GlobalIntegration(left=False, join=False)
    try:
        assert g.driver.topology.source_topics() == []
        g.produce(g.table, [(1, "A")])
        assert dict(g.store().all()) == {1: "A"}
    finally:
        g.close()


@pytest.mark.parametrize("left", [True, False], ids=["shouldKStreamGlobalKTableLeftJoin",
                                                     "shouldKStreamGlobalKTableJoin"])
def test_global_ktable_eos_join(left):
    """GlobalKTableEOSIntegrationTest.shouldKStreamGlobalKTableLeftJoin / shouldKStreamGlobalKTableJoin
    (exactly_once): the latest joined value per key (Kafka's foreach into a map) and the
    replicated store's contents."""
    g = GlobalIntegration(left, guarantee="exactly_once")
    try:
        g.produce_initial_global_table_values()
        g.produce_topic_values()
        results = {}
        for key, value in g.out.read_key_values_to_list():
            results[key] = value
        expected = {"a": "1+A", "b": "2+B", "c": "3+C", "d": "4+D"}
        if left:
            expected["e"] = "5+null"
        assert results == expected

        g.produce_global_table_values()
        assert dict(g.store().all()) == {1: "F", 2: "G", 3: "H", 4: "I", 5: "J"}

        g.produce_topic_values()
        for key, value in g.out.read_key_values_to_list():
            results[key] = value
        assert results == {"a": "1+F", "b": "2+G", "c": "3+H", "d": "4+I", "e": "5+J"}
    finally:
        g.close()


def test_global_ktable_eos_restore_transactional_messages():
    """GlobalKTableEOSIntegrationTest.shouldRestoreTransactionalMessages: the committed
    records (produced in a transaction) fill the global store (exactly_once)."""
    g = GlobalIntegration(left=False, guarantee="exactly_once", join=False)
    try:
        g.produce_initial_global_table_values()
        assert dict(g.store().all()) == {1: "A", 2: "B", 3: "C", 4: "D"}
    finally:
        g.close()
