"""The logical graph a ``StreamsBuilder`` writes, and its split into sub-topologies.

Nodes are plain, picklable specs (a ``kind`` and its typed ``params``, see
:mod:`streamlib.node_params`); what a kind is (source, sink, table step,
time-aware...) is its :class:`~streamlib.node_kinds.NodeKind`,
and the processors that run them live in :mod:`streamlib.processors`. A sub-topology
is a connected part of the graph; repartition steps cut the graph, exactly where Kafka Streams
would write to a repartition topic (under Spark: a shuffle).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

from .node_kinds import (FK_LEFT_REPLICA, FK_RESPONSE_JOIN, TABLE_FILTER, NodeKind, UnknownNodeKind,
                         node_kind)
from .node_params import NoParams, serde_defaults
from .state.kinds import StoreKind

if TYPE_CHECKING:
    from .config import StreamsConfig


class TopologyError(ValueError):
    """A mistake in the topology, found at ``build()`` or ``start()``."""


@dataclass
class Node:
    """One step of the logical graph."""

    name: str
    kind: str
    parents: list[str] = field(default_factory=list)
    #: an instance of ``spec.params`` (:mod:`streamlib.node_params`)
    params: Any = field(default_factory=NoParams)
    stores: tuple[str, ...] = ()

    @property
    def spec(self) -> NodeKind:
        """The registered spec of this node's kind (roles, stores)."""
        return node_kind(self.kind)

    def describe_kind(self) -> str:
        return self.spec.describe_as()


@dataclass(frozen=True)
class StoreDef:
    """A state store: its name, kind and serdes; its changelog is
    ``<application_id>-<name>-changelog`` when ``logging``.

    ``kind`` is a :class:`~streamlib.state.kinds.StoreKind` (its name is accepted too);
    window stores know their window size (for ``Windowed`` ends) and every windowed
    store its retention (how long windows are kept after their start, or sessions
    after their end, behind stream time)."""

    name: str
    kind: StoreKind = StoreKind.KV
    key_serde: Any = None
    value_serde: Any = None
    logging: bool = True
    queryable: bool = True
    #: False: every update is forwarded at once even when the application caches
    caching: bool = True
    window_size_ms: int = 0
    retention_ms: int = 0
    #: window stores only: keep every record put, several per key and time (Kafka's
    #: ``retainDuplicates``, the stores of a stream–stream join)
    retain_duplicates: bool = False
    #: global tables only: the topic every task's replica of the store is read from
    global_topic: Optional[str] = None
    #: the changelog topic's configs beyond streamlib's own (``Materialized.with_logging_enabled``)
    changelog_config: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", StoreKind.of(self.kind))

    def changelog_topic_config(self) -> dict[str, str]:
        """The configs its changelog topic is created with: compacted, then the user's."""
        return {"cleanup.policy": "compact", **dict(self.changelog_config)}


@dataclass
class SubTopology:
    """A connected part of the graph: what one task runs for one partition."""

    id: int
    nodes: list[str]
    source_topics: list[str]
    repartition_inputs: list[str]
    stores: list[str]
    #: a node keeps task state without a store (``NodeKind.task_state``)
    task_state: bool = False

    @property
    def stateful(self) -> bool:
        return bool(self.stores) or self.task_state

    @property
    def input_topics(self) -> list[str]:
        return self.source_topics + self.repartition_inputs


