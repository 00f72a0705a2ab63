"""A picklable recipe for a topic backend, handed from the driver to Spark's tasks.

Spark data source options are strings, so the backend travels as its URL plus its
``open_backend`` keyword configuration in JSON (``bootstrap``, ``backendConfig``,
``producerConfig``, ``consumerConfig``: the options of streamlib's ``streamlib``
data source and of every task that writes topics). Each process opens a backend once
and shares it between the tasks it runs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from . import DEFAULT_URL, open_backend, parse_url
from .base import TopicBackend


@dataclass(frozen=True)
class BackendSpec:
    """A picklable recipe for a topic backend: URL plus ``open_backend`` keyword config."""

    url: str
    config_json: str = "{}"

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> "BackendSpec":
        """Read ``bootstrap`` and the JSON config options; a relative local path is made
        absolute here (on the driver) so executors in other directories find it.

        >>> BackendSpec.from_options({"bootstrap": "local:///tmp/x"}).url
        'local:///tmp/x'
        """
        url = options.get("bootstrap") or DEFAULT_URL
        scheme, location, _ = parse_url(url)
        if scheme == "local" and not os.path.isabs(location):
            url = url.replace(location, os.path.abspath(location), 1)
        config = json_option(options, "backendConfig", {})
        for option, key in (("producerConfig", "producer_config"),
                            ("consumerConfig", "consumer_config")):
            if option in options:
                config[key] = json_option(options, option, {})
        return cls(url, json.dumps(config, sort_keys=True))

    def open(self) -> TopicBackend:
        """The backend, opened once per process and shared by the tasks it runs. A local
        log directory is not created here: the driver made it (``Streams``), and one a
        task cannot find is an executor that does not see it (an error, not a new log)."""
        return _open_backend(self.url, self.config_json)


@lru_cache(maxsize=None)
def _open_backend(url: str, config_json: str) -> TopicBackend:
    config = json.loads(config_json)
    if parse_url(url)[0] == "local":
        config.setdefault("create", False)
    return open_backend(url, **config)


def json_option(options: Mapping[str, str], name: str, default):
    """The JSON value of option ``name``, ``default`` if it is not given."""
    text = options.get(name)
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"option {name} is not valid JSON: {text!r} ({exc})") from None
