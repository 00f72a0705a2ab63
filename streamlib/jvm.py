"""The Java artifacts streamlib uses: pinned versions and where their jars are cached.

The versions are pinned in one file, ``streamlib/versions.env`` (``KEY=VALUE``
lines), read here, by the Makefile and, through ``-D`` properties, by Maven.
Jars fetched by Maven live under :func:`cache_dir`: the checkout's ``.cache/``
when streamlib runs from a checkout, else ``~/.cache/streamlib``;
``$STREAMLIB_CACHE_DIR`` overrides both.

>>> versions()["SPARK_KAFKA_VERSION"]
'4.1.1'
>>> spark_kafka_package()
'org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1'
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Optional

_PACKAGE = Path(__file__).resolve().parent
#: Written last by a fetch, so a directory without it is an interrupted fetch.
COMPLETE_MARKER = ".complete"


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """The pinned versions from ``streamlib/versions.env``.

    >>> versions()["KAFKA_VERSION"].startswith("4.")
    True
    """
    pins = {}
    for line in (_PACKAGE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pins[key.strip()] = value.strip()
    return pins


def cache_dir() -> Path:
    """Root of the jar cache (see the module docstring).

    >>> cache_dir().name in (".cache", "streamlib") or "STREAMLIB_CACHE_DIR" in os.environ
    True
    """
    override = os.environ.get("STREAMLIB_CACHE_DIR")
    if override:
        return Path(override).resolve()
    checkout = _PACKAGE.parent
    if (checkout / "tools" / "kafka" / "pom.xml").exists():
        return checkout / ".cache"
    return Path.home() / ".cache" / "streamlib"


def spark_kafka_version() -> str:
    """The version of Spark's Kafka source to use: the installed PySpark's (the
    connector is built against Spark's internals and breaks on another release),
    else the pinned one."""
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return versions()["SPARK_KAFKA_VERSION"]


def spark_kafka_package() -> str:
    """Maven coordinates of Spark's Kafka source matching the installed PySpark
    (what ``spark-submit --packages`` takes)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{versions()['SCALA_BINARY_VERSION']}:{spark_kafka_version()}"


def spark_kafka_jars_dir() -> Path:
    """Where ``make jars`` puts Spark's Kafka source and its dependencies."""
    return cache_dir() / "spark-kafka" / spark_kafka_version() / "jars"


def kafka_libs_dir() -> Path:
    """Where ``make jars`` puts Apache Kafka's broker jars."""
    return cache_dir() / "kafka" / versions()["KAFKA_VERSION"] / "libs"


def fetched_jars(directory: Path) -> Optional[list[str]]:
    """The jars in ``directory`` if a fetch completed there, else None.

    >>> fetched_jars(Path("/nonexistent")) is None
    True
    """
    if not (directory / COMPLETE_MARKER).exists():
        return None
    return sorted(str(p) for p in directory.glob("*.jar"))
