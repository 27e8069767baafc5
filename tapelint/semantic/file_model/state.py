"""The abstract state carried along one path through a scope while the model is built."""

from __future__ import annotations

from collections.abc import Mapping

from tapelint.semantic.file_model.model import Def, TapeInstance

_NOTHING: frozenset[Def] = frozenset()
_EMPTY: Mapping[str, frozenset[Def]] = {}


class State:
    """Reaching definitions per name, and gradient calls answered per tape on this path.

    Names of enclosing scopes live in `outer`, a mapping shared (never copied or changed) by
    every state of the scope; only what the scope binds itself is copied at branches. Copying
    the enclosing names for every function of a large module would make the walk quadratic.
    """

    __slots__ = ("counts", "local", "outer")

    def __init__(
        self,
        local: dict[str, frozenset[Def]] | None = None,
        counts: dict[TapeInstance, int] | None = None,
        outer: Mapping[str, frozenset[Def]] = _EMPTY,
    ) -> None:
        self.local = local if local is not None else {}
        self.counts = counts if counts is not None else {}
        self.outer = outer

    def lookup(self, name: str) -> frozenset[Def]:
        found = self.local.get(name)
        return found if found is not None else self.outer.get(name, _NOTHING)

    def bind(self, name: str, defs: frozenset[Def]) -> None:
        self.local[name] = defs

    def copy(self) -> State:
        return State(dict(self.local), dict(self.counts), self.outer)


def join(*states: State | None) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    result = live[0].copy()
    for other in live[1:]:
        for name in result.local.keys() - other.local.keys():
            result.local[name] = result.local[name] | other.outer.get(name, _NOTHING)
        for name, defs in other.local.items():
            result.local[name] = result.lookup(name) | defs
        for tape, count in other.counts.items():
            result.counts[tape] = max(result.counts.get(tape, 0), count)
    return result
