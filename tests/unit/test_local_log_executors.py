"""``local://`` on a cluster: start() refuses when executors cannot see the log, and no
task ever creates a log directory, a topic or a changelog (the driver does, at start()).
The positive path on real executor JVMs is tests/test_engine_recovery.py's local-cluster
run."""
from __future__ import annotations

import pytest

from streamlib.errors import ChangelogMissing, ConfigurationError
from streamlib.spark import log_probe
from streamlib.state import StoreSpec, open_task_stores
from streamlib.topics import TopicsError, open_backend
from streamlib.topics.spec import BackendSpec


def test_a_task_never_creates_the_local_log_directory(tmp_path):
    missing = tmp_path / "not-mounted-here"
    with pytest.raises(TopicsError, match="every executor sees"):
        BackendSpec(f"local://{missing}").open()
    assert not missing.exists()
    open_backend(f"local://{missing}").close()   # the driver's open makes it
    assert missing.is_dir()


def test_a_task_never_creates_a_changelog(tmp_path):
    backend = open_backend(f"local://{tmp_path / 'log'}")
    spec = StoreSpec("counts", changelog_topic="app-counts-changelog")
    with open_task_stores(tmp_path / "state", [spec], backend=backend, create_changelogs=False) as stores:
        with pytest.raises(ChangelogMissing, match="app-counts-changelog.*start\\(\\) creates it"):
            stores.begin(0)
    assert "app-counts-changelog" not in backend.list_topics()


class _Context:
    def __init__(self, master, application="app-1"):
        self.master = master
        self.applicationId = application


class _Session:
    def __init__(self, master, application="app-1"):
        self.sparkContext = _Context(master, application)


def test_start_refuses_executors_that_cannot_see_the_log(tmp_path, monkeypatch):
    tokens = []

    def views(spark, token):
        tokens.append(token)
        return [("worker-1", True), ("worker-2", False)]

    monkeypatch.setattr(log_probe, "executor_views", views)
    monkeypatch.setattr(log_probe.internals, "known_executors", lambda spark: ["executor_h_1", "executor_h_2"])
    with pytest.raises(ConfigurationError, match="not visible on executor host\\(s\\) worker-2.*Kafka"):
        log_probe.require_visible_log(_Session("spark://master:7077"), str(tmp_path))
    assert tokens and tokens[0].startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []           # the probe's token is gone again
    log_probe.require_visible_log(_Session("local[2]"), str(tmp_path / "x"))   # one machine: no job
    assert len(tokens) == 1


def test_the_log_is_probed_again_only_when_new_executors_joined(tmp_path, monkeypatch):
    """process_available() starts the query every call: the executors that saw the log
    are not asked again; a new one is, and an unknown executor list always probes."""
    probes, executors = [], ["executor_h_1", "executor_h_2"]
    monkeypatch.setattr(log_probe, "executor_views", lambda spark, token: probes.append(token) or [("h", True)])
    monkeypatch.setattr(log_probe.internals, "known_executors", lambda spark: list(executors))
    cluster = _Session("spark://master:7077", application=f"app-{tmp_path.name}")
    for _ in range(3):
        log_probe.require_visible_log(cluster, str(tmp_path))
    assert len(probes) == 1
    executors.append("executor_h_3")
    log_probe.require_visible_log(cluster, str(tmp_path))
    log_probe.require_visible_log(cluster, str(tmp_path))
    assert len(probes) == 2
    log_probe.require_visible_log(_Session("spark://master:7077", f"other-{tmp_path.name}"), str(tmp_path))
    assert len(probes) == 3                         # another application probes for itself
    executors.clear()
    log_probe.require_visible_log(cluster, str(tmp_path))
    assert len(probes) == 4
