"""Shared fixtures: a real Kafka-protocol broker and one SparkSession per test session."""
pytest_plugins = ["kafka_broker", "spark_session"]
