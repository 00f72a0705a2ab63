"""Resetting an application so its next run reprocesses its input from the beginning
(Kafka Streams' ``StreamsResetter``): delete its internal topics, its progress (the
Spark checkpoint) and its local state. Input and output topics stay; the dead letter
topic stays unless asked for, since it holds records nothing else has."""
from __future__ import annotations

import os
import shutil

from .config import StreamsConfig
from .instance import ApplicationLock
from .state.cache import release_everywhere
from .topics import TopicBackend

#: Suffixes of the topics an application creates for itself.
INTERNAL_SUFFIXES = ("-changelog", "-repartition")


def internal_topics(topics: list[str], application_id: str) -> list[str]:
    """The application's changelog and repartition topics among ``topics``."""
    prefix = f"{application_id}-"
    return sorted(t for t in topics if t.startswith(prefix) and t.endswith(INTERNAL_SUFFIXES))


def reset_application(backend: TopicBackend, config: StreamsConfig, include_dlq: bool = False) -> list[str]:
    """Delete the application's internal topics (and DLQ if ``include_dlq``), checkpoint
    and local state directory; return one line per thing deleted. Refuses while the
    application runs (:class:`~streamlib.errors.ApplicationAlreadyRunning`)."""
    with ApplicationLock.of(config):
        return _reset(backend, config, include_dlq)


def _reset(backend: TopicBackend, config: StreamsConfig, include_dlq: bool) -> list[str]:
    existing = backend.list_topics()
    doomed = internal_topics(existing, config.application_id)
    if include_dlq and config.dead_letter_topic in existing:
        doomed.append(config.dead_letter_topic)
    # Python workers of a stopped run may still keep task stores open: close them before
    # their directories go (a handle must not outlive its directory).
    release_everywhere(config.application_state_dir)
    done = []
    for topic in doomed:
        backend.delete_topic(topic)
        done.append(f"deleted topic {topic}")
    for what, path in (("checkpoint", config.resolved_checkpoint_location()),
                       ("local state", config.application_state_dir)):
        if os.path.exists(path):
            shutil.rmtree(path)
            done.append(f"deleted {what} {path}")
    return done