class Topology:
    """A built topology: nodes, stores and sub-topologies.

    Examples
    --------
    >>> from streamlib import StreamsBuilder
    >>> builder = StreamsBuilder()
    >>> builder.stream("in").filter(lambda k, v: v).to("out")
    >>> print(builder.build().describe())  # doctest: +ELLIPSIS
    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000000 (topics: [in])
    ...
    """

    def __init__(self, nodes: dict[str, Node], stores: dict[str, StoreDef]):
        self.nodes = nodes
        self.stores = stores
        self._validate()
        self.subtopologies = _split(nodes, stores)

    # -- queries used by the runtime and the Spark plan -------------------------------------
    def children(self, name: str) -> list[str]:
        return [n.name for n in self.nodes.values() if name in n.parents]

    def source_topics(self) -> list[str]:
        """External topics the application reads, in order of first use."""
        topics: list[str] = []
        for node in self.nodes.values():
            if node.spec.source and not node.params.internal:
                topics.extend(t for t in node.params.topics if t not in topics)
        return topics

    def global_stores(self) -> dict[str, str]:
        """Global tables' stores and their topics (store name -> topic)."""
        return {name: d.global_topic for name, d in self.stores.items() if d.global_topic}

    def global_stores_of(self, sub: SubTopology) -> dict[str, str]:
        """The global stores the nodes of ``sub`` look up (store name -> topic)."""
        used = {getattr(self.nodes[name].params, "global_store", None) for name in sub.nodes}
        return {name: topic for name, topic in self.global_stores().items() if name in used}

    def sink_topics(self) -> list[str]:
        return sorted({n.params.topic for n in self.nodes.values()
                       if n.spec.sink and not n.spec.repartition})

    def sends_old_values(self, name: str) -> bool:
        """Whether a KTable node must forward old values (Kafka Streams' ``sendOldValues``):
        true when a child (through filters, map_values and table–table joins) re-groups,
        suppresses or is the kept side of a left/outer join (Kafka's ``doJoin``), and for
        a table filter below a :meth:`materialized_table` (Kafka's ``KTableFilter`` asks
        its parent, so that it drops deletes of rows that never were); false when its
        changes only go ``to_stream()``."""
        node = self.nodes[name]
        if node.spec is TABLE_FILTER and any(self.materialized_table(p) for p in node.parents):
            return True
        for child in self.children(name):
            spec = self.nodes[child].spec
            if spec.new_value_only:
                continue
            if getattr(self.nodes[child].params, "parent_sends_old_values", False):
                return True  # a left/outer join side needs to see whether a row existed
            if not spec.derived_table or self.sends_old_values(child):
                return True
        return False

    def forwards_at_once(self, name: str) -> bool:
        """Whether the table node ``name`` must forward every update as it happens, even
        with caching: a descendant in its sub-topology keeps the rows another node looks
        up in (a filter or map_values given a store for a join). Kafka Streams computes
        such a lookup from the parent's store (a value getter), which is current at every
        record; our descendant's store is only as current as what reaches it, so nothing
        may be held back on the way (the lookup would miss rows of the same commit)."""
        sub = self.subtopology_of(name)
        for child in self.children(name):
            if child not in sub.nodes:
                continue
            store = getattr(self.nodes[child].params, "store", None)
            spec = self.nodes[child].spec
            if store and spec.derived_table and spec.materializable and any(
                    store in other.stores for other_name, other in self.nodes.items() if other_name != child):
                return True
            if self.forwards_at_once(child):
                return True
        return False

    def fk_left_value_topics(self) -> set[str]:
        """The topics a foreign-key join's left-value replica reads. Kafka Streams answers
        a subscription in the left table's own task, against its store as it is then (a
        response for an older left value is stale); here the left values travel to a
        replica beside the responses, so they are applied as they are written, before any
        response queued after the left change is taken (the driver's ``_write``; a
        looping stage under Spark, ``spark.tasks.run_looping_tasks``)."""
        return {topic for node in self.nodes.values() if node.kind == FK_LEFT_REPLICA.name
                for parent in node.parents for topic in self.nodes[parent].params.topics}

    def fk_self_join_inputs(self, name: str) -> Optional[frozenset[str]]:
        """For a foreign-key join's response join ``name``: the topics of its left values
        and of its answers when one sub-topology writes both (a table joined with itself,
        or with a table of the same sub-topology), else None. Such a sub-topology sends
        its left values and answers in the order Kafka Streams' driver would take them,
        and its result's task takes the two topics as one sequence in that order."""
        node = self.nodes[name]
        if node.kind != FK_RESPONSE_JOIN.name:
            return None
        replica = next(n for n in self.nodes.values()
                       if n.kind == FK_LEFT_REPLICA.name and n.params.store == node.params.store)
        topics = [t for parent in (*replica.parents, *node.parents) for t in self.nodes[parent].params.topics]
        writers = {sub.id for sub in self.subtopologies for n in sub.nodes
                   if self.nodes[n].spec.repartition and self.nodes[n].params.topic in topics}
        return frozenset(topics) if len(writers) == 1 else None

    def materialized_table(self, name: str) -> bool:
        """Whether the table node ``name`` makes is materialized in Kafka Streams' sense
        (``NodeKind.materialized``): it can send old values without a store added for it."""
        node = self.nodes[name]
        how = node.spec.materialized
        store = getattr(node.params, "store", None)
        named = store is not None and store in self.stores and self.stores[store].queryable
        if how == "always" or (how in ("named", "named or parent") and named):
            return True
        if how in ("named or parent", "parent"):
            return any(self.materialized_table(p) for p in node.parents)
        return False

    def batch_reader(self, sub: SubTopology) -> Optional[tuple[Node, Node]]:
        """``(source, step)`` when ``sub``'s only source reads one topic (no change pairs,
        no timestamp extractor) and ``step`` alone reads that source: the step may then
        take a batch's rows at once (its processor's ``takes_batches``, when the source's
        ``takes_table`` accepts the rows), and, behind a repartition whose bytes streamlib
        wrote itself, be lowered so under Spark (:mod:`streamlib.spark.lowerings`)."""
        sources = [self.nodes[name] for name in sub.nodes if self.nodes[name].spec.source]
        if len(sources) != 1:
            return None
        source = sources[0]
        params = source.params
        if params.changes or params.timestamp_extractor or len(params.topics) != 1:
            return None
        children = self.children(source.name)
        return (source, self.nodes[children[0]]) if len(children) == 1 else None

    def resolve(self, config: "StreamsConfig") -> "Topology":
        """This topology as it runs with ``config``: every serde left ``None`` (the
        application's default) in a node's params or a store is set to the config's
        default. A new topology unless nothing was left unset (then ``self``): the
        topology a user built stays as it was, so it may run again with other defaults
        (a ``TopologyTestDriver`` and a ``Streams`` application, say)."""
        defaults = {"key": config.default_key_serde, "value": config.default_value_serde}
        nodes, stores, changed = {}, {}, False
        for name, node in self.nodes.items():
            unset = {field_name: defaults[which] for field_name, which in serde_defaults(type(node.params))
                     if getattr(node.params, field_name) is None}
            nodes[name] = replace(node, params=replace(node.params, **unset)) if unset else node
            changed = changed or bool(unset)
        for name, store in self.stores.items():
            unset = {f"{which}_serde": defaults[which] for which in ("key", "value")
                     if getattr(store, f"{which}_serde") is None}
            stores[name] = replace(store, **unset) if unset else store
            changed = changed or bool(unset)
        if not changed:
            return self
        resolved = Topology.__new__(Topology)
        resolved.nodes, resolved.stores, resolved.subtopologies = nodes, stores, self.subtopologies
        return resolved

    def subtopology_of(self, node_name: str) -> SubTopology:
        return next(s for s in self.subtopologies if node_name in s.nodes)

    def subtopology_for_input(self, topic: str) -> list[SubTopology]:
        return [s for s in self.subtopologies if topic in s.input_topics]

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    # -- description ------------------------------------------------------------------
    def describe(self, application_id: Optional[str] = None) -> str:
        """Sub-topologies with their sources, processors, stores and sinks, in the
        layout of Kafka Streams' ``TopologyDescription``, plus changelog topics."""
        app = application_id or "<application_id>"
        lines = ["Topologies:"]
        for sub in self.subtopologies:
            lines.append(f"   Sub-topology: {sub.id}")
            for name in sub.nodes:
                node = self.nodes[name]
                kids = [c for c in self.children(name)]
                spec = node.spec
                if spec.source:
                    topics = ", ".join(app + "-" + t if node.params.internal else t
                                       for t in node.params.topics)
                    head = f"    Source: {name} (topics: [{topics}])"
                elif spec.sink:
                    topic = node.params.topic
                    if spec.repartition:
                        topic = f"{app}-{topic}"
                    head = f"    Sink: {name} (topic: {topic})"
                else:
                    head = f"    Processor: {name} (stores: [{', '.join(node.stores)}])"
                lines.append(head)
                lines.append(f"      --> {', '.join(kids) if kids else 'none'}")
                lines.append(f"      <-- {', '.join(node.parents) if node.parents else 'none'}")
            for store in sub.stores:
                if self.stores[store].logging:
                    lines.append(f"    Changelog: {app}-{store}-changelog (store: {store})")
        for index, (source, table) in enumerate(self._global_pairs(), start=len(self.subtopologies)):
            topics = ", ".join(self.nodes[source].params.topics)
            lines.append(f"   Sub-topology: {index} for global store (will not generate tasks)")
            lines.append(f"    Source: {source} (topics: [{topics}])")
            lines.append(f"      --> {table}")
            lines.append(f"    Processor: {table} (stores: [{', '.join(self.nodes[table].stores)}])")
            lines.append("      --> none")
            lines.append(f"      <-- {source}")
        return "\n".join(lines) + "\n"

    def _global_pairs(self) -> list[tuple[str, str]]:
        # the table step of a global table is the one that follows its source
        return [(node.parents[0], node.name) for node in self.nodes.values()
                if node.spec.global_table and node.parents]

    def __str__(self) -> str:
        return self.describe()

    # -- checks ------------------------------------------------------------------------
    def check_copartitioned(self, partitions: Mapping[str, int]) -> None:
        """Raise unless every stateful sub-topology reads source topics with one partition
        count: task ``i`` reads partition ``i`` of each, so a key must land on the same
        partition number in all of them (Kafka Streams' co-partitioning rule). Inputs
        whose key changed are repartitioned to the common count; only a repartition
        with a fixed ``num_partitions`` takes part in the check.
        ``partitions`` maps each source topic to its partition count."""
        for sub in self.subtopologies:
            counts = {topic: partitions[topic] for topic in sub.source_topics}
            for name in sub.nodes:   # a repartition given a fixed count cannot adapt either
                node = self.nodes[name]
                if node.spec.source and node.params.internal and node.params.num_partitions:
                    counts[node.params.topics[0]] = node.params.num_partitions
            if not sub.stateful or len(set(counts.values())) <= 1:
                continue
            node = next(name for name in sub.nodes if self.nodes[name].stores or self.nodes[name].spec.task_state)
            listed = ", ".join(f"{topic!r} ({n} partitions)" for topic, n in counts.items())
            raise TopologyError(
                f"{node}: its input topics are not co-partitioned: {listed}; give them the same "
                "number of partitions, or repartition() the stream before this step")

    def _validate(self) -> None:
        for node in self.nodes.values():
            try:
                spec = node.spec
            except UnknownNodeKind:
                raise TopologyError(f"{node.name}: unknown node kind {node.kind!r}") from None
            for parent in node.parents:
                if parent not in self.nodes:
                    raise TopologyError(f"{node.name}: unknown parent {parent}")
                if self.nodes[parent].spec.sink and not spec.source:
                    raise TopologyError(
                        f"{node.name}: cannot follow {parent}, a terminal step that writes to a topic")
            for store in node.stores:
                if store not in self.stores:
                    raise TopologyError(f"{node.name}: unknown store {store!r}")
                if self.stores[store].kind not in spec.stores:
                    raise TopologyError(f"{node.name}: a {spec.name} step uses stores of kinds "
                                        f"{[k.value for k in spec.stores]}, not the "
                                        f"{self.stores[store].kind.value} store {store!r}")
            if not isinstance(node.params, spec.params):
                raise TopologyError(f"{node.name}: a {spec.name} node takes {spec.params.__name__}, "
                                    f"not {type(node.params).__name__}")


