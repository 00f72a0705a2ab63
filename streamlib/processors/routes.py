"""Per-path forwarding of a cached table whose updates feed a looked-up store.

A table node with descendants (in its sub-topology) that keep the rows another node
looks up in (``Topology.at_once_children``) must send them every update as it happens:
our lookup store is only as current as what reaches it, where Kafka Streams computes the
lookup from the cached table's own store (a value getter). Everything else below the
node gets the latest update per key once per commit, as from any cached table, and as
Kafka Streams forwards its cache's flush (a foreign-key join's left side sending one
subscription per commit, say, where that table also feeds the join's right side).

:func:`route_per_path` wires that: the node's emitter (``TableEmitter``) forwards each
update at once to its ``at_once`` children, and at the flush to its ``cached_route``
instead of its children. A store-less table step (a filter or map_values) on the way to
the lookup store that has other children too is on both routes: the at-once route's
processor keeps only the children on the way, and a copy of it with the others (or their
own copies) takes the flush. A node whose way down cannot be split so (a store-less step
of another kind) forwards every update at once, as all such nodes did before.
"""
from __future__ import annotations

from typing import Optional

from ..topology import SubTopology, Topology
from .base import Processor, ProcessorContext
from .registry import processor_for


def route_per_path(topology: Topology, sub: SubTopology, processors: dict[str, Processor],
                   context: ProcessorContext) -> None:
    """For each caching table node of ``sub`` with children that need every update,
    route per path, or else turn its caching off; copies of store-less steps join
    ``processors`` (so they are initialised and flushed), under ``<name>~cached``."""
    for name in sub.nodes:
        proc = processors[name]
        if not proc.caching:
            continue
        at_once = topology.at_once_children(name)
        if not at_once:
            continue
        node = topology.nodes[name]
        plan = (_cached_route(topology, name, at_once, processors)
                if proc.routes_per_path and getattr(node.params, "store", None) else None)
        if plan is None:
            proc.caching = False
            continue
        proc.at_once = tuple(processors[child] for child in at_once)
        proc.cached_route = _wire(topology, plan, processors, context)


#: a route as planned: the nodes the flush goes to, each with the plan below it when it is
#: a store-less step on both routes (a copy of it takes the flush), else None
_Plan = list[tuple[str, Optional["_Plan"]]]


def _cached_route(topology: Topology, name: str, at_once: list[str],
                  processors: dict[str, Processor]) -> Optional[_Plan]:
    """What the flush of ``name`` goes to, or None where a step on both routes cannot be
    copied."""
    plan: _Plan = []
    for child in topology.children(name):
        if child not in at_once:
            plan.append((child, None))        # off the way: the flush only
            continue
        node = topology.nodes[child]
        if node.stores:
            continue                          # on the way, with a store: it caches for itself
        rest = _cached_route(topology, child, topology.at_once_children(child), processors)
        if rest is None or (rest and not (processors[child].routes_per_path and len(node.parents) == 1)):
            return None
        if rest:
            plan.append((child, rest))
    return plan


def _wire(topology: Topology, plan: _Plan, processors: dict[str, Processor],
          context: ProcessorContext) -> list[Processor]:
    """The processors of a planned route, copies made and the originals' children cut to
    the way to the lookup store."""
    route = []
    for child, below in plan:
        if below is None:
            route.append(processors[child])
            continue
        original = processors[child]
        copy = processor_for(original.node)(original.node, context)
        copy.send_old_values, copy.caching = original.send_old_values, original.caching
        copy.children = _wire(topology, below, processors, context)
        processors[f"{child}~cached"] = copy
        way = set(topology.at_once_children(child))
        original.children = [c for c in original.children if c.name in way]
        route.append(copy)
    return route
