"""RocksDB handles left open to interpreter finalization now and then crash a normal
exit with SIGSEGV (a driver that queried a store, stopped its application and returned:
CI of 2026-11-29). Every handle and the query replicas' follower thread are closed by
``atexit`` hooks before finalization; a hook registered before streamlib's runs after
them and checks what they left."""
from __future__ import annotations

import subprocess
import sys
import textwrap

CHECK_AT_EXIT = """
import atexit, gc, sys, threading

def _left_open():
    from streamlib.state.rocksdb import RocksDB
    open_dbs = [db.path for db in gc.get_objects() if isinstance(db, RocksDB) and not db._closed]
    threads = [t.name for t in threading.enumerate() if t.name.startswith("streamlib")]
    print("LEFT", open_dbs, threads, flush=True)

atexit.register(_left_open)   # first registered: runs after streamlib's hooks
"""


def _run(tmp_path, body: str) -> str:
    script = CHECK_AT_EXIT + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_database_left_open_is_closed_before_the_interpreter_finalizes(tmp_path):
    out = _run(tmp_path, f"""
        from streamlib.state.rocksdb import RocksDB
        db = RocksDB.open({str(tmp_path / 'db')!r})
        db.get_many([b"k"])
        held = [db]   # still referenced at exit
    """)
    assert "LEFT [] []" in out


def test_query_replicas_kept_after_a_stop_are_closed_with_their_thread_at_exit(tmp_path):
    out = _run(tmp_path, f"""
        from streamlib.query.replica import StoreReplicas
        from streamlib.state.changelog import Changelog
        from streamlib.topics import open_backend
        backend = open_backend("local://" + {str(tmp_path / 'log')!r})
        backend.create_topic("app-s-changelog", 2, {{"cleanup.policy": "compact"}})
        log = Changelog(backend, "app-s-changelog", 0, 2, "test/0")
        _, end = log.append(0, [b"a"], [b"1"], [0])
        replicas = StoreReplicas.shared({str(tmp_path / 'state')!r}, lambda: backend,
                                        {{"s": "app-s-changelog"}})
        replicas.sync(before_batch=1)
        replicas.follow()
        assert replicas.pin("s")[1], "the replica databases are open"
    """)
    assert "LEFT [] []" in out
