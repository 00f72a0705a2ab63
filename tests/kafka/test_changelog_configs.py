"""Materialized.with_logging_enabled(configs): changelog topics are created with the
store's configs and checked at start, on the local log and on Kafka (no Spark)."""
from __future__ import annotations

import uuid

import pytest

from streamlib import Materialized, StreamsBuilder, StreamsConfig
from streamlib.errors import ChangelogConfigMismatch
from streamlib.preflight import prepare_changelogs
from streamlib.state import StoreSpec, open_task_stores

BIG = {"max.message.bytes": "4000000"}


def counting_topology(materialized):
    builder = StreamsBuilder()
    builder.stream("words").group_by_key().count(materialized=materialized)
    return builder.build()


def prepare(backend, tmp_path, materialized, app="app"):
    topology = counting_topology(materialized)
    config = StreamsConfig(application_id=app, bootstrap=backend.url, state_dir=str(tmp_path / "state"),
                           checkpoint_location=str(tmp_path / f"checkpoint-{app}"))
    prepare_changelogs(topology, config, backend, {sub.id: 1 for sub in topology.subtopologies})
    return config.changelog_topic("counts")


@pytest.fixture(params=["local", "kafka"])
def backend(request, tmp_path):
    return request.getfixturevalue(f"{request.param}_backend")


def test_changelog_created_with_the_stores_configs(backend, tmp_path):
    app = f"app-{uuid.uuid4().hex[:8]}"
    topic = prepare(backend, tmp_path, Materialized.as_("counts").with_logging_enabled(BIG), app)
    config = backend.describe_topic(topic).config
    assert config["max.message.bytes"] == "4000000"
    assert config["cleanup.policy"] == "compact"
    # a second start finds them as asked
    prepare(backend, tmp_path, Materialized.as_("counts").with_logging_enabled(BIG), app)


def test_start_refuses_a_changelog_with_other_configs(backend, tmp_path):
    app = f"app-{uuid.uuid4().hex[:8]}"
    prepare(backend, tmp_path, Materialized.as_("counts"), app)
    with pytest.raises(ChangelogConfigMismatch, match=r"store 'counts'.*max.message.bytes=\(default\) "
                                                      r"but the store asks for 4000000"):
        prepare(backend, tmp_path, Materialized.as_("counts").with_logging_enabled(BIG), app)


def test_a_task_creates_a_missing_changelog_with_the_configs(local_backend, tmp_path):
    spec = StoreSpec("counts", "app-counts-changelog", changelog_config={"cleanup.policy": "compact", **BIG})
    stores = open_task_stores(tmp_path / "task", [spec], backend=local_backend, partition=0, num_partitions=1)
    try:
        stores.begin(0)  # catching up creates the missing changelog
    finally:
        stores.close()
    assert local_backend.describe_topic("app-counts-changelog").config["max.message.bytes"] == "4000000"


def test_logging_disabled_forgets_the_configs():
    m = Materialized.as_("counts").with_logging_enabled(BIG).with_logging_disabled()
    assert (m.logging, m.logging_config) == (False, ())
