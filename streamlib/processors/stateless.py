"""Record-at-a-time steps that keep no state."""
from __future__ import annotations

from ..node_kinds import (BRANCH, BRANCH_CHILD, FILTER, FLAT_MAP, FLAT_MAP_VALUES, FOREACH, MAP,
                          MAP_VALUES, MERGE, PEEK, SELECT_KEY, TO_STREAM)
from .base import Processor
from .record import Change, Record
from .registry import processes


@processes(FILTER)
class FilterProcessor(Processor):
    def init(self) -> None:
        self.predicate = self.node.params.predicate
        self.keep_when = not self.node.params.negate

    def process(self, record: Record) -> None:
        if bool(self.predicate(record.key, record.value)) == self.keep_when:
            self.forward(record)


@processes(MAP)
class MapProcessor(Processor):
    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        key, value = self.mapper(record.key, record.value)
        self.forward(record.with_(key, value))


@processes(MAP_VALUES)
class MapValuesProcessor(Processor):
    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        self.forward(record.with_value(self.mapper(record.value)))


@processes(FLAT_MAP)
class FlatMapProcessor(Processor):
    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        for key, value in self.mapper(record.key, record.value):
            self.forward(record.with_(key, value))


@processes(FLAT_MAP_VALUES)
class FlatMapValuesProcessor(Processor):
    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        for value in self.mapper(record.value):
            self.forward(record.with_value(value))


@processes(SELECT_KEY)
class SelectKeyProcessor(Processor):
    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        self.forward(record.with_(self.mapper(record.key, record.value), record.value))


@processes(PEEK)
class PeekProcessor(Processor):
    def init(self) -> None:
        self.action = self.node.params.action

    def process(self, record: Record) -> None:
        self.action(record.key, record.value)
        self.forward(record)


@processes(MERGE, BRANCH_CHILD)
class PassThroughProcessor(Processor):
    """Merge points and branch children: forward as is."""

    def process(self, record: Record) -> None:
        self.forward(record)


@processes(BRANCH)
class BranchProcessor(Processor):
    """Send each record to the first branch whose predicate matches (else the default)."""

    def init(self) -> None:
        self.predicates = self.node.params.predicates
        self.with_default = self.node.params.with_default
        self.children.sort(key=lambda child: child.node.params.index)

    def process(self, record: Record) -> None:
        for index, predicate in enumerate(self.predicates):
            if predicate(record.key, record.value):
                self.forward_to(self.children[index], record)
                return
        if self.with_default:
            self.forward_to(self.children[len(self.predicates)], record)


@processes(TO_STREAM)
class ToStreamProcessor(Processor):
    """Table changes become plain records (the new value; ``None`` for a delete)."""

    def init(self) -> None:
        self.mapper = self.node.params.mapper

    def process(self, record: Record) -> None:
        value = record.value.new if isinstance(record.value, Change) else record.value
        if self.mapper is None:
            self.forward(record.with_value(value))
        else:
            self.forward(record.with_(self.mapper(record.key, value), value))


@processes(FOREACH)
class ForeachProcessor(PeekProcessor):
    """Terminal ``foreach``: a peek with no children."""
