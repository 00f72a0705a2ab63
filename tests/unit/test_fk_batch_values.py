"""A foreign-key join's answers to a left value the replica held earlier in the batch
(``fk_joins._BatchValues``; the parity soak's self-join, issue 40): the driver took each
answer while its value was current and a later answer replaced its result, so such an
answer yields its result unless an answer to a later value was emitted already, and is
never dropped as stale."""
from __future__ import annotations

from streamlib import Serdes
from streamlib.processors.fk_joins import _NOT_OF_THIS_BATCH, _SUPERSEDED, _BatchValues, value_hash

S = Serdes.string()


def digest(value):
    return value_hash(None if value is None else value.encode())


def test_an_answer_to_an_earlier_value_of_the_batch_is_its_value_until_a_later_answer_went_out():
    batch = _BatchValues(S, S)
    batch.applied += [("b", "c"), ("a", "x"), ("b", None)]
    assert batch.answered_value(b"b", digest("c")) == "c"          # b -> c|... then the delete replaces it
    assert batch.answered_value(b"b", digest("c")) == "c"          # a second answer to c: the same
    batch.emitted(b"b")                                             # the delete's answer (current: None)
    assert batch.answered_value(b"b", digest("c")) is _SUPERSEDED  # after the later answer: nothing


def test_an_answer_to_a_value_from_before_the_batch_or_still_to_come_is_not_of_this_batch():
    batch = _BatchValues(S, S)
    assert batch.answered_value(b"b", digest("c")) is _NOT_OF_THIS_BATCH
    batch.applied += [("b", "c")]
    # "c" is current (the caller checks that first); "x" was never held in this batch
    assert batch.answered_value(b"b", digest("x")) is _NOT_OF_THIS_BATCH
    assert batch.answered_value(b"b", digest("c")) is _NOT_OF_THIS_BATCH
    batch.applied += [("b", "d")]
    assert batch.answered_value(b"b", digest("c")) == "c"
    assert batch.answered_value(b"a", digest("c")) is _NOT_OF_THIS_BATCH


def test_an_answer_emitted_before_the_key_had_values_in_the_batch_supersedes_nothing_of_it():
    batch = _BatchValues(S, S)
    batch.applied += [("a", "x")]
    batch.emitted(b"b")             # b's value from before the batch was answered
    batch.applied += [("b", "c"), ("b", "d")]
    assert batch.answered_value(b"b", digest("c")) == "c"
