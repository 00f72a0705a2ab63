"""The oracle's windowed scenarios on the Python side (``WindowScenarios.java``):
counts per key of topic ``in`` over tumbling, hopping, sliding and session windows,
each emitting every update, through ``suppress(until_window_closes())``, with
``EmitStrategy.on_window_close()``, and through a filter. The output key is ``"key@start/end"``."""
from __future__ import annotations

from typing import Any, Callable

from oracle_scenarios import L, S, Scenario, number_or_tombstone, strings
from streamlib import (EmitStrategy, Produced, SessionWindows, SlidingWindows, StreamsBuilder,
                       Suppressed, TimeWindows, Topology)

#: name -> the windows (the same sizes and graces as WindowScenarios.java)
WINDOWS: dict[str, Callable[[], Any]] = {
    "tumbling": lambda: TimeWindows.of(10, grace=5),
    "hopping": lambda: TimeWindows.of(10, grace=4).advance_by(3),
    "sliding": lambda: SlidingWindows.of(5, grace=3),
    "session": lambda: SessionWindows.with_inactivity_gap(5, grace=3),
}


def _windowed_key(wk: Any, _value: Any) -> str:
    return f"{wk.key}@{wk.window.start}/{wk.window.end}"


def windowed_count(kind: str, emit: str) -> Callable[[], Topology]:
    """The topology of ``<kind>-count[-suppressed|-emit-final]``."""
    def topology() -> Topology:
        builder = StreamsBuilder()
        windowed = builder.stream("in", consumed=strings()).group_by_key().windowed_by(WINDOWS[kind]())
        if emit == "emit-final":
            windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
        counts = windowed.count()
        if emit == "suppressed":
            counts = counts.suppress(Suppressed.until_window_closes())
        if emit == "filtered":   # a filter below a windowed aggregation: its old values
            counts = counts.filter(lambda wk, n: n % 2 == 0)
        counts.to_stream(mapper=_windowed_key).to("out", produced=Produced.with_(S, L))
        return builder.build()
    return topology


WINDOW_SCENARIOS: dict[str, Scenario] = {
    f"{kind}-count{'-' + emit if emit else ''}": Scenario(windowed_count(kind, emit), L, number_or_tombstone)
    for kind in WINDOWS for emit in ("", "suppressed", "emit-final", "filtered")
}
