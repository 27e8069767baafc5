"""The abstract state carried along one path through a scope while the model is built."""

from __future__ import annotations

from tapelint.analysis.model import Def, TapeInstance


class State:
    """Reaching definitions per name, and gradient calls answered per tape on this path."""

    __slots__ = ("counts", "defs")

    def __init__(
        self,
        defs: dict[str, frozenset[Def]] | None = None,
        counts: dict[TapeInstance, int] | None = None,
    ) -> None:
        self.defs = defs if defs is not None else {}
        self.counts = counts if counts is not None else {}

    def copy(self) -> State:
        return State(dict(self.defs), dict(self.counts))


def join(*states: State | None) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    result = live[0].copy()
    for other in live[1:]:
        for name, defs in other.defs.items():
            mine = result.defs.get(name)
            result.defs[name] = defs if mine is None else mine | defs
        for tape, count in other.counts.items():
            result.counts[tape] = max(result.counts.get(tape, 0), count)
    return result
