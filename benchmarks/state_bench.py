"""State store costs on the per-batch hot path.

    python benchmarks/state_bench.py [--fsync]

Measures: open+close of one task's stores, a whole per-batch cycle, get_many and commit
of 50k keys, restore of 200k changelog records, opening a read-only view.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from streamlib.state import StoreSpec, open_read_only_store, open_task_stores
from streamlib.topics import open_backend

SPEC = StoreSpec("counts", changelog_topic="bench-counts-changelog")


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def report(name: str, seconds: list[float], per: int | None = None) -> None:
    median = statistics.median(seconds)
    rate = f"  ({per / median / 1e3:,.0f}k/s)" if per else ""
    print(f"{name:<52} median {median * 1e3:8.1f} ms  min {min(seconds) * 1e3:8.1f} ms{rate}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsync", action="store_true", help="local log fsyncs every append")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="state-bench-"))
    backend = open_backend(f"local://{root}/topics?fsync={str(args.fsync).lower()}")
    task_dir = root / "state" / "bench" / "0_0"

    def open_stores():
        return open_task_stores(task_dir, [SPEC], backend=backend, partition=0,
                                num_partitions=1, producer_prefix="bench")

    keys = [b"key-%07d" % i for i in range(50_000)]
    batch = 0
    commits, get_manys = [], []
    for round_ in range(5):                      # 4 x 50k distinct keys, then updates
        chunk = [b"key-%07d" % (round_ % 4 * 50_000 + i) for i in range(50_000)]
        with open_stores() as stores:
            stores.begin(batch)
            kv = stores["counts"]
            get_manys.append(timed(lambda: kv.get_many(chunk)))
            kv.put_many([(k, b"%d" % batch) for k in chunk])
            commits.append(timed(stores.commit))
        batch += 1
    report("get_many 50k keys (RocksDB multi-get)", get_manys, 50_000)
    report("commit 50k keys (changelog append + WriteBatch)", commits, 50_000)

    cycles, opens = [], []
    for _ in range(30):
        def cycle():
            nonlocal batch
            with open_stores() as stores:
                stores.begin(batch)
                stores["counts"].put_many([(k, b"x") for k in keys[:100]])
                stores.meta_put("stream_time", b"%d" % batch)
                stores.commit()
            batch += 1
        cycles.append(timed(cycle))
        opens.append(timed(lambda: open_stores().close()))
    report("open+close a task's stores (200k keys)", opens)
    report("batch cycle: open, begin, 100 puts, commit, close", cycles)

    views = [timed(lambda: open_read_only_store(task_dir / "counts").close()) for _ in range(20)]
    report("open+close a read-only view (secondary)", views)

    records = sum(backend.end_offsets(SPEC.changelog_topic).values())
    restores = []
    for _ in range(3):
        shutil.rmtree(task_dir)
        with open_stores() as stores:
            restores.append(timed(lambda: stores.begin(batch)))
            assert stores.metrics()["restored_records"] == records
    report(f"restore {records:,} changelog records (state dir lost)", restores, records)
    backend.compact(SPEC.changelog_topic)
    shutil.rmtree(task_dir)
    with open_stores() as stores:
        seconds = timed(lambda: stores.begin(batch))
        restored = stores.metrics()["restored_records"]
    report(f"restore after compaction ({restored:,} records left)", [seconds], restored)
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
