"""The query endpoint's point-lookup route (answered on the polling threads) against
the general one, over real store replicas without Spark."""
from __future__ import annotations

import struct

import pytest

from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, StreamsConfig
from streamlib.query.http import QueryServer
from streamlib.query.protocol import Request
from streamlib.query.service import Queries
from streamlib.state.changelog import Changelog
from streamlib.state.timestamped import encode_timestamped
from streamlib.topics import default_partitioner, open_backend

PARTITIONS = 2
TOKEN = "s3cret"


@pytest.fixture
def server(tmp_path):
    bootstrap = f"local://{tmp_path / 'log'}"
    backend = open_backend(bootstrap)
    builder = StreamsBuilder()
    (builder.stream("words", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("counts")))
    (builder.stream("numbers", consumed=Consumed.with_(Serdes.long(), Serdes.string()))
     .group_by_key().count(materialized=Materialized.as_("by-number")))
    config = StreamsConfig(application_id="routes", bootstrap=bootstrap, state_dir=str(tmp_path / "state"),
                           application_server="127.0.0.1:0", application_server_auth_token=TOKEN)
    entries = {"counts": {"a b".encode(): 2, "x/y".encode(): 3, "é?".encode(): 1},
               "by-number": {struct.pack(">q", 7): 4}}
    for store, counts in entries.items():
        topic = config.changelog_topic(store)
        backend.create_topic(topic, PARTITIONS, {"cleanup.policy": "compact"})
        for p in range(PARTITIONS):
            keys = [k for k in counts if default_partitioner(k, PARTITIONS) == p]
            Changelog(backend, topic, p, PARTITIONS, f"t/{p}").append(
                0, keys, [encode_timestamped(struct.pack(">q", counts[k]), 0) for k in keys], [0] * len(keys))
    queries = Queries(builder.build(), config, lambda: backend)
    queries.replicas.sync()
    endpoint = QueryServer(queries, queries.metrics)   # not started: its routes are called
    yield endpoint
    endpoint.stop()
    queries.close()


@pytest.mark.parametrize("target", ["/stores/counts/a%20b", "/stores/counts/x%2Fy", "/stores/counts/%C3%A9%3F",
                                    "/stores/counts/missing", "/stores/by-number/7", "/stores/by-number/seven",
                                    "/stores/by-number/8"])
def test_a_point_lookup_is_answered_as_the_general_route_answers_it(server, target):
    for authorization in (f"Bearer {TOKEN}", None, "Bearer wrong"):
        route = server.point_lookup(Request(b"GET", target, authorization, True))
        assert route is not None
        assert server.lookup(*route, authorization) == server.respond(target, authorization)
    assert server.respond(target, f"Bearer {TOKEN}")[0] in (200, 400, 404)


@pytest.mark.parametrize("target", ["/stores/counts", "/stores/counts/", "/stores/counts/a?x=1", "/stores/counts/a#b",
                                    "x/stores/counts/a", "/stores/nope/a", "/stores/counts/a/b", "/metrics",
                                    "/stores//counts/a", "http://h/stores/counts/a"])
def test_other_requests_take_the_general_route(server, target):
    assert server.point_lookup(Request(b"GET", target, None, True)) is None


def test_only_gets_are_point_lookups(server):
    assert server.point_lookup(Request(b"POST", "/stores/counts/a%20b", None, True)) is None
    assert server.lookup(*server.point_lookup(Request(b"GET", "/stores/counts/a%20b", None, True)),
                         f"Bearer {TOKEN}")[:3] == (200, "application/json", b'{"key":"a b","value":2}')
