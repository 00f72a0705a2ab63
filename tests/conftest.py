"""Shared fixtures: a real Kafka-protocol broker and one SparkSession per test session."""
import os
from pathlib import Path

# Spark's Python workers unpickle functions defined in test modules by reference:
# let them import the test modules (the JVM, and so its workers, inherit this).
_TESTS = str(Path(__file__).resolve().parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_TESTS, os.environ.get("PYTHONPATH")) if p)
# Runs that leave state_dir unset (examples under spark-submit) keep their store copies
# in this session's directory, not in the user's per-machine default.
if "STREAMLIB_STATE_DIR" not in os.environ:
    import tempfile

    os.environ["STREAMLIB_STATE_DIR"] = tempfile.mkdtemp(prefix="streamlib-test-state-")

pytest_plugins = ["kafka_broker", "spark_session", "oracle_driver"]

#: fixtures that start a JVM (Spark, a Kafka broker, the Kafka Streams oracle)
_JVM_FIXTURES = {"spark", "kafka_bootstrap", "oracle_results", "local_cluster"}
#: text of a test module that starts a JVM without those fixtures (a subprocess, an app)
_JVM_HINTS = ("spark-submit", "Streams(", "SparkSession", "kafka_local", "run_on_local_cluster", "make_wheel",
              "import functions as F",  # Column expressions need a SparkContext
              "subprocess", "sphinx")
_jvm_modules: dict[str, bool] = {}


def pytest_collection_modifyitems(config, items):
    """Mark ``jvm`` every test that starts a JVM, so ``make test-fast`` (``-m "not jvm"``)
    runs the rest in a few minutes."""
    import pytest

    for item in items:
        path = str(item.path)
        if path not in _jvm_modules:
            text = Path(path).read_text(errors="replace")
            _jvm_modules[path] = any(hint in text for hint in _JVM_HINTS)
        if _jvm_modules[path] or _JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.jvm)
