"""Standby copies (``num_standby_replicas``): where they are kept, where a lost executor's
task goes, and a standby's catch-up from the changelog (read only), without a JVM."""
import pytest

from streamlib import StreamsConfig
from streamlib.spark.placement import choose_locations, choose_standbys
from streamlib.spark.standby import lag
from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import open_backend

A, B, C, D = (f"executor_h1_{i}" for i in range(4))
E = "executor_h2_9"
TOPIC = "app-counts-changelog"
SPEC = StoreSpec("counts", changelog_topic=TOPIC)


# -- choosing standbys -------------------------------------------------------------------------

def test_each_task_gets_its_standbys_on_other_executors_spread_evenly():
    actives = [A, B, A, B]
    chosen = choose_standbys(actives, [[]] * 4, [A, B, C], 1)
    assert all(active not in standbys for active, standbys in zip(actives, chosen))
    assert all(len(standbys) == 1 for standbys in chosen)
    load = {e: sum(e in s for s in chosen) + actives.count(e) for e in (A, B, C)}
    assert max(load.values()) - min(load.values()) <= 1, load


def test_standbys_stay_where_they_are_while_their_executor_lives():
    chosen = choose_standbys([A, B], [[C], [A]], [A, B, C, D], 1)
    assert chosen == [[C], [A]]
    # C is gone: task 0's standby is chosen anew, task 1's stays
    chosen = choose_standbys([A, B], [[C], [A]], [A, B, D], 1)
    assert chosen == [[D], [A]]


def test_a_standby_that_became_the_active_copy_is_replaced():
    # task 0 moved onto its standby B: B is no standby of it any more
    assert choose_standbys([B], [[B]], [B, C], 1) == [[C]]


def test_fewer_executors_than_replicas_keep_what_is_possible():
    assert choose_standbys([A, B], [[], []], [A, B], 3) == [[B], [A]]
    assert choose_standbys([A], [[]], [A], 1) == [[]]
    assert choose_standbys([None], [[]], [A, B], 1) == [[]]   # no executor: no standby either
    assert choose_standbys([A], [[]], [], 1) == [[]]


def test_other_hosts_first():
    # A and B share host h1 (and maybe its state directory): E on h2 is preferred
    assert choose_standbys([A], [[]], [A, B, E], 1) == [[E]]
    assert choose_standbys([A], [[]], [A, B, E], 2) == [[E, B]]


def test_lost_executors_task_goes_to_a_live_standby():
    # A is gone; task 0's standbys are C (least lag) and B
    assert choose_locations([A, B], [B, C, D], [[C, B], [D]]) == [C, B]
    # its standbys are gone too: the least loaded live executor, as without standbys
    assert choose_locations([A, B], [B, C], [[D], []]) == [C, B]
    # two lost tasks with the same standby: the load decides between their standbys
    assert choose_locations([A, A, B], [B, C, D], [[C, D], [C, D], []]) == [C, D, B]


def test_a_live_home_wins_over_standbys():
    assert choose_locations([A], [A, B], [[B]]) == [A]


def test_lag_counts_changelog_records_not_applied():
    assert lag({"counts": 120, "other": 7}, {"counts": 100, "other": 7}) == 20
    assert lag({"counts": 120}, None) == 120
    assert lag({"counts": 5}, {"counts": 9}) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_num_standby_replicas_is_checked(bad):
    with pytest.raises(ValueError, match="num_standby_replicas"):
        StreamsConfig(num_standby_replicas=bad)


# -- a standby's catch-up ----------------------------------------------------------------------

@pytest.fixture
def backend(tmp_path):
    return open_backend(f"local://{tmp_path}/topics?fsync=false")


def open_copy(tmp_path, backend, copy):
    """The task's stores in one executor's state directory."""
    return open_task_stores(tmp_path / copy / "app" / "0_0", [SPEC], backend=backend, partition=0,
                            num_partitions=1, producer_prefix="app")


def run(stores, batch, items):
    stores.begin(batch)
    stores["counts"].put_many(items)
    stores.commit()


def test_standby_follows_the_changelog_and_a_failover_restores_only_what_it_missed(tmp_path, backend):
    with open_copy(tmp_path, backend, "active") as active:
        for batch in range(3):
            run(active, batch, [(b"k%d" % i, b"%d" % batch) for i in range(10)])
        with open_copy(tmp_path, backend, "standby") as standby:
            assert standby.follow(3)
            assert standby.metrics()["restored_records"] == 30
            assert standby.changelog_offsets() == active.changelog_offsets()
        run(active, 3, [(b"k0", b"3")])
        expected = list(active["counts"].all())
    end = backend.end_offsets(TOPIC)[0]
    with open_copy(tmp_path, backend, "standby") as promoted:   # the active's executor is lost
        promoted.begin(4)
        assert promoted.metrics()["restored_records"] == 1          # batch 3 only
        assert list(promoted["counts"].all()) == expected
    assert backend.end_offsets(TOPIC)[0] == end


def test_standby_never_reads_the_batch_being_run(tmp_path, backend):
    with open_copy(tmp_path, backend, "active") as active:
        run(active, 0, [(b"a", b"0")])
        run(active, 1, [(b"a", b"1"), (b"b", b"1")])   # batch 1: its changelog written, not yet committed
    with open_copy(tmp_path, backend, "standby") as standby:
        standby.follow(1)
        assert dict(standby["counts"].all()) == {b"a": b"0"}


def test_standby_leaves_a_copy_that_is_ahead_alone_and_writes_nothing(tmp_path, backend):
    with open_copy(tmp_path, backend, "active") as active:
        run(active, 0, [(b"a", b"0")])
        run(active, 1, [(b"a", b"1")])
        end = backend.end_offsets(TOPIC)[0]
        # a late round (before batch 1) over the active copy itself: no undo, no change
        assert not active.follow(1)
        assert dict(active["counts"].all()) == {b"a": b"1"}
    with open_copy(tmp_path, backend, "active") as again:
        again.begin(1)   # a re-run of batch 1 can still roll it back
        assert dict(again["counts"].all()) == {b"a": b"0"}
    assert backend.end_offsets(TOPIC)[0] == end


def test_standby_ahead_of_a_cut_changelog_rebuilds_instead_of_logging_again(tmp_path, backend):
    """The changelog loses its last frame (torn), which the standby had applied: an active
    copy would log itself again (an exact repair); a standby must not write, it rebuilds."""
    import glob
    import os

    with open_copy(tmp_path, backend, "active") as active:
        run(active, 0, [(b"a", b"0")])
        run(active, 1, [(b"b", b"1")])
    with open_copy(tmp_path, backend, "standby") as standby:
        standby.follow(2)
        assert dict(standby["counts"].all()) == {b"a": b"0", b"b": b"1"}
    segment = sorted(glob.glob(os.path.join(tmp_path, "topics", TOPIC, "0", "*.log")))[-1]
    with open(segment, "r+b") as f:   # batch 1's frame is torn
        f.truncate(os.path.getsize(segment) - 5)
    again = open_backend(f"local://{tmp_path}/topics?fsync=false")
    assert again.end_offsets(TOPIC)[0] == 1
    with open_copy(tmp_path, again, "standby") as standby:
        standby.follow(2)
        assert dict(standby["counts"].all()) == {b"a": b"0"}
    assert again.end_offsets(TOPIC)[0] == 1   # the standby appended nothing
