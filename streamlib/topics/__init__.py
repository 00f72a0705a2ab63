"""Topics: partitions, offsets, append, read; backends chosen by URL.

``local:///abs/path`` or ``local://./rel/path`` — the embedded durable log
(options: ``?fsync=false``, ``?segment_bytes=N``, or the same as keyword arguments);
``kafka://host:port[,host:port]`` — a Kafka cluster through confluent-kafka.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from .base import (APPEND_SCHEMA, RECORD_SCHEMA, InvalidTimestamp, Record, RecordTooLarge, TopicBackend, TopicExists, TopicInfo,
                   TopicNotFound, TopicsError, records_from_arrow, records_to_arrow)
from .partitioner import default_partitioner, murmur2, partition_array

DEFAULT_URL = "local://./streamlib-data"
#: Options only the Kafka backend uses; a local backend accepts and ignores them so
#: one configuration works with either URL.
KAFKA_ONLY_OPTIONS = frozenset({"producer_config", "consumer_config", "processing_guarantee",
                                "timeout", "transactional_id"})

__all__ = [
    "open_backend", "parse_url", "default_partitioner", "murmur2", "partition_array",
    "TopicBackend", "Record", "TopicInfo", "TopicsError", "TopicNotFound", "TopicExists", "RecordTooLarge",
    "InvalidTimestamp",
    "RECORD_SCHEMA", "APPEND_SCHEMA", "records_to_arrow", "records_from_arrow", "DEFAULT_URL",
]


def _parse_bool(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise TopicsError(f"option {name}={text!r} is not a boolean")


def parse_url(url: str) -> tuple[str, str, dict[str, Any]]:
    """Split a backend URL into (scheme, location, options) or raise TopicsError."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("local", "kafka"):
        raise TopicsError(f"bad bootstrap URL {url!r}: expected local://PATH or kafka://HOST:PORT[,HOST:PORT]")
    location, _, query = rest.partition("?")
    if not location:
        raise TopicsError(f"bad bootstrap URL {url!r}: no {'path' if scheme == 'local' else 'host:port'}")
    options: dict[str, Any] = {}
    for name, text in parse_qsl(query, keep_blank_values=True):
        if name == "fsync":
            options[name] = _parse_bool(name, text)
        elif name in ("segment_bytes", "timeout"):
            try:
                options[name] = float(text) if name == "timeout" else int(text)
            except ValueError:
                raise TopicsError(f"bad bootstrap URL {url!r}: {name}={text!r} is not a number") from None
        else:
            raise TopicsError(f"bad bootstrap URL {url!r}: unknown option {name!r}")
    if scheme == "kafka":
        for hostport in location.split(","):
            host, colon, port = hostport.rpartition(":")
            if not colon or not host or not port.isdigit():
                raise TopicsError(f"bad bootstrap URL {url!r}: {hostport!r} is not host:port")
    return scheme, location, options


def open_backend(url: str = DEFAULT_URL, **config: Any) -> TopicBackend:
    """The backend named by ``url``; ``config`` adds to (and overrides) URL options."""
    scheme, location, options = parse_url(url)
    options.update(config)
    if scheme == "local":
        from .local import LocalBackend

        unknown = set(options) - {"fsync", "segment_bytes", "create"} - KAFKA_ONLY_OPTIONS
        if unknown:
            raise TopicsError(f"unknown option(s) for the local backend: {', '.join(sorted(unknown))}")
        kwargs = {k: v for k, v in options.items() if k not in KAFKA_ONLY_OPTIONS}
        return LocalBackend(location, **kwargs)
    from .kafka import KafkaBackend

    unknown = set(options) - KAFKA_ONLY_OPTIONS
    if unknown:
        raise TopicsError(f"unknown option(s) for the kafka backend: {', '.join(sorted(unknown))}")
    return KafkaBackend(location, **options)
