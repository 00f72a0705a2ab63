"""``StreamsConfig``: how and where an application runs."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Optional
from urllib.parse import urlparse

from .serdes import Serde, Serdes
from .time import Duration, to_millis

DESERIALIZATION_HANDLERS = ("fail", "log_and_continue", "dead_letter")
PROCESSING_GUARANTEES = ("at_least_once", "exactly_once")


#: Environment variable naming the state directory of every application on a machine.
STATE_DIR_ENV = "STREAMLIB_STATE_DIR"


def default_state_dir() -> str:
    """The state directory of this machine when ``state_dir`` is not set:
    ``$STREAMLIB_STATE_DIR``, else ``$XDG_CACHE_HOME/streamlib/state`` (by default
    ``~/.cache/streamlib/state``). Per machine and per user, never inside Spark's
    per-application work directory (a relative path on an executor lands there, and
    every executor or application restart would then restore every store in full).

    >>> import os; os.environ[STATE_DIR_ENV] = "/data/streamlib"; default_state_dir()
    '/data/streamlib'
    >>> del os.environ[STATE_DIR_ENV]
    """
    configured = os.environ.get(STATE_DIR_ENV)
    if configured:
        return configured
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "streamlib", "state")


@dataclass
class StreamsConfig:
    """Configuration of a streamlib application (Kafka Streams' ``StreamsConfig``).

    Examples
    --------
    >>> config = StreamsConfig(application_id="wordcount", bootstrap="local://./streamlib-data")
    >>> config.changelog_topic("counts")
    'wordcount-counts-changelog'
    """

    application_id: str = "streamlib-app"
    bootstrap: str = "local://./streamlib-data"
    #: None: the machine's default (:func:`default_state_dir`), resolved where it is used
    state_dir: Optional[str] = None
    checkpoint_location: Optional[str] = None
    num_partitions: Optional[int] = None
    commit_interval: Duration = timedelta(seconds=1)
    cache_max_bytes: int = 10 * 1024 * 1024
    processing_guarantee: str = "at_least_once"
    default_key_serde: Serde = field(default_factory=Serdes.string)
    default_value_serde: Serde = field(default_factory=Serdes.string)
    deserialization_exception_handler: str = "fail"
    producer_config: dict = field(default_factory=dict)
    consumer_config: dict = field(default_factory=dict)
    #: a record of an input topic whose timestamp is further than this ahead of the wall
    #: clock goes to ``deserialization_exception_handler`` instead of moving stream time
    #: (``None``: no limit; the driver's wall clock is its mocked one)
    max_future_skew: Optional[Duration] = None
    #: at most this many input records per micro-batch (``None``: all available)
    max_records_per_batch: Optional[int] = None
    #: ``"host:port"``: serve interactive queries over HTTP (JSON) while running; a bare
    #: ``"port"`` (or ``":port"``) binds to loopback only
    application_server: Optional[str] = None
    #: the bearer token every request must carry (``Authorization: Bearer <token>``)
    application_server_auth_token: Optional[str] = None
    #: a file holding that token (first line), instead of the token itself
    application_server_auth_token_file: Optional[str] = None
    #: ``(certfile, keyfile)``: serve HTTPS with these PEM files
    application_server_tls: Optional[tuple[str, str]] = None
    #: serve ``/metrics`` without the token (for a Prometheus scraper)
    application_server_public_metrics: bool = False
    #: requests handled at once; more wait in a queue of 16 per thread, beyond that 503
    application_server_threads: int = 8
    #: the most entries one page of a scan may ask for (``?limit=``; default 1000)
    application_server_max_limit: int = 10_000
    #: the largest answer one request may produce (413 beyond it)
    application_server_max_response_bytes: int = 16 * 1024 * 1024
    #: the longest one request may work (503 beyond it)
    application_server_request_timeout: Duration = timedelta(seconds=5)
    #: how long a scan cursor (``next``) can continue in its batch before it expires
    application_server_cursor_ttl: Duration = timedelta(minutes=1)
    #: warm copies of each stateful task's stores on other executors of a cluster, kept
    #: current from the changelogs (Kafka Streams' ``num.standby.replicas``); ignored, with
    #: a log line, by ``local[n]`` (one executor)
    num_standby_replicas: int = 0

    def __post_init__(self) -> None:
        if not self.application_id or "/" in self.application_id:
            raise ValueError(f"application_id must be a non-empty name without '/', got {self.application_id!r}")
        if self.processing_guarantee not in PROCESSING_GUARANTEES:
            raise ValueError(f"processing_guarantee must be one of {PROCESSING_GUARANTEES}")
        if self.deserialization_exception_handler not in DESERIALIZATION_HANDLERS:
            raise ValueError(f"deserialization_exception_handler must be one of {DESERIALIZATION_HANDLERS}")
        if self.max_records_per_batch is not None and self.max_records_per_batch < 1:
            raise ValueError("max_records_per_batch must be >= 1")
        if self.num_partitions is not None and self.num_partitions < 1:
            raise ValueError("num_partitions must be >= 1")
        if isinstance(self.num_standby_replicas, bool) or not isinstance(self.num_standby_replicas, int) \
                or self.num_standby_replicas < 0:
            raise ValueError(f"num_standby_replicas must be an int >= 0, got {self.num_standby_replicas!r}")
        if self.application_server is not None:
            server_address(self.application_server)   # raises if malformed
        if self.application_server_auth_token is not None and self.application_server_auth_token_file:
            raise ValueError("give application_server_auth_token or application_server_auth_token_file, not both")
        if self.application_server_tls is not None and len(self.application_server_tls) != 2:
            raise ValueError("application_server_tls must be (certfile, keyfile)")
        for name in ("application_server_threads", "application_server_max_limit",
                     "application_server_max_response_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        self.commit_interval_ms = to_millis(self.commit_interval, "commit_interval")
        self.max_future_skew_ms: Optional[int] = (
            None if self.max_future_skew is None else to_millis(self.max_future_skew, "max_future_skew"))
        if self.max_future_skew_ms is not None and self.max_future_skew_ms < 0:
            raise ValueError("max_future_skew must be >= 0")
        to_millis(self.application_server_request_timeout, "application_server_request_timeout")
        to_millis(self.application_server_cursor_ttl, "application_server_cursor_ttl")

    @property
    def caching(self) -> bool:
        return self.cache_max_bytes > 0

    def changelog_topic(self, store: str) -> str:
        return f"{self.application_id}-{store}-changelog"

    def task_changelog_topic(self, subtopology: int) -> str:
        """Where a stateful sub-topology's tasks log their own state (stream time,
        operators' times), one partition per task, like a store's changelog."""
        return self.changelog_topic(f"subtopology-{subtopology}-task")

    @property
    def batch_marker_topic(self) -> str:
        """Where ``exactly_once`` on Kafka keeps each task's last committed batch
        (:meth:`~streamlib.topics.kafka.KafkaBackend.begin_task`)."""
        return f"{self.application_id}-streamlib-batches"

    @property
    def dead_letter_topic(self) -> str:
        return f"{self.application_id}-dlq"

    @property
    def application_state_dir(self) -> str:
        """This application's local, rebuildable state (every task's store copies)."""
        return os.path.join(self.resolved_state_dir, self.application_id)

    @property
    def resolved_state_dir(self) -> str:
        """``state_dir``, or the default of the machine this runs on (an executor
        resolves it on its own machine: :func:`default_state_dir`)."""
        return os.path.abspath(self.state_dir or default_state_dir())

    def task_state_dir(self, task_id: str) -> str:
        return os.path.join(self.application_state_dir, task_id)

    def resolved_checkpoint_location(self) -> str:
        """Where the Spark checkpoint (the application's progress) lives: beside the topics."""
        if self.checkpoint_location:
            return os.path.abspath(self.checkpoint_location)
        url = urlparse(self.bootstrap)
        if url.scheme == "local":
            root = (url.netloc + url.path) or "./streamlib-data"
            return os.path.join(os.path.abspath(root), "_checkpoints", self.application_id)
        return os.path.abspath(os.path.join("streamlib-checkpoints", self.application_id))


def server_address(address: str) -> tuple[str, int]:
    """``application_server`` as ``(host, port)``; without a host, loopback.

    >>> server_address("0.0.0.0:8080"), server_address("8080"), server_address("[::1]:80")
    (('0.0.0.0', 8080), ('127.0.0.1', 8080), ('::1', 80))
    """
    host, _, port = str(address).rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"application_server must be 'host:port' or 'port', got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
