"""KStream.to_table and KStream.repartition (after KStreamToTableTest, KStreamRepartitionTest)."""
from streamlib import Consumed, Materialized, Produced, Repartitioned, StreamsBuilder

from streams_helpers import APP, I, S, driver_for, kvt


def test_to_table_forwards_every_update_and_materializes_the_latest_value():
    builder = StreamsBuilder()
    table = builder.stream("in", consumed=Consumed.with_(S, S)).to_table(Materialized.as_("latest"))
    assert table.query_name == "latest"
    table.to_stream().to("out")
    with driver_for(builder) as driver:
        inp = driver.create_input_topic("in", S, S)
        for k, v, ts in [("a", "1", 10), ("b", "2", 20), ("a", "3", 5), ("b", None, 30), (None, "x", 40)]:
            inp.pipe_input(k, v, ts)
        out = kvt(driver.create_output_topic("out", S, S).read_records_to_list())
        assert out == [("a", "1", 10), ("b", "2", 20), ("a", "3", 5), ("b", None, 30)]
        assert list(driver.get_key_value_store("latest").all()) == [("a", "3")]
        assert driver.metrics()["dropped_records"] == 1


def test_to_table_after_a_key_change_repartitions():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v[:1]) \
        .to_table(Materialized.as_("by-initial"))
    topology = builder.build()
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("1", "apple"), ("2", "avocado"), ("3", "kiwi")])
        assert list(driver.get_key_value_store("by-initial").all()) == [("a", "avocado"), ("k", "kiwi")]


def test_to_table_without_key_change_stays_in_one_subtopology():
    builder = StreamsBuilder()
    builder.stream("in").map_values(str.upper).to_table()
    assert len(builder.build().subtopologies) == 1


def test_repartition_passes_records_through_unchanged():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, I)).repartition() \
        .to("out", produced=Produced.with_(S, I))
    topology = builder.build()
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        inp = driver.create_input_topic("in", S, I)
        inp.pipe_input("a", 1, 5, headers={"h": b"v"})
        inp.pipe_input(None, 2, 3)
        inp.pipe_input("b", None, 9)
        out = driver.create_output_topic("out", S, I).read_records_to_list()
    assert kvt(out) == [("a", 1, 5), (None, 2, 3), ("b", None, 9)]
    assert out[0].headers == {"h": b"v"}


def test_named_repartition_topic_and_partition_count():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)) \
        .repartition(Repartitioned.as_("shuffle").with_num_partitions(4)).to("out")
    topology = builder.build()
    text = topology.describe(APP)
    assert f"Sink: shuffle-sink (topic: {APP}-shuffle-repartition)" in text
    assert f"Source: shuffle-source (topics: [{APP}-shuffle-repartition])" in text
    source = topology.nodes["shuffle-source"]
    assert source.params.num_partitions == 4
    assert topology.subtopologies[1].repartition_inputs == ["shuffle-repartition"]


def test_group_by_key_after_repartition_does_not_repartition_again():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v) \
        .repartition(Repartitioned.as_("r")).group_by_key().count(materialized=Materialized.as_("c"))
    topology = builder.build()
    assert len(topology.subtopologies) == 2
    with driver_for(topology) as driver:
        driver.create_input_topic("in", S, S).pipe_key_value_list([("1", "x"), ("2", "x"), ("3", "y")])
        assert list(driver.get_key_value_store("c").all()) == [("x", 2), ("y", 1)]


def test_repartition_with_serdes():
    builder = StreamsBuilder()
    builder.stream("in", consumed=Consumed.with_(S, S)).map_values(int) \
        .repartition(Repartitioned.with_(S, I, name="ints")).map_values(lambda v: v + 1) \
        .to("out", produced=Produced.with_(S, I))
    with driver_for(builder) as driver:
        driver.create_input_topic("in", S, S).pipe_input("k", "41", 1)
        assert driver.create_output_topic("out", S, I).read_key_values_to_list() == [("k", 42)]
