"""One stream task fed Arrow batches in this process, without Spark: what the task
benchmarks (``join_task_bench.py``, ``windowed_task_bench.py``) time."""
from __future__ import annotations

import os
import time

import pyarrow as pa

from streamlib import StreamsConfig
from streamlib.runtime.task import Task
from streamlib.state import open_task_stores


def task_cpu_seconds(topology, application_id: str, tables: list[pa.Table], work: str,
                     stores_dir: str) -> tuple[float, int]:
    """CPU seconds of the first sub-topology's task 0 over ``tables`` (one batch each,
    committed), and the rows it emitted."""
    config = StreamsConfig(application_id=application_id, state_dir=work)
    task = Task(topology, topology.subtopologies[0], 0, config)
    stores = open_task_stores(os.path.join(work, stores_dir), task.store_specs())
    emitted = 0
    started = time.process_time()
    try:
        for batch, table in enumerate(tables):
            task.begin(stores, batch)
            task.process_table(table)
            task.commit()
            emitted += task.take_output_table().num_rows
    finally:
        stores.close()
    return time.process_time() - started, emitted