def _split(nodes: dict[str, Node], stores: dict[str, StoreDef]) -> list[SubTopology]:
    """Connected components over parent edges and shared stores; repartitions cut.
    Global tables' nodes belong to no sub-topology."""
    nodes = {name: node for name, node in nodes.items() if not node.spec.global_table}
    parent_of: dict[str, str] = {name: name for name in nodes}

    def find(x: str) -> str:
        while parent_of[x] != x:
            parent_of[x] = parent_of[parent_of[x]]
            x = parent_of[x]
        return x

    def union(a: str, b: str) -> None:
        parent_of[find(a)] = find(b)

    store_owner: dict[str, str] = {}
    for node in nodes.values():
        for parent in node.parents:
            union(node.name, parent)
        for store in node.stores:
            if store in store_owner:
                union(node.name, store_owner[store])
            store_owner[store] = node.name
    # Sources of the same external topic read the same records: one sub-topology.
    topic_reader: dict[str, str] = {}
    for node in nodes.values():
        if node.spec.source:
            for topic in node.params.topics:
                if topic in topic_reader:
                    union(node.name, topic_reader[topic])
                topic_reader[topic] = node.name

    groups: dict[str, list[str]] = {}
    for name in nodes:  # insertion order keeps Kafka Streams' numbering
        groups.setdefault(find(name), []).append(name)
    subs = []
    for index, members in enumerate(groups.values()):
        sources = [nodes[m] for m in members if nodes[m].spec.source]
        external = [t for s in sources if not s.params.internal for t in s.params.topics]
        internal = [t for s in sources if s.params.internal for t in s.params.topics]
        sub_stores = sorted({s for m in members for s in nodes[m].stores})
        subs.append(SubTopology(index, members, external, internal, sub_stores,
                                any(nodes[m].spec.task_state for m in members)))
    return subs
