"""Foreign-key table–table joins (Kafka Streams' KIP-213 ``KTable#join(other, fk, joiner)``).

Three sub-topologies, as in Kafka, but acyclic (a Spark micro-batch is a DAG of stages):

1. On the left table (keyed by ``k``): ``fk_left_send`` sends every change's new value,
   keyed by ``k``, to the *left-values* repartition; ``fk_subscribe`` sends subscription
   instructions keyed by the foreign key ``fk`` (Kafka's ``SubscriptionSendProcessor``:
   the same instructions and the hash of the new left value).
2. With the right table (keyed by ``fk``): ``fk_subscription_join`` keeps the subscriptions
   ``(fk, k) -> hash`` and answers each with the right row (Kafka's
   ``SubscriptionJoinProcessor``); ``fk_foreign_change`` answers every subscriber of a
   changed right row (Kafka's ``ForeignTableJoinProcessor``). Responses are keyed by ``k``.
3. Keyed by ``k`` again: ``fk_left_replica`` keeps the left values, ``fk_response_join``
   drops a response whose hash is not the current left value's (stale: the left row
   changed since) and otherwise emits ``joiner(left, right)`` or a tombstone (Kafka's
   ``ResponseJoinProcessor``) into the result table.

Kafka sends responses back to the left table's own sub-topology; here the left values
travel forward to a replica beside the responses instead, which the same check reads.
The ``TopologyTestDriver`` applies them to the replica as they are written, as Kafka
updates the left table's store before it forwards the change, so there no response can
overtake the left value it answers. A Spark batch's task takes both topics together by
timestamp (left values first at equal timestamps), and there a response can come first:
its left value waits behind a later one of another key in its partition (the task takes
a record by the largest timestamp up to it), or a right row's change answers, at the
end of the batch, a subscription of a later left value. So a response that is not for
the replica's current value waits, until the end of the batch, for a left value of its
key with its hash; only then is it dropped as stale. An answer to a value the replica
held earlier in the batch is taken as the driver took it, between that value and the
next (:class:`_BatchValues`). A self join (the left values and answers come from one
sub-topology: ``Topology.fk_self_join_inputs``) needs neither: that sub-topology sends
both in one sequence, in the order the driver takes them (``spark.tasks.run_looping_tasks``),
and its result's task takes them in that order (``in_order``), so a response not for the
current left value is stale at once, as in the driver.
"""
from __future__ import annotations

import hashlib
import struct
from typing import Any, Optional

from ..node_kinds import (FK_FOREIGN_CHANGE, FK_LEFT_REPLICA, FK_LEFT_SEND, FK_RESPONSE_JOIN,
                          FK_SUBSCRIBE, FK_SUBSCRIPTION_JOIN)
from .base import Processor
from .record import Change, Record
from .registry import processes

DELETE_KEY_AND_PROPAGATE = 0
DELETE_KEY_NO_PROPAGATE = 1
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3
_LEN = struct.Struct(">I")
_HASH_SIZE = 16


def value_hash(raw: Optional[bytes]) -> bytes:
    """The hash of a serialized left value (empty for none), as Kafka's murmur3 hash."""
    return b"" if raw is None else hashlib.blake2b(raw, digest_size=_HASH_SIZE).digest()


def _pack(*parts: bytes) -> bytes:
    return b"".join(_LEN.pack(len(p)) + p for p in parts)


def _unpack(data: bytes) -> list[bytes]:
    parts, i = [], 0
    while i < len(data):
        n = _LEN.unpack_from(data, i)[0]
        parts.append(bytes(data[i + 4:i + 4 + n]))
        i += 4 + n
    return parts


class _FkProcessor(Processor):
    """Resolves the join's serdes (None: the application's defaults)."""

    def init(self) -> None:
        params, config = self.node.params, self.context.config
        self.key_serde = params.key_serde
        self.value_serde = params.value_serde
        self.fk_serde = params.fk_serde
        self.left = params.left


@processes(FK_LEFT_SEND)
class ForeignKeyLeftSendProcessor(Processor):
    """Forward each left change's new value (None: deleted), keyed by the left key."""

    def process(self, record: Record) -> None:
        if record.key is not None:
            self.forward(record.with_value(record.value.new))


