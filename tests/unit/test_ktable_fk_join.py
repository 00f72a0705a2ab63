"""Foreign-key table–table joins, ported from Kafka Streams'
KTableKTableForeignKeyJoinIntegrationTest (run there under TopologyTestDriver) and
KTableKTableForeignKeyJoinScenarioTest."""
from __future__ import annotations

import pytest

from streamlib import Consumed, Materialized, Produced, StreamsBuilder
from streamlib.node_kinds import FK_RESPONSE_JOIN

from streams_helpers import I, S, driver_for


def joiner(left, right) -> str:
    """Kafka's test joiner ``"(" + value1 + "," + value2 + ")"``."""
    return f"({left},{'null' if right is None else right})"


def extractor(value: str):
    return value.split("|")[1]


class FkJoin:
    """left ⋈ right on ``extractor(left value)`` into topic "output", result store "store"."""

    def __init__(self, left_join: bool, extract=extractor):
        builder = StreamsBuilder()
        left = builder.table("left_table", consumed=Consumed.with_(S, S))
        right = builder.table("right_table", consumed=Consumed.with_(S, S))
        how = left.left_join if left_join else left.join
        how(right, joiner, materialized=Materialized.as_("store"),
            foreign_key_extractor=extract).to_stream().to("output", Produced.with_(S, S))
        self.topology = builder.build()
        self._cm = driver_for(self.topology)
        self.driver = self._cm.__enter__()
        self.left = self.driver.create_input_topic("left_table", S, S)
        self.right = self.driver.create_input_topic("right_table", S, S)
        self.out = self.driver.create_output_topic("output", S, S)

    def output(self) -> dict:
        return self.out.read_key_values_to_map()

    def store(self) -> dict:
        return dict(self.driver.get_key_value_store("store").all())


@pytest.fixture(params=[False, True], ids=["inner", "left"])
def join(request):
    fk = FkJoin(request.param)
    fk.left_join = request.param
    yield fk
    fk._cm.__exit__(None, None, None)


def test_join_from_left_then_delete_left_entity(join):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromLeftThenDeleteLeftEntity."""
    join.right.pipe_input("rhs1", "rhsValue1", 0)
    join.right.pipe_input("rhs2", "rhsValue2", 1)
    join.right.pipe_input("rhs3", "rhsValue3", 2)
    assert join.output() == {} and join.store() == {}
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 3)
    join.left.pipe_input("lhs2", "lhsValue2|rhs2", 4)
    expected = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
    assert join.output() == expected and join.store() == expected
    join.left.pipe_input("lhs3", "lhsValue3|rhs1", 5)
    assert join.output() == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
    join.left.pipe_input("lhs1", None, 6)
    assert join.output() == {"lhs1": None}
    assert join.store() == {"lhs2": "(lhsValue2|rhs2,rhsValue2)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}


def test_join_from_right_then_delete_right_entity(join):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromRightThenDeleteRightEntity."""
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 0)
    join.left.pipe_input("lhs2", "lhsValue2|rhs2", 1)
    join.left.pipe_input("lhs3", "lhsValue3|rhs1", 2)
    half = {"lhs1": "(lhsValue1|rhs1,null)", "lhs2": "(lhsValue2|rhs2,null)", "lhs3": "(lhsValue3|rhs1,null)"}
    assert join.output() == (half if join.left_join else {})
    join.right.pipe_input("rhs1", "rhsValue1", 3)
    assert join.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}
    join.right.pipe_input("rhs2", "rhsValue2", 4)
    assert join.output() == {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
    join.right.pipe_input("rhs3", "rhsValue3", 5)
    assert join.output() == {}
    join.right.pipe_input("rhs1", None, 6)
    if join.left_join:
        assert join.output() == {"lhs1": "(lhsValue1|rhs1,null)", "lhs3": "(lhsValue3|rhs1,null)"}
        assert join.store() == {"lhs1": "(lhsValue1|rhs1,null)", "lhs2": "(lhsValue2|rhs2,rhsValue2)",
                                "lhs3": "(lhsValue3|rhs1,null)"}
    else:
        assert join.output() == {"lhs1": None, "lhs3": None}
        assert join.store() == {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}


def test_emit_tombstone_when_deleting_non_joining_records(join):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitTombstoneWhenDeletingNonJoiningRecords."""
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 0)
    assert join.output() == ({"lhs1": "(lhsValue1|rhs1,null)"} if join.left_join else {})
    join.left.pipe_input("lhs1", None, 1)
    assert join.output() == {"lhs1": None} and join.store() == {}
    join.left.pipe_input("lhs1", None, 2)
    assert join.output() == {}


def test_no_tombstones_when_deleting_non_existing_records(join):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldNotEmitTombstonesWhenDeletingNonExistingRecords."""
    join.left.pipe_input("lhs1", None, 0)
    assert join.output() == {} and join.store() == {}


def test_nulls_when_value_has_non_matching_foreign_key(join):
    """KTableKTableForeignKeyJoinIntegrationTest.joinShouldProduceNullsWhenValueHasNonMatchingForeignKey."""
    lj = join.left_join
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 0)
    assert join.output() == ({"lhs1": "(lhsValue1|rhs1,null)"} if lj else {})
    join.left.pipe_input("lhs1", "lhsValue1|rhs2", 1)
    assert join.output() == {"lhs1": "(lhsValue1|rhs2,null)" if lj else None}
    join.left.pipe_input("lhs1", "lhsValue1|rhs3", 2)
    assert join.output() == {"lhs1": "(lhsValue1|rhs3,null)" if lj else None}
    join.right.pipe_input("rhs1", "rhsValue1", 3)
    assert join.output() == {}
    assert join.store() == ({"lhs1": "(lhsValue1|rhs3,null)"} if lj else {})
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 4)
    assert join.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
    join.left.pipe_input("lhs1", "lhsValue1|rhs2", 5)
    assert join.output() == {"lhs1": "(lhsValue1|rhs2,null)" if lj else None}


