"""The plain Kafka producer is idempotent by default, as Kafka's Java client (no broker needed)."""
from __future__ import annotations

import pytest

from streamlib.topics.kafka import KafkaBackend


@pytest.mark.parametrize("user, expected", [
    ({}, True),
    ({"enable.idempotence": False}, False),
    ({"acks": "1"}, None),                      # conflicts: the default steps aside, as in Java
    ({"acks": "all", "retries": 0}, None),
    ({"max.in.flight.requests.per.connection": 10}, None),
])
def test_plain_producer_idempotence(user, expected):
    backend = KafkaBackend("127.0.0.1:1", producer_config=user, timeout=1)
    assert backend._producer_config.get("enable.idempotence") == expected
    backend._producer = None  # nothing to flush on a broker that never existed
