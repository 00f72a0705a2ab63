"""Which processor runs each node kind: registered next to the processor class.

Examples
--------
>>> from streamlib.node_kinds import FILTER
>>> processor_class(FILTER).__name__
'FilterProcessor'
"""
from __future__ import annotations

from typing import Callable, TypeVar

from ..node_kinds import NodeKind
from ..topology import Node, TopologyError
from .base import Processor

#: node kind -> the processor class that runs its nodes in a task
PROCESSORS: dict[NodeKind, type[Processor]] = {}

P = TypeVar("P", bound=type[Processor])


def processes(*kinds: NodeKind) -> Callable[[P], P]:
    """Class decorator: the processor runs nodes of ``kinds`` (one class per kind)."""

    def register(cls: P) -> P:
        for kind in kinds:
            known = PROCESSORS.get(kind)
            if known is not None and known is not cls:
                raise ValueError(f"node kind {kind.name!r} already runs as {known.__name__}")
            PROCESSORS[kind] = cls
        return cls

    return register


def processor_class(kind: NodeKind) -> type[Processor]:
    """The processor class registered for ``kind``; a KeyError if there is none."""
    return PROCESSORS[kind]  # the package's __init__ imported (so registered) every built-in


def processor_for(node: Node) -> type[Processor]:
    """The processor class of ``node``, or a TopologyError naming the node."""
    spec = node.spec
    if spec.spark_only:
        raise TopologyError(f"{node.name} is a Spark Column expression ({spec.name}); it runs only "
                            "through Spark (Streams), not in TopologyTestDriver")
    try:
        return processor_class(spec)
    except KeyError:
        raise TopologyError(f"{node.name}: no processor for node kind {node.kind!r}") from None
