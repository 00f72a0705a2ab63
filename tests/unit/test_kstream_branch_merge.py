"""split()/branch and merge (after KStreamBranchTest, KStreamSplitTest, KStreamMergeTest)."""
import pytest

from streamlib import Consumed, Produced, StreamsBuilder, TopologyError

from streams_helpers import I, S, driver_for, kvt


def is_even(k, v):
    return k % 2 == 0


def is_multiple_of_three(k, v):
    return k % 3 == 0


def is_odd(k, v):
    return k % 2 != 0


def _pipe_keys(driver, keys, topic="in"):
    inp = driver.create_input_topic(topic, I, S)
    for k in keys:
        inp.pipe_input(k, f"V{k}", timestamp=k)


def test_each_record_goes_to_the_first_matching_branch_only():
    builder = StreamsBuilder()
    branches = builder.stream("in", consumed=Consumed.with_(I, S)).split() \
        .branch(is_even).branch(is_multiple_of_three).branch(is_odd).no_default_branch()
    assert sorted(branches) == ["1", "2", "3"]
    for name, stream in branches.items():
        stream.to(f"out-{name}", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        _pipe_keys(driver, [1, 2, 3, 4, 5, 6])
        got = {n: [r.key for r in driver.create_output_topic(f"out-{n}", I, S).read_records_to_list()]
               for n in branches}
    assert got == {"1": [2, 4, 6], "2": [3], "3": [1, 5]}


def test_named_branches_and_default_branch():
    builder = StreamsBuilder()
    branches = builder.stream("in", consumed=Consumed.with_(I, S)).split(name="split-") \
        .branch(lambda k, v: k == 1, name="one") \
        .branch(lambda k, v: k == 2, name="two") \
        .default_branch(name="rest")
    assert set(branches) == {"split-one", "split-two", "split-rest"}
    for name, stream in branches.items():
        stream.to(name, produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        _pipe_keys(driver, [1, 2, 3, 1, 4])
        got = {n: kvt(driver.create_output_topic(n, I, S).read_records_to_list()) for n in branches}
    assert got == {"split-one": [(1, "V1", 1), (1, "V1", 1)], "split-two": [(2, "V2", 2)],
                   "split-rest": [(3, "V3", 3), (4, "V4", 4)]}


def test_unnamed_default_branch_is_named_zero_and_unmatched_records_without_default_are_dropped():
    builder = StreamsBuilder()
    with_default = builder.stream("a", consumed=Consumed.with_(I, S)).split().branch(is_even).default_branch()
    assert set(with_default) == {"1", "0"}
    without = builder.stream("b", consumed=Consumed.with_(I, S)).split(name="b").branch(is_even) \
        .no_default_branch()
    without["b1"].to("even-b", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        _pipe_keys(driver, [1, 2, 3], topic="b")
        assert [r.key for r in driver.create_output_topic("even-b", I, S).read_records_to_list()] == [2]


def test_duplicate_branch_names_are_rejected():
    builder = StreamsBuilder()
    with pytest.raises(TopologyError):
        builder.stream("in").split().branch(is_even, name="x").branch(is_odd, name="x").no_default_branch()


def test_branches_can_be_processed_further_and_merged_back():
    builder = StreamsBuilder()
    b = builder.stream("in", consumed=Consumed.with_(I, S)).split() \
        .branch(is_even, name="even").default_branch(name="odd")
    b["even"].map_values(str.lower).merge(b["odd"]).to("out", produced=Produced.with_(I, S))
    with driver_for(builder) as driver:
        _pipe_keys(driver, [1, 2, 3, 4])
        out = driver.create_output_topic("out", I, S).read_records_to_list()
    assert kvt(out) == [(1, "V1", 1), (2, "v2", 2), (3, "V3", 3), (4, "v4", 4)]


def test_merge_interleaves_records_in_processing_order():
    builder = StreamsBuilder()
    s1 = builder.stream("t1", consumed=Consumed.with_(S, S))
    s2 = builder.stream("t2", consumed=Consumed.with_(S, S))
    s1.merge(s2).to("out")
    with driver_for(builder) as driver:
        t1 = driver.create_input_topic("t1", S, S)
        t2 = driver.create_input_topic("t2", S, S)
        t1.pipe_input("A", "aa", 0)
        t2.pipe_input("B", "bb", 0)
        t2.pipe_input("C", "cc", 5)
        t1.pipe_input("D", "dd", 3)
        out = driver.create_output_topic("out", S, S).read_records_to_list()
    assert kvt(out) == [("A", "aa", 0), ("B", "bb", 0), ("C", "cc", 5), ("D", "dd", 3)]


def test_merge_of_many_streams_and_of_a_multi_topic_source():
    builder = StreamsBuilder()
    s1 = builder.stream(["t1", "t2"], consumed=Consumed.with_(S, S))
    s2 = builder.stream("t3", consumed=Consumed.with_(S, S))
    s3 = builder.stream("t4", consumed=Consumed.with_(S, S))
    s1.merge(s2).merge(s3).to("out")
    topology = builder.build()
    assert len(topology.subtopologies) == 1
    with driver_for(topology) as driver:
        for i, topic in enumerate(["t1", "t2", "t3", "t4"]):
            driver.create_input_topic(topic, S, S).pipe_input(topic, str(i), i)
        out = driver.create_output_topic("out", S, S).read_key_values_to_list()
    assert out == [("t1", "0"), ("t2", "1"), ("t3", "2"), ("t4", "3")]


def test_merge_of_streams_from_different_builders_fails():
    s1 = StreamsBuilder().stream("a")
    s2 = StreamsBuilder().stream("b")
    with pytest.raises(TopologyError):
        s1.merge(s2)


def test_merging_a_key_changed_stream_repartitions_before_grouping():
    builder = StreamsBuilder()
    s1 = builder.stream("a", consumed=Consumed.with_(S, S)).select_key(lambda k, v: v)
    s2 = builder.stream("b", consumed=Consumed.with_(S, S))
    s1.merge(s2).group_by_key().count().to_stream().to("out")
    assert len(builder.build().subtopologies) == 2
