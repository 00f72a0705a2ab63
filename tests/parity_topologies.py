"""Random DSL topologies for the driver-against-Spark property test
(``test_parity_topologies.py``): a small description of what to build (its ``repr`` is
valid Python and :func:`dsl` renders it as DSL calls, so a failure report shows the
topology), a hypothesis strategy that draws one, and :func:`build` that turns it into a
``Topology``, naming each output topic and store.

A description is a tuple of outputs; each reads from expressions over the input topics
``s1``, ``s2`` (streams), ``t1``, ``t2`` (tables) and ``g1`` (a global table), all
string-keyed with string values from the key alphabet, so a value can become a key
(re-keying, grouping by value, foreign keys, global lookups). Equal sub-expressions are
built once (a topic is read once per builder, as Kafka requires).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Optional, Union

from hypothesis import strategies as st

from streamlib import (Consumed, JoinWindows, Joined, Materialized, Produced, Serdes, SessionWindows,
                       SlidingWindows, StreamsBuilder, Suppressed, TimeWindows, Topology)

S, L = Serdes.string(), Serdes.long()
STREAMS, TABLES, GLOBAL = ("s1", "s2"), ("t1", "t2"), "g1"
KEYS = ("a", "b", "c")

# -- what a topology is made of ---------------------------------------------------------


@dataclass(frozen=True)
class Src:
    """``builder.stream(topic)``."""
    topic: str


@dataclass(frozen=True)
class Step:
    """A stateless step on a stream: ``filter`` (value != "b"), ``map_values`` (append
    "!"), ``select_key`` (key := value), ``swap`` (``map``: key and value trade places),
    ``flat_map`` (each record twice, the second re-keyed to "c"), ``peek``."""
    parent: "Stream"
    op: str


@dataclass(frozen=True)
class Merge:
    """``a.merge(b)``."""
    a: "Stream"
    b: "Stream"


@dataclass(frozen=True)
class Branch:
    """``parent.split().branch(value == "a").default_branch()``: the first (``index`` 0)
    or the default branch (1)."""
    parent: "Stream"
    index: int


Stream = Union[Src, Step, Merge, Branch]


@dataclass(frozen=True)
class Table:
    """``builder.table(topic)`` then stateless table steps: ``filter`` (value != "b"),
    ``map_values`` (value := the next key, so foreign keys move)."""
    topic: str
    ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class Window:
    """``kind``: tumbling / hopping (advance size/2) / sliding / session (gap ``size``)."""
    kind: str
    size: int
    grace: int


@dataclass(frozen=True)
class Aggregate:
    """``group_by_key`` (``by_value``: ``group_by`` value) then ``op`` (count / reduce /
    aggregate), windowed or not, with ``suppress(until_window_closes)`` or not."""
    stream: Stream
    by_value: bool
    op: str
    window: Optional[Window] = None
    suppress: bool = False


@dataclass(frozen=True)
class StreamJoin:
    """``left.<kind>(right, joiner, JoinWindows.of_time_difference(within, grace))``."""
    left: Stream
    right: Stream
    kind: str
    within: int
    grace: int


@dataclass(frozen=True)
class TableLookup:
    """``stream.<kind>(table, joiner, Joined.with_(grace=grace))`` (kind join / left_join)."""
    stream: Stream
    table: Table
    kind: str
    grace: int = 0


@dataclass(frozen=True)
class TableJoin:
    """``left.<kind>(right, joiner)`` on the key, or by foreign key (the left value)."""
    left: Table
    right: Table
    kind: str
    foreign_key: bool = False


@dataclass(frozen=True)
class GlobalLookup:
    """``stream.<kind>(global_table(g1), key_selector=value, joiner)``."""
    stream: Stream
    kind: str


@dataclass(frozen=True)
class ToTopic:
    """``stream.to(out)``."""
    stream: Stream


Output = Union[Aggregate, StreamJoin, TableLookup, TableJoin, GlobalLookup, ToTopic]
#: outputs whose result is a table: compared as the final value per key (a commit under
#: Spark emits the latest update per key, the driver every update: Kafka's record cache)
TABLE_OUTPUTS = (Aggregate, TableJoin)

# -- the strategy ------------------------------------------------------------------------


def streams(depth: int = 2) -> st.SearchStrategy:
    base = st.builds(Src, st.sampled_from(STREAMS))
    if depth == 0:
        return base
    inner = streams(depth - 1)
    return st.one_of(
        base,
        st.builds(Step, inner, st.sampled_from(["filter", "map_values", "select_key", "swap", "flat_map", "peek"])),
        st.builds(Merge, st.builds(Src, st.just("s1")), st.builds(Src, st.just("s2"))),
        st.builds(Branch, inner, st.integers(0, 1)))


tables = st.builds(Table, st.sampled_from(TABLES),
                   st.lists(st.sampled_from(["filter", "map_values"]), max_size=2).map(tuple))
windows = st.builds(Window, st.sampled_from(["tumbling", "hopping", "sliding", "session"]),
                    st.sampled_from([4_000, 10_000]), st.sampled_from([0, 3_000]))
outputs = st.one_of(
    st.builds(Aggregate, streams(), st.booleans(), st.sampled_from(["count", "reduce", "aggregate"]),
              st.none() | windows, st.booleans()).map(
        lambda a: a if a.window or not a.suppress else Aggregate(a.stream, a.by_value, a.op)),
    st.builds(StreamJoin, streams(1), streams(1), st.sampled_from(["join", "left_join", "outer_join"]),
              st.sampled_from([2_000, 5_000]), st.sampled_from([0, 3_000])),
    st.builds(TableLookup, streams(1), tables, st.sampled_from(["join", "left_join"]), st.sampled_from([0, 3_000])),
    st.builds(TableJoin, tables, tables, st.sampled_from(["join", "left_join", "outer_join"]), st.booleans()),
    st.builds(GlobalLookup, streams(1), st.sampled_from(["join", "left_join"])),
    st.builds(ToTopic, streams()))


def _valid(outputs_: tuple) -> bool:
    for out in outputs_:
        if isinstance(out, StreamJoin) and _topics(out.left) & _topics(out.right):
            return False     # a self-join: see topologies()
        if isinstance(out, TableJoin) and out.foreign_key and out.kind == "outer_join":
            return False     # Kafka has no foreign-key outer join
        if isinstance(out, TableJoin) and not out.foreign_key and out.left.topic == out.right.topic:
            return False
    return True


#: 1 to 3 outputs. Left out, on purpose: a stream-stream join of a stream with itself
#: (both sides read one topic, one side through a repartition: which side a record
#: reaches first is the order of two sub-topologies' tasks, which Kafka Streams leaves
#: open too), and wall-clock punctuation (the driver's clock is not Spark's).
topologies = st.lists(outputs, min_size=1, max_size=3).map(tuple).filter(_valid)


def _topics(stream: Stream) -> set[str]:
    if isinstance(stream, Src):
        return {stream.topic}
    if isinstance(stream, Merge):
        return _topics(stream.a) | _topics(stream.b)
    return _topics(stream.parent)


# -- rendering ---------------------------------------------------------------------------


def dsl(topology: tuple) -> str:
    """The description as DSL calls, one output a line."""
    return "\n".join(f"out{i}: {_render_output(out)}" for i, out in enumerate(topology))


def _render_stream(s: Stream) -> str:
    if isinstance(s, Src):
        return s.topic
    if isinstance(s, Step):
        return f"{_render_stream(s.parent)}.{s.op}"
    if isinstance(s, Merge):
        return f"{_render_stream(s.a)}.merge({_render_stream(s.b)})"
    return f"{_render_stream(s.parent)}.split[{'value==a' if s.index == 0 else 'default'}]"


def _render_table(t: Table) -> str:
    return "".join([f"table({t.topic})"] + [f".{op}" for op in t.ops])


def _render_output(out: Output) -> str:
    if isinstance(out, Aggregate):
        group = "group_by(value)" if out.by_value else "group_by_key"
        window = "" if out.window is None else (f".windowed_by({out.window.kind} {out.window.size}"
                                                f" grace {out.window.grace})")
        return (f"{_render_stream(out.stream)}.{group}{window}.{out.op}"
                + (".suppress(until_window_closes)" if out.suppress and out.window else ""))
    if isinstance(out, StreamJoin):
        return (f"{_render_stream(out.left)}.{out.kind}({_render_stream(out.right)}, "
                f"within {out.within} grace {out.grace})")
    if isinstance(out, TableLookup):
        return f"{_render_stream(out.stream)}.{out.kind}({_render_table(out.table)}, grace {out.grace})"
    if isinstance(out, TableJoin):
        how = ", foreign_key=value" if out.foreign_key else ""
        return f"{_render_table(out.left)}.{out.kind}({_render_table(out.right)}{how})"
    if isinstance(out, GlobalLookup):
        return f"{_render_stream(out.stream)}.{out.kind}(global_table(g1), key=value)"
    return f"{_render_stream(out.stream)}.to"


# -- building ----------------------------------------------------------------------------

def _next_key(value):
    if value is None or value[:1] not in KEYS:
        return value
    return KEYS[(KEYS.index(value[0]) + 1) % len(KEYS)]


def _join_values(a, b) -> str:
    return f"{a}|{b}"


def _concat(aggregate, value) -> str:
    return aggregate + (value or "")


def _fold(key, value, aggregate) -> str:
    return aggregate + (value or "")


def _merge_sessions(key, a, b) -> str:
    return a + b


def _empty() -> str:
    return ""


STREAM_STEPS = {
    "filter": lambda s: s.filter(lambda k, v: v != "b"),
    "map_values": lambda s: s.map_values(lambda v: None if v is None else v + "!"),
    "select_key": lambda s: s.select_key(lambda k, v: None if v is None else v[0]),
    "swap": lambda s: s.map(lambda k, v: (None if v is None else v[0], k)),
    "flat_map": lambda s: s.flat_map(lambda k, v: [(k, v), ("c", v)]),
    "peek": lambda s: s.peek(lambda k, v: None),
}
TABLE_STEPS = {
    "filter": lambda t: t.filter(lambda k, v: v != "b"),
    "map_values": lambda t: t.map_values(_next_key),
}


class _Builder:
    def __init__(self):
        self.builder = StreamsBuilder()
        self.built: dict = {}
        self.stores: list[str] = []

    def stream(self, s: Stream):
        if s in self.built:
            return self.built[s]
        if isinstance(s, Src):
            made = self.builder.stream(s.topic, consumed=Consumed.with_(S, S))
        elif isinstance(s, Step):
            made = STREAM_STEPS[s.op](self.stream(s.parent))
        elif isinstance(s, Merge):
            made = self.stream(s.a).merge(self.stream(s.b))
        else:
            split = ("split", s.parent)
            if split not in self.built:
                self.built[split] = (self.stream(s.parent).split()
                                     .branch(lambda k, v: v == "a", name="-a").default_branch(name="-rest"))
            branches = list(self.built[split].values())
            made = branches[s.index]
        self.built[s] = made
        return made

    def table(self, t: Table):
        if t in self.built:
            return self.built[t]
        if t.ops:
            made = TABLE_STEPS[t.ops[-1]](self.table(Table(t.topic, t.ops[:-1])))
        else:
            made = self.builder.table(t.topic, consumed=Consumed.with_(S, S))
        self.built[t] = made
        return made

    def global_table(self):
        if GLOBAL not in self.built:
            self.built[GLOBAL] = self.builder.global_table(GLOBAL, consumed=Consumed.with_(S, S))
        return self.built[GLOBAL]

    def store(self, index: int) -> Materialized:
        name = f"store{index}"
        self.stores.append(name)
        return Materialized.as_(name)

    def output(self, index: int, out: Output) -> tuple:
        topic = f"out{index}"
        if isinstance(out, Aggregate):
            return topic, (S, self._aggregate(index, out, topic))
        if isinstance(out, StreamJoin):
            windows = JoinWindows.of_time_difference(out.within, grace=out.grace)
            joined = getattr(self.stream(out.left), out.kind)(self.stream(out.right), _join_values, windows)
            joined.to(topic, produced=Produced.with_(S, S))
        elif isinstance(out, TableLookup):
            joined = getattr(self.stream(out.stream), out.kind)(
                self.table(out.table), _join_values, Joined.with_(grace=timedelta(milliseconds=out.grace)))
            joined.to(topic, produced=Produced.with_(S, S))
        elif isinstance(out, TableJoin):
            how = {"foreign_key_extractor": lambda v: v} if out.foreign_key else {}
            joined = getattr(self.table(out.left), out.kind)(self.table(out.right), _join_values,
                                                            materialized=self.store(index), **how)
            joined.to_stream().to(topic, produced=Produced.with_(S, S))
        elif isinstance(out, GlobalLookup):
            joined = getattr(self.stream(out.stream), out.kind)(self.global_table(), lambda k, v: v, _join_values)
            joined.to(topic, produced=Produced.with_(S, S))
        else:
            self.stream(out.stream).to(topic, produced=Produced.with_(S, S))
        return topic, (S, S)

    def _aggregate(self, index: int, out: Aggregate, topic: str):
        stream = self.stream(out.stream)
        grouped = stream.group_by(lambda k, v: v) if out.by_value else stream.group_by_key()
        w = out.window
        if w is not None:
            grace = timedelta(milliseconds=w.grace)
            if w.kind == "session":
                grouped = grouped.windowed_by(SessionWindows.with_inactivity_gap(w.size, grace=grace))
            elif w.kind == "sliding":
                grouped = grouped.windowed_by(SlidingWindows.of(w.size, grace=grace))
            else:
                time_windows = TimeWindows.of(timedelta(milliseconds=w.size), grace=grace)
                if w.kind == "hopping":
                    time_windows = time_windows.advance_by(timedelta(milliseconds=w.size // 2))
                grouped = grouped.windowed_by(time_windows)
        materialized = self.store(index)
        if out.op == "count":
            table, value_serde = grouped.count(materialized=materialized), L
        elif out.op == "reduce":
            table, value_serde = grouped.reduce(_concat, materialized=materialized), S
        elif w is not None and w.kind == "session":
            table, value_serde = grouped.aggregate(_empty, _fold, _merge_sessions,
                                                   materialized=materialized.with_value_serde(S)), S
        else:
            table, value_serde = grouped.aggregate(_empty, _fold, materialized=materialized.with_value_serde(S)), S
        if w is not None and out.suppress:
            table = table.suppress(Suppressed.until_window_closes())
        stream = table.to_stream()
        if w is not None:
            stream = stream.map(lambda wk, v: (f"{wk.key}@{wk.window.start}-{wk.window.end}", v))
        stream.to(topic, produced=Produced.with_(S, value_serde))
        return value_serde


def build(topology: tuple) -> tuple[Topology, dict, list[str]]:
    """The topology, its output topics (topic -> (key serde, value serde)) and the
    names of its queryable stores."""
    b = _Builder()
    outs = dict(b.output(i, out) for i, out in enumerate(topology))
    return b.builder.build(), outs, b.stores


def set_and_deleted(rows, present: dict) -> bool:
    """Whether, over ``rows`` ((key, row or None for no row), in order, from ``present``:
    key -> row before them, updated in place), some key goes from no row to a row and
    back to none: a record cache forwards nothing for it (docs/semantics.md, "A
    foreign-key answer from a right row set and deleted within one commit stays")."""
    set_from_absent = set()
    for key, row in rows:
        if row is not None and present.get(key) is None:
            set_from_absent.add(key)
        elif row is None and key in set_from_absent:
            return True
        present[key] = row
    return False


def table_outputs(topology: tuple) -> set[str]:
    """The output topics that carry a table's updates."""
    return {f"out{i}" for i, out in enumerate(topology) if isinstance(out, TABLE_OUTPUTS)}
