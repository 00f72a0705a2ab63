"""Store kinds are one typed value (``StoreKind``); each layer that treats kinds
differently keys one table by it, and every queryable kind is in each."""
from __future__ import annotations

import pickle

import pytest

from streamlib.node_kinds import NodeKind
from streamlib.processors.stores.kinds import QUERYABLE_KINDS, STORE_KINDS
from streamlib.query.http import KEY_ROUTES
from streamlib.spark.store_source import ROW_DECODERS, StoreColumns
from streamlib.serdes import Serdes
from streamlib.state.kinds import StoreKind
from streamlib.stores import Stores
from streamlib.topology import StoreDef


def test_every_queryable_kind_has_a_query_view_an_http_route_and_a_table_row_decoder():
    assert QUERYABLE_KINDS == (StoreKind.KV, StoreKind.WINDOW, StoreKind.SESSION)
    assert set(STORE_KINDS) == set(StoreKind)
    assert set(KEY_ROUTES) == set(QUERYABLE_KINDS)
    assert set(ROW_DECODERS) == set(QUERYABLE_KINDS)


def test_a_store_def_and_a_node_kind_take_a_kind_or_its_name():
    assert StoreDef("w", kind="window").kind is StoreKind.WINDOW
    assert StoreDef("k").kind is StoreKind.KV
    assert NodeKind("test_store_kinds_named", stores=("kv", StoreKind.SESSION)).stores == (
        StoreKind.KV, StoreKind.SESSION)
    with pytest.raises(ValueError, match=r"unknown store kind 'windw'; kinds: \['kv', 'window'"):
        StoreDef("w", kind="windw")


def test_stores_builders_make_typed_kinds_that_pickle_as_themselves():
    built = Stores.session_store_builder(Stores.persistent_session_store("s", 1000), Serdes.string(),
                                         Serdes.long()).build()
    assert built.kind is StoreKind.SESSION
    assert pickle.loads(pickle.dumps(StoreDef("s", built.kind))).kind is StoreKind.SESSION


def test_table_columns_follow_the_kind():
    kv = StoreColumns(StoreKind.KV, Serdes.string(), Serdes.long())
    session = StoreColumns(StoreKind.SESSION, Serdes.string(), Serdes.long())
    assert kv.ddl == "key string, value bigint"
    assert session.ddl == "key string, window_start bigint, window_end bigint, value bigint"
    assert StoreColumns.decode(session.encode()) == session
