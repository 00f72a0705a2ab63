"""The mutable graph a ``StreamsBuilder`` grows; ``build()`` freezes it into a ``Topology``."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Optional

from ..node_kinds import REPARTITION, SOURCE, NodeKind
from ..serdes import Serde
from ..topology import Node, StoreDef, Topology, TopologyError


def require_functions(step: str, **functions: Any) -> None:
    """Refuse a missing function at the DSL call that takes it, as Kafka Streams does
    (its ``NullPointerException``), not at the first record that would call it."""
    for what, function in functions.items():
        if function is None:
            raise TypeError(f"{step}(): {what} must be a function, not None")


class GraphBuilder:
    """Adds nodes with Kafka Streams-style generated names (``KSTREAM-FILTER-0000000003``)."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.stores: dict[str, StoreDef] = {}
        self._index = 0

    def next_name(self, prefix: str) -> str:
        name = f"{prefix}-{self._index:010d}"
        self._index += 1
        return name

    def add(self, prefix: str, kind: NodeKind, parents: list[str], name: Optional[str] = None,
            stores: tuple[str, ...] = (), numbered: bool = True, **params: Any) -> str:
        """Add a node of ``kind`` with ``params`` (the fields of ``kind.params``) and return
        its name. A node named by the user takes a number too, unless not ``numbered``
        (Kafka's ``process``)."""
        node_params = kind.params(**params)
        node_name = name or self.next_name(prefix)
        if name is not None and numbered:
            self._index += 1
        if node_name in self.nodes:
            raise TopologyError(f"a processor named {node_name!r} already exists")
        self.nodes[node_name] = Node(node_name, kind.name, list(parents), node_params, stores)
        return node_name

    def add_store(self, store: StoreDef, user_named: bool, step: str) -> None:
        """Register the store of a new ``step`` (a node prefix); names are unique."""
        if store.name in self.stores:
            what = "store name" if user_named else "internal store"
            owner = next((n.name for n in self.nodes.values() if store.name in n.stores),
                         "a store added with add_state_store()")
            raise TopologyError(f"{what} {store.name!r} of a new {step} step is already the store of "
                                f"{owner}; store names must be unique")
        self.stores[store.name] = store

    def internal_store_name(self, prefix: str, owner: Optional[str] = None) -> str:
        """A generated store name: numbered like the next node. For a store given later
        to the existing node ``owner`` (a join's lookup store), the owner's own number
        when that is taken: both tables of a join may need one, of the same step kind."""
        name = f"{prefix}-STATE-STORE-{self._index:010d}"
        if owner is not None and name in self.stores:
            name = f"{prefix}-STATE-STORE-{owner.rsplit('-', 1)[1]}"
        return name

    def add_repartition(self, parent: str, base: str, key_serde: Optional[Serde], value_serde: Optional[Serde],
                        num_partitions: Optional[int] = None, changes: bool = False) -> str:
        """Write ``parent``'s records to the topic ``<base>-repartition`` and read them back
        (nodes ``<base>-sink`` and ``<base>-source``; ``changes``: a table's old and new
        values); returns the source node. A name another repartition has is refused."""
        topic = f"{base}-repartition"
        if any(n.spec.repartition and n.params.topic == topic for n in self.nodes.values()):
            raise TopologyError(f"repartition name {base!r} is used twice")
        both = dict(key_serde=key_serde, value_serde=value_serde, num_partitions=num_partitions, changes=changes)
        self.add("KSTREAM-SINK", REPARTITION, [parent], name=f"{base}-sink", topic=topic, **both)
        return self.add("KSTREAM-SOURCE", SOURCE, [], name=f"{base}-source", topics=[topic], internal=True,
                        **both)

    def topic_store_name(self, topic: str) -> str:
        """The generated store name of a table read from ``topic``, as Kafka Streams makes
        it: after the topic, numbered before the table's nodes (taking an index)."""
        name = f"{topic}-STATE-STORE-{self._index:010d}"
        self._index += 1
        return name

    def build(self) -> Topology:
        # Here, not when such a node is added: a join added later may give a table above
        # it a store (``KTable._lookup_store``), cached by default.
        for name, node in self.nodes.items():
            if node.spec.every_update:
                self._without_caching(node.parents)
        return Topology(dict(self.nodes), dict(self.stores))

    def _without_caching(self, names: Iterable[str]) -> None:
        """Turn off caching in the stores of ``names`` and their ancestors: a node that
        needs every update must not get only the latest per commit."""
        todo, seen = list(names), set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for store in self.nodes[name].stores:
                self.stores[store] = replace(self.stores[store], caching=False)
            todo.extend(self.nodes[name].parents)
