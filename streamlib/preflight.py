"""Checks that run before anything is written, and before Spark starts where they can.

Before Spark starts (:func:`check_before_spark`, from ``Streams(...)``, which otherwise
reports a mistake only after Spark's 10-15 s start): the bootstrap URL parses, the
state directory and the checkpoint location can be written, and the input topics exist.

Before ``Streams.start()`` writes (:func:`prepare_changelogs`): the application's
changelog topics must match its task counts, and must exist if it has progress. Kafka
Streams fails the same way on a changelog partition mismatch: a task's state lives in
its partition of the changelog, and keys are hashed to tasks, so another count would
scatter keys over the wrong stores (DESIGN.md "Partitions are fixed per application").
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from .config import StreamsConfig
from .errors import (RESET_HINT, ChangelogConfigMismatch, ChangelogMissing, ConfigurationError,
                     PartitionCountMismatch)
from .topics import TopicNotFound, open_backend, parse_url
from .topology import Topology, TopologyError


def check_before_spark(topology: Topology, config: StreamsConfig, topics: bool = True) -> None:
    """Raise on a malformed bootstrap URL (``TopicsError``), a state directory or
    checkpoint location that cannot be written (:class:`ConfigurationError`), and, with
    ``topics``, a missing input topic (``TopologyError``), before Spark is started."""
    scheme, location, _ = parse_url(config.bootstrap)
    if scheme == "local":   # made here, on the driver: tasks never create it (topics.spec)
        writable(location, "bootstrap")
    writable(config.resolved_state_dir, "state_dir")
    if "://" not in (config.checkpoint_location or ""):   # hdfs://, s3a://: Spark's to check
        writable(config.resolved_checkpoint_location(), "checkpoint_location")
    if topics:
        with open_backend(config.bootstrap, producer_config=config.producer_config,
                          consumer_config=config.consumer_config) as backend:
            require_input_topics(topology, backend)


def writable(path: str, name: str) -> None:
    """Create directory ``path`` if needed; raise :class:`ConfigurationError` naming the
    setting if it cannot be created or written."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"{name} {path!r} cannot be created: {exc.strerror or exc}") from None
    if not os.path.isdir(path) or not os.access(path, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{name} {path!r} is not a writable directory")


def require_input_topics(topology: Topology, backend: Any) -> dict[str, int]:
    """The partition counts of the topology's source topics; raise ``TopologyError``
    naming the first missing source or global table topic."""
    counts = {}
    for topic in topology.source_topics():
        try:
            counts[topic] = backend.num_partitions(topic)
        except TopicNotFound:
            raise TopologyError(f"source topic {topic!r} does not exist; create it first "
                                f"(python -m streamlib topics create {topic})") from None
    for topic in topology.global_stores().values():   # read by the tasks themselves
        try:
            backend.num_partitions(topic)
        except TopicNotFound:
            raise TopologyError(f"global table topic {topic!r} does not exist; create it first "
                                f"(python -m streamlib topics create {topic})") from None
    return counts


def has_progress(config: StreamsConfig) -> bool:
    """Whether the application's checkpoint holds a committed batch."""
    commits = os.path.join(config.resolved_checkpoint_location(), "commits")
    try:
        return any(name.isdigit() for name in os.listdir(commits))
    except FileNotFoundError:
        return False


def check_changelog_config(store: str, topic: str, wanted: Mapping[str, str], actual: Mapping[str, str],
                           hint: str) -> None:
    """Raise :class:`ChangelogConfigMismatch` if the existing changelog ``topic`` has
    other values than ``Materialized.with_logging_enabled`` asks for (``wanted``): a
    store whose records the topic refuses (``max.message.bytes``) fails mid-run instead.

    >>> check_changelog_config("s", "app-s-changelog", {"max.message.bytes": "10"}, {}, "reset")
    Traceback (most recent call last):
    ...
    streamlib.errors.ChangelogConfigMismatch: store 's': its changelog topic 'app-s-changelog' has \
max.message.bytes=(default) but the store asks for 10 (Materialized.with_logging_enabled); change \
the topic's config to match, or reset the application: reset
    """
    wrong = [(k, v, actual.get(k)) for k, v in sorted(wanted.items()) if actual.get(k) != v]
    if wrong:
        have = ", ".join(f"{k}={a if a is not None else '(default)'}" for k, _, a in wrong)
        want = ", ".join(v for _, v, _ in wrong)
        raise ChangelogConfigMismatch(
            f"store {store!r}: its changelog topic {topic!r} has {have} but the store asks for {want} "
            f"(Materialized.with_logging_enabled); change the topic's config to match, or reset the "
            f"application: {hint}")


def prepare_changelogs(topology: Topology, config: StreamsConfig, backend, tasks_of: Mapping[int, int]) -> None:
    """Create the logged stores' changelog topics (compacted) on a first run; raise if
    one has another partition count than its sub-topology's tasks (``tasks_of``:
    sub-topology id -> task count), or is missing while the checkpoint says the
    application already processed input."""
    progress = has_progress(config)
    hint = RESET_HINT.format(app=config.application_id)
    # Tasks never create topics (an executor may see another log than the driver):
    # the tasks' own state changelogs and exactly_once's batch markers are made here.
    for sub in topology.subtopologies:
        if sub.stateful and tasks_of.get(sub.id) is not None:
            backend.create_topic(config.task_changelog_topic(sub.id), tasks_of[sub.id],
                                 {"cleanup.policy": "compact"}, exist_ok=True)
    if config.processing_guarantee == "exactly_once" and hasattr(backend, "begin_task"):
        backend.create_topic(config.batch_marker_topic, 1, exist_ok=True)
    for sub in topology.subtopologies:
        for store in sub.stores:
            if not topology.stores[store].logging:
                continue
            topic = config.changelog_topic(store)
            tasks = tasks_of.get(sub.id)
            try:
                # read afresh: a long-lived backend caches partition counts, and the
                # topic may have been deleted since (by mistake, or by a reset)
                info = backend.describe_topic(topic)
            except TopicNotFound:
                if progress:
                    raise ChangelogMissing(
                        f"store {store!r}: its changelog topic {topic!r} is missing, but the checkpoint "
                        f"{config.resolved_checkpoint_location()} has progress; the store cannot be "
                        f"restored. To reprocess from the beginning run: {hint}") from None
                if tasks is not None:
                    backend.create_topic(topic, tasks, topology.stores[store].changelog_topic_config(),
                                         exist_ok=True)
                continue
            check_changelog_config(store, topic, dict(topology.stores[store].changelog_config),
                                   info.config, hint)
            partitions = info.partitions
            if tasks is not None and partitions != tasks:
                raise PartitionCountMismatch(
                    f"store {store!r}: changelog topic {topic!r} has {partitions} partitions but the "
                    f"application now runs {tasks} tasks (num_partitions); partition counts are fixed "
                    f"per application. Start it with num_partitions={partitions}, or reset it first: {hint}")
