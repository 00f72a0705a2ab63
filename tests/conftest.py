"""Shared fixtures: a real Kafka-protocol broker and one SparkSession per test session."""
import os
from pathlib import Path

# Spark's Python workers unpickle functions defined in test modules by reference:
# let them import the test modules (the JVM, and so its workers, inherit this).
_TESTS = str(Path(__file__).resolve().parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_TESTS, os.environ.get("PYTHONPATH")) if p)

pytest_plugins = ["kafka_broker", "spark_session", "oracle_driver"]
