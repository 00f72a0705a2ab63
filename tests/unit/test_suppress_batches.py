"""``suppress`` taking a commit's updates at once (``SuppressProcessor.process_many``)
against taking them one by one: the same final results in the same order, the same
buffer and counters, over batches of a cached windowed count; and updates for windows
already closed (which one eviction for all would reorder) still go one by one."""
from __future__ import annotations

import pytest

from streamlib import StreamsConfig, Window, Windowed
from streamlib.processors.base import Processor
from streamlib.processors.record import Change, Record
from streamlib.processors.suppress import SuppressProcessor
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores

from test_windowed_batch_count import random_batches, run, topology


@pytest.mark.parametrize("advance", [None, 30], ids=["tumbling", "hopping"])
@pytest.mark.parametrize("seed", [1, 4])
def test_a_commits_updates_at_once_equal_one_by_one(tmp_path, monkeypatch, advance, seed):
    batches = random_batches(seed, batches=8, per_batch=300)
    top = topology(advance, suppress=True)
    at_once = run(top, batches, tmp_path, "at-once", batch_path=True)
    monkeypatch.setattr(SuppressProcessor, "process_many", Processor.process_many)
    one_by_one = run(top, batches, tmp_path, "one-by-one", batch_path=True)
    assert at_once[:3] == one_by_one[:3]
    assert sum(map(len, at_once[0])) > 20   # final results came out in most batches


def _suppress(tmp_path, name):
    top = topology(None, suppress=True)
    task = Task(top, top.subtopologies[0], 0, StreamsConfig(application_id="app", state_dir=str(tmp_path)))
    stores = open_task_stores(tmp_path / name, task.store_specs())
    task.begin(stores, 0)
    [suppress] = [p for p in task.processors.values() if isinstance(p, SuppressProcessor)]
    return task, stores, suppress


def _update(key: str, start: int, count: int, timestamp: int) -> Record:
    return Record(Windowed(key, Window(start, start + 100)), Change(count, None), timestamp)


def test_updates_for_windows_closed_by_earlier_ones_go_one_by_one(tmp_path):
    """Grace 50: the update at 400 closes [0,100) and [100,200); the later updates for
    [0,100) and [200,300) are then emitted each on its own, after them, as one by one
    does (a single eviction would put c's [0,100) before b's [100,200))."""
    updates = [_update("a", 0, 1, 10), _update("b", 100, 1, 120), _update("a", 300, 1, 400),
               _update("c", 0, 2, 60), _update("d", 200, 1, 250)]
    outputs = {}
    for name, take in (("at-once", lambda s: s.process_many(updates)),
                       ("one-by-one", lambda s: [s.process(u) for u in updates])):
        task, stores, suppress = _suppress(tmp_path, name)
        try:
            take(suppress)
            outputs[name] = task.take_output()
            buffered = list(suppress.buffer.store.all())
        finally:
            stores.close()
        outputs[name + " buffer"] = buffered
    assert outputs["at-once"] == outputs["one-by-one"]
    assert outputs["at-once buffer"] == outputs["one-by-one buffer"]
    emitted = [key for _, _, _, key, _, _ in outputs["at-once"]]
    assert [k[:1] for k in emitted] == [b"a", b"b", b"c", b"d"]   # c of [0,100) after b of [100,200)
