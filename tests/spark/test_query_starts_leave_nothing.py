"""Each start of the application's query (every ``process_available()``) runs its batches
on a new JVM thread, which Py4J serves with a new Python thread and socket. Once the
query stops, streamlib lets them go; Py4J alone keeps them for the process's life."""
from __future__ import annotations

import threading
import time

from engine import Workspace, wordcount_topology
from streamlib import Streams


def callback_threads() -> int:
    """Python threads serving a connection the JVM opened (Py4J callbacks)."""
    count = 0
    for thread in threading.enumerate():
        connection = getattr(getattr(thread, "_target", None), "__self__", None)
        if type(connection).__name__ == "ClientServerConnection" and not connection.initiated_from_client:
            count += 1
    return count


def test_process_available_again_and_again_keeps_no_thread_or_socket(spark, tmp_path):
    workspace = Workspace(tmp_path)
    workspace.produce("lines", [("k", "a b")])
    app = Streams(wordcount_topology(), workspace.config(), spark=spark)
    before = callback_threads()
    for i in range(4):
        workspace.produce("lines", [("k", f"w{i} a")])
        app.process_available()
    deadline = time.monotonic() + 60
    while callback_threads() > before + 1 and time.monotonic() < deadline:
        time.sleep(0.1)   # a thread ends once it has read its socket's end
    # (one may be the JVM's listener bus, whose connection lasts)
    assert callback_threads() <= before + 1
    assert dict(app.store("counts").all())["a"] == 5
    app.stop()