def test_unsubscribe_old_foreign_key_if_left_side_is_updated(join):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated."""
    join.right.pipe_input("rhs1", "rhsValue1", 0)
    join.right.pipe_input("rhs2", "rhsValue2", 1)
    join.left.pipe_input("lhs1", "lhsValue1|rhs1", 2)
    assert join.output() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
    join.left.pipe_input("lhs1", "lhsValue1|rhs2", 3)
    assert join.output() == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}
    join.right.pipe_input("rhs1", "rhsValue1Delta", 4)
    assert join.output() == {}
    assert join.store() == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}


def test_emit_record_on_null_foreign_key_for_left_joins():
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordOnNullForeignKeyForLeftJoins;
    an inner join drops such a record."""
    for left_join, expected in ((True, {"lhs1": "(lhsValue1|rhs1,null)"}), (False, {})):
        fk = FkJoin(left_join, extract=lambda v: None)
        try:
            fk.right.pipe_input("rhs1", "rhsValue1", 0)
            fk.left.pipe_input("lhs1", "lhsValue1|rhs1", 1)
            assert fk.output() == expected
        finally:
            fk._cm.__exit__(None, None, None)


def test_foreign_key_becoming_none_unsubscribes_and_deletes_the_result():
    """Kafka 4.x's SubscriptionSendProcessor: an inner join whose left row's foreign key
    turns None unsubscribes from the old foreign key with DELETE_KEY_AND_PROPAGATE, so
    the result is deleted at once, and a later change of the old right row emits
    nothing (Kafka 3.x sent no unsubscribe here; the oracle pins 4.3.1)."""
    fk = FkJoin(False, extract=lambda v: v.split("|")[1] or None)
    try:
        fk.right.pipe_input("rhs1", "r1", 0)
        fk.left.pipe_input("lhs1", "v1|rhs1", 1)
        assert fk.output() == {"lhs1": "(v1|rhs1,r1)"}
        fk.left.pipe_input("lhs1", "v2|", 2)
        assert fk.output() == {"lhs1": None}
        fk.right.pipe_input("rhs1", "r1-new", 3)
        assert fk.output() == {}
        assert fk.driver.metrics()["dropped_records"] >= 1
    finally:
        fk._cm.__exit__(None, None, None)


def test_scenario_default_serdes_and_result_timestamp():
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultSerdes (a join result
    re-joined with its own left side), plus the result timestamp: the larger of both rows'."""
    builder = StreamsBuilder()
    a = builder.table("A")
    b = builder.table("B")
    joined = a.join(b, lambda v1, v2: f"({v1},{v2})", foreign_key_extractor=lambda v: int(v.split("-")[0]))
    a.join(joined, lambda v1, v2: f"({v1},{v2})").to_stream().to("output")
    with driver_for(builder, default_key_serde=I, default_value_serde=S) as driver:
        driver.create_input_topic("A", I, S).pipe_input(1, "999-alpha", 5)
        driver.create_input_topic("B", I, S).pipe_input(999, "beta", 7)
        out = driver.create_output_topic("output", I, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [(1, "(999-alpha,(999-alpha,beta))", 7)]


def test_describe_shows_the_subscription_and_response_topics():
    fk = FkJoin(False)
    try:
        text = fk.topology.describe()
        for part in ("SUBSCRIPTION-REGISTRATION", "SUBSCRIPTION-RESPONSE", "LEFT-VALUES"):
            assert f"KTABLE-FK-JOIN-{part}" in text
        assert len(fk.topology.subtopologies) == 3   # left, right, result
    finally:
        fk._cm.__exit__(None, None, None)


def fk_inputs(topology) -> list:
    """``Topology.fk_self_join_inputs`` of the topology's response join."""
    return [topology.fk_self_join_inputs(n.name) for n in topology if n.kind == FK_RESPONSE_JOIN.name]


def test_a_self_join_takes_its_left_values_and_answers_as_one_sequence():
    """A table joined with itself: one sub-topology writes the left values and the answers,
    so the result's task takes them in the order sent; two tables: each by timestamp."""
    fk = FkJoin(False)
    try:
        assert fk_inputs(fk.topology) == [None]
        assert fk.topology.fk_left_value_topics() == {
            t for t in fk.topology.subtopologies[2].repartition_inputs if "LEFT-VALUES" in t}
    finally:
        fk._cm.__exit__(None, None, None)
    builder = StreamsBuilder()
    table = builder.table("t", consumed=Consumed.with_(S, S))
    table.join(table.map_values(str.upper), joiner, foreign_key_extractor=lambda v: v).to_stream().to("out")
    topology = builder.build()
    [inputs] = fk_inputs(topology)
    result = next(sub for sub in topology.subtopologies if set(sub.repartition_inputs) == inputs)
    assert len(inputs) == 2 and all("LEFT-VALUES" in t or "RESPONSE" in t for t in inputs)
    assert not set(result.source_topics)