@processes(FK_SUBSCRIBE)
class SubscribeProcessor(_FkProcessor):
    """Kafka's ``SubscriptionSendProcessor``: instructions keyed by the foreign key; the
    value is ``(instruction, hash of the new left value, left key bytes)``."""

    def init(self) -> None:
        super().init()
        self.extractor = self.node.params.foreign_key_extractor

    def process(self, record: Record) -> None:
        if record.key is None:
            self.drop("null_key", record)
            return
        change: Change = record.value
        new, old = change.new, change.old
        digest = value_hash(None if new is None else self.value_serde.serialize(new))
        kb = self.key_serde.serialize(record.key)

        def send(fk: Any, instruction: int) -> None:
            self.forward(record.with_(fk, _pack(bytes([instruction]), digest, kb)))

        fk_bytes = self.fk_serde.serialize
        old_fk = None if old is None else self.extractor(old)
        if self.left:
            if old is None and new is None:
                return                  # an idempotent delete: nothing to unset
            new_fk = None if new is None else self.extractor(new)
            if old_fk is not None and fk_bytes(new_fk) != fk_bytes(old_fk):
                # the new subscription's answer replaces the old result: no tombstone
                send(old_fk, DELETE_KEY_NO_PROPAGATE)
            # insert, update and delete all need an answer (a delete's None FK included)
            send(new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if new is None:
            if old_fk is not None:
                send(old_fk, DELETE_KEY_AND_PROPAGATE)
            return
        new_fk = self.extractor(new)
        if new_fk is None:
            self.drop("null_foreign_key", record)
            if old_fk is not None:
                send(old_fk, DELETE_KEY_AND_PROPAGATE)
        elif old_fk is not None and fk_bytes(new_fk) != fk_bytes(old_fk):
            send(old_fk, DELETE_KEY_NO_PROPAGATE)
            send(new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)   # unset the old FK's result
        else:
            # an insert, or an update with the same FK: if there is no match now there was
            # none before either, so no tombstone is due
            send(new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)


def _subscription_key(fkb: bytes, kb: bytes) -> bytes:
    return _LEN.pack(len(fkb)) + fkb + kb


def _response(digest: bytes, foreign: Optional[bytes]) -> bytes:
    """Response value: hash, then the right value's bytes if there is a right row."""
    return _pack(digest) + (b"" if foreign is None else _pack(foreign))


@processes(FK_SUBSCRIPTION_JOIN)
class SubscriptionJoinProcessor(_FkProcessor):
    """Kafka's ``SubscriptionReceiveProcessor`` + ``SubscriptionJoinProcessor``: record the
    subscription, answer it with the right row according to its instruction."""

    def init(self) -> None:
        super().init()
        self.subscriptions = self.context.store(self.node.params.subscriptions).store
        self.right = self.context.store(self.node.params.store)
        self.right_serde = self.node.params.right_value_serde

    def process(self, record: Record) -> None:
        raw_instruction, digest, kb = _unpack(record.value)
        instruction = raw_instruction[0]
        fk = record.key
        if fk is None and instruction != PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            self.drop("null_foreign_key", record)
            return
        if fk is not None:
            sub_key = _subscription_key(self.fk_serde.serialize(fk), kb)
            if instruction in (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE):
                self.subscriptions.put(sub_key, None)
            else:
                self.subscriptions.put(sub_key, digest, record.timestamp)
        row = None if fk is None else self.right.get(fk)
        timestamp = record.timestamp if row is None else max(record.timestamp, row[1])
        if instruction == DELETE_KEY_AND_PROPAGATE:
            foreign = None
        elif instruction == PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            foreign = None if row is None else self.right_serde.serialize(row[0])
        elif instruction == PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and row is not None:
            foreign = self.right_serde.serialize(row[0])
        else:
            return
        self.forward(Record(kb, _response(digest, foreign), timestamp, record.headers))


@processes(FK_FOREIGN_CHANGE)
class ForeignChangeProcessor(_FkProcessor):
    """Kafka's ``ForeignTableJoinProcessor``: a change of a right row answers every
    subscription to its key, with the new right value (None: deleted)."""

    def init(self) -> None:
        super().init()
        self.subscriptions = self.context.store(self.node.params.subscriptions).store
        self.right_serde = self.node.params.right_value_serde

    def process(self, record: Record) -> None:
        if record.key is None:
            self.drop("null_key", record)
            return
        new = record.value.new
        foreign = None if new is None else self.right_serde.serialize(new)
        prefix = _subscription_key(self.fk_serde.serialize(record.key), b"")
        for sub_key, digest in list(self.subscriptions.prefix_scan(prefix)):
            kb = bytes(sub_key[len(prefix):])
            self.forward(Record(kb, _response(digest, foreign), record.timestamp, record.headers))


@processes(FK_LEFT_REPLICA)
class LeftReplicaProcessor(Processor):
    """Keep the left table's current values beside the responses (emits nothing)."""

    def init(self) -> None:
        self.store = self.context.store(self.node.params.store)

    def process(self, record: Record) -> None:
        if record.key is not None:
            self.store.put(record.key, record.value, record.timestamp)
            response = self.context.peers.get((FK_RESPONSE_JOIN.name, self.node.params.store))
            if response is not None:
                response.left_value_applied(record.key, record.value)


@processes(FK_RESPONSE_JOIN)
class ResponseJoinProcessor(_FkProcessor):
    """Kafka's ``ResponseJoinProcessor``: a response for the current left value yields
    ``joiner(left, right)``; with no right row, a left join yields ``joiner(left, None)``
    and an inner join a tombstone; a stale response (the left row changed) is dropped."""

    def init(self) -> None:
        super().init()
        self.store = self.context.store(self.node.params.store)
        self.joiner = self.node.params.joiner
        self.right_serde = self.node.params.right_value_serde
        #: left key bytes -> responses not for its replica's value, waiting for a left
        #: value of this batch (see the module docstring); dropped as stale at the end
        self.waiting: dict[bytes, list[Record]] = {}
        self.batch = _BatchValues(self.key_serde, self.value_serde)
        self.context.peers[(FK_RESPONSE_JOIN.name, self.node.params.store)] = self

    #: the left values and answers come in the order Kafka Streams' driver takes them (a
    #: self join: ``Topology.fk_self_join_inputs``; set when wiring): an answer not to the
    #: current left value is stale at once, as there
    in_order = False

    def left_value_applied(self, key: Any, value: Any) -> None:
        """The replica took a new value of ``key``: answer the responses that waited for it."""
        if self.in_order:
            return
        self.batch.applied.append((key, value))
        if not self.waiting:   # the common case: no key is serialized per left value
            return
        waiting = self.waiting.pop(self.key_serde.serialize(key), None)
        for record in waiting or ():
            self.process(record)

    def flush(self) -> None:
        for records in self.waiting.values():
            for record in records:
                self.drop("stale_response", record)
        self.waiting = {}
        self.batch = _BatchValues(self.key_serde, self.value_serde)

    def process(self, record: Record) -> None:
        parts = _unpack(record.value)
        key = self.key_serde.deserialize(record.key)
        current = self.store.get(key)
        current_value = None if current is None else current[0]
        raw = None if current_value is None else self.value_serde.serialize(current_value)
        if value_hash(raw) != parts[0]:
            if self.in_order:
                self.drop("stale_response", record)
                return
            earlier = self.batch.answered_value(bytes(record.key), parts[0])
            if earlier is _NOT_OF_THIS_BATCH:
                self.waiting.setdefault(bytes(record.key), []).append(record)
                return
            if earlier is _SUPERSEDED:
                return
            current_value = earlier
        elif not self.in_order:
            self.batch.emitted(bytes(record.key))
        foreign = self.right_serde.deserialize(parts[1]) if len(parts) > 1 else None
        if foreign is None and (not self.left or current_value is None):
            result = None
        else:
            result = self.joiner(current_value, foreign)
        self.forward(Record(key, result, record.timestamp, record.headers, record.topic,
                            record.partition, record.offset))


_NOT_OF_THIS_BATCH = object()
_SUPERSEDED = object()


class _BatchValues:
    """The left values a response join's replica took in this batch, in order, for the
    answers to a value it held earlier in the batch (not for a self join: ``in_order``).
    The left table's stage forwards a key's updates one by one, and the right table's
    answers them; the result's stage applies them all before the answers (its task takes
    both topics by timestamp, left values first at equal ones). The driver answered each
    while its value was current, and a later answer replaced its
    result: so an answer to an earlier value of the batch yields its result when no answer
    to a later value came yet (none may come: an inner join's unmatched update), else
    nothing; it is never stale. Indexed only once such an answer comes."""

    def __init__(self, key_serde: Any, value_serde: Any):
        self.key_serde, self.value_serde = key_serde, value_serde
        #: (key, value) in the order the replica took them
        self.applied: list[tuple[Any, Any]] = []
        #: left key bytes -> [(position in applied, value hash, value)], for applied[:indexed]
        self._history: dict[bytes, list[tuple[int, bytes, Any]]] = {}
        self._indexed = 0
        #: left key bytes -> len(applied) when the key's last answer was emitted (the
        #: value then current: its last one before that position)
        self._emitted_at: dict[bytes, int] = {}

    def emitted(self, kb: bytes) -> None:
        """An answer to the current value of ``kb`` was emitted."""
        if self.applied:
            self._emitted_at[kb] = len(self.applied)

    def answered_value(self, kb: bytes, digest: bytes) -> Any:
        """For an answer (hash ``digest``) not to ``kb``'s current value: the earlier value
        of this batch it answers (its result then due), ``_SUPERSEDED`` when an answer to a
        later value was emitted already, or ``_NOT_OF_THIS_BATCH``."""
        history = self._history_of(kb)
        for position, found, value in reversed(history[:-1]):
            if found == digest:
                break
        else:
            return _NOT_OF_THIS_BATCH
        emitted_at = self._emitted_at.get(kb)
        if emitted_at is not None and max((p for p, _, _ in history if p < emitted_at), default=-1) > position:
            return _SUPERSEDED
        self._emitted_at[kb] = position + 1
        return value

    def _history_of(self, kb: bytes) -> list[tuple[int, bytes, Any]]:
        key_bytes, value_bytes = self.key_serde.serialize, self.value_serde.serialize
        for position in range(self._indexed, len(self.applied)):
            key, value = self.applied[position]
            digest = value_hash(None if value is None else value_bytes(value))
            self._history.setdefault(key_bytes(key), []).append((position, digest, value))
        self._indexed = len(self.applied)
        return self._history.get(kb, [])
