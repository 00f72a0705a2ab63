"""Shared fixtures: a real Kafka-protocol broker and one SparkSession per test session."""
import os
import sys
from pathlib import Path

# Tests live in folders by what they start (unit: nothing, spark, kafka, oracle, faults)
# and import the shared helpers here, and at times each other, by module name. Spark's
# Python workers unpickle functions defined in test modules by reference: let them, and
# any subprocess a test starts, import every test module (the JVM, and so its workers,
# inherit PYTHONPATH).
_TESTS = Path(__file__).resolve().parent
_FOLDERS = [str(_TESTS)] + [str(_TESTS / name) for name in ("unit", "spark", "kafka", "oracle", "faults")]
sys.path[:0] = [p for p in _FOLDERS if p not in sys.path]
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (*_FOLDERS, os.environ.get("PYTHONPATH")) if p)
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
              "subprocess", "sphinx", "nbclient", "nbconvert",
              "getfixturevalue")  # a fixture chosen at run time may be one of the above
_jvm_modules: dict[str, bool] = {}


def pytest_collection_modifyitems(config, items):
    """Mark ``jvm`` every test outside ``tests/unit`` and every test that starts a JVM,
    so ``make test-fast`` (``-m "not jvm"``) runs the rest in a few minutes; a test in
    ``tests/unit`` that starts a JVM is in the wrong folder, and collection says so."""
    import pytest

    misplaced = set()
    for item in items:
        path = str(item.path)
        if path not in _jvm_modules:
            text = Path(path).read_text(errors="replace")
            _jvm_modules[path] = any(hint in text for hint in _JVM_HINTS)
        starts_jvm = _jvm_modules[path] or bool(_JVM_FIXTURES & set(getattr(item, "fixturenames", ())))
        in_unit = item.path.parent == _TESTS / "unit"
        if starts_jvm and in_unit:
            misplaced.add(item.path.name)
        if starts_jvm or not in_unit:
            item.add_marker(pytest.mark.jvm)
    if misplaced:
        raise pytest.UsageError(f"tests/unit is for tests that start no JVM; move {sorted(misplaced)} "
                                "to tests/spark, tests/kafka or tests/oracle")
