"""Topology.describe(), sub-topology split, stores and changelogs, build-time errors
(after Kafka Streams' TopologyTest / StreamsBuilderTest)."""
import pytest

from streamlib import Consumed, Grouped, Materialized, StreamsBuilder, TopologyError
from streamlib.node_params import MapperParams, NoParams, SinkParams, SourceParams
from streamlib.topology import Node, StoreDef, Topology

from streams_helpers import APP, S


def test_stateless_topology_is_one_subtopology_in_kafka_layout():
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda k, v: True).map_values(str.upper).to("out")
    topology = builder.build()
    assert topology.describe(APP) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n"
        "      --> KSTREAM-FILTER-0000000001\n"
        "      <-- none\n"
        "    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n"
        "      --> KSTREAM-MAPVALUES-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000003\n"
        "      <-- KSTREAM-FILTER-0000000001\n"
        "    Sink: KSTREAM-SINK-0000000003 (topic: out)\n"
        "      --> none\n"
        "      <-- KSTREAM-MAPVALUES-0000000002\n")
    assert topology.source_topics() == ["in"] and topology.sink_topics() == ["out"]
    assert not topology.subtopologies[0].stateful


def test_wordcount_splits_at_the_repartition_and_names_the_changelog():
    builder = StreamsBuilder()
    builder.stream("lines", consumed=Consumed.with_(S, S)).flat_map_values(str.split) \
        .group_by(lambda k, w: w, Grouped.as_("words")) \
        .count(materialized=Materialized.as_("counts")).to_stream().to("out")
    topology = builder.build()
    first, second = topology.subtopologies
    assert first.source_topics == ["lines"] and first.repartition_inputs == [] and first.stores == []
    assert second.source_topics == [] and second.repartition_inputs == ["words-repartition"]
    assert second.stores == ["counts"] and second.stateful
    text = topology.describe(APP)
    assert "   Sub-topology: 0\n" in text and "   Sub-topology: 1\n" in text
    sub0, sub1 = text.split("   Sub-topology: 1\n")
    assert f"Sink: words-sink (topic: {APP}-words-repartition)" in sub0
    assert f"Source: words-source (topics: [{APP}-words-repartition])" in sub1
    assert "(stores: [counts])" in sub1
    assert f"Changelog: {APP}-counts-changelog (store: counts)" in sub1
    assert "changelog" not in sub0.lower()
    assert topology.source_topics() == ["lines"]
    assert topology.subtopology_for_input("words-repartition") == [second]


def test_internal_store_names_are_generated_and_logged():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count()
    topology = builder.build()
    (store,) = topology.stores
    assert store.startswith("KSTREAM-AGGREGATE-STATE-STORE-")
    assert f"Changelog: {APP}-{store}-changelog (store: {store})" in topology.describe(APP)


def test_logging_disabled_store_has_no_changelog():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(materialized=Materialized.as_("quiet").with_logging_disabled())
    topology = builder.build()
    assert "quiet" in topology.stores
    assert "Changelog" not in topology.describe(APP)


def test_independent_streams_are_separate_subtopologies_and_merge_joins_them():
    builder = StreamsBuilder()
    builder.stream("a").to("x")
    builder.stream("b").to("y")
    assert len(builder.build().subtopologies) == 2
    builder = StreamsBuilder()
    builder.stream("a").merge(builder.stream("b")).to("x")
    assert len(builder.build().subtopologies) == 1


def test_table_regrouping_has_two_subtopologies_with_one_store_each():
    builder = StreamsBuilder()
    builder.table("t", materialized=Materialized.as_("src")).group_by(lambda k, v: (v, k)) \
        .count(materialized=Materialized.as_("cnt"))
    topology = builder.build()
    assert [s.stores for s in topology.subtopologies] == [["src"], ["cnt"]]
    text = topology.describe(APP)
    assert f"{APP}-src-changelog" in text and f"{APP}-cnt-changelog" in text


def test_describe_without_application_id_uses_a_placeholder():
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(materialized=Materialized.as_("c"))
    assert "Changelog: <application_id>-c-changelog (store: c)" in builder.build().describe()


def test_store_name_used_twice_fails_no_later_than_build():
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match="'counts'"):
        builder.stream("a").group_by_key().count(materialized=Materialized.as_("counts"))
        builder.stream("b").group_by_key().count(materialized=Materialized.as_("counts"))
        builder.build()


def test_reading_a_topic_twice_fails():
    builder = StreamsBuilder()
    builder.stream("a")
    with pytest.raises(TopologyError, match="'a'"):
        builder.stream(["b", "a"])
        builder.build()


def test_repartition_name_used_twice_fails():
    builder = StreamsBuilder()
    s = builder.stream("a")
    with pytest.raises(TopologyError, match="'r'"):
        s.group_by(lambda k, v: v, Grouped.as_("r")).count()
        s.group_by(lambda k, v: k, Grouped.as_("r")).count()
        builder.build()


def test_a_step_after_a_sink_is_rejected_naming_the_node():
    nodes = {
        "src": Node("src", "source", [], SourceParams(topics=["in"])),
        "sink": Node("sink", "sink", ["src"], SinkParams(topic="out")),
        "after": Node("after", "map_values", ["sink"], MapperParams(mapper=str)),
    }
    with pytest.raises(TopologyError, match="after.*sink"):
        Topology(nodes, {})
    assert StreamsBuilder().stream("in").to("out") is None  # the DSL offers no step after to()


def test_unknown_store_and_unknown_parent_are_rejected():
    with pytest.raises(TopologyError, match="unknown store 'nope'"):
        Topology({"src": Node("src", "source", [], SourceParams(topics=["in"])),
                  "agg": Node("agg", "aggregate", ["src"], NoParams(), ("nope",))}, {})
    with pytest.raises(TopologyError, match="unknown parent"):
        Topology({"x": Node("x", "filter", ["ghost"])}, {"s": StoreDef("s")})



def test_params_of_another_kind_are_rejected_naming_the_node():
    with pytest.raises(TopologyError, match="src: a source node takes SourceParams, not SinkParams"):
        Topology({"src": Node("src", "source", [], SinkParams(topic="in"))}, {})


def test_duplicate_processor_name_fails():
    builder = StreamsBuilder()
    s = builder.stream("in")
    s.filter(lambda k, v: True, name="f")
    with pytest.raises(TopologyError, match="'f'"):
        s.map_values(str, name="f")
