"""What each confirmed problem cost on the run that just happened, where the run measured
it: measure before optimising, so that a user can fix the most expensive problem first.

Keyed by rule code like `checks.CHECKS`; a rule missing here, or a run that measured
nothing for a diagnostic, has no cost: nothing is ever estimated. TAP106 has none on
purpose: TensorFlow records nothing on a tape for operations whose inputs are not watched,
so there is no count of them to show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tapelint.validate.checks import (
    constructions_at,
    errors_at,
    events_at,
    function_calls_at,
    tapes_created_at,
)
from tapelint.validate.observations import Event, Observations
from tapelint.validate.probe import schema
from tapelint.validate.verdict import Cost, CostKind, Figure, Site

Measure = Callable[[Site, Observations], Cost | None]


def format_bytes(count: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


def format_seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _names(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# ------------------------------------------------------------------- TAP102/TAP103
def _held(header: bool) -> Measure:
    """How much a persistent tape from here kept alive after its last gradient call, and
    for how long: the tape whose tensors were measured (the first from the site), else the
    one that lived longest."""

    def measure(site: Site, obs: Observations) -> Cost | None:
        tapes = {(t.pid, t["tape"]) for t in tapes_created_at(site, obs, header=header)}
        releases = [r for r in obs.of(schema.RELEASE) if (r.pid, r["tape"]) in tapes]
        if not releases:
            return None
        measured = [r for r in releases if r["bytes"] is not None]
        tape = measured[0] if measured else max(releases, key=lambda r: r["seconds"])
        held, seconds, steps = tape["bytes"], tape["seconds"], tape["steps"]
        duration = format_seconds(seconds)
        if steps:
            duration += f" ({_plural(steps, 'optimizer step')})"
        what = f"held {format_bytes(held)}" if held is not None else "kept its tensors alive"
        text = f"{what} for {duration} after its last use"
        if tape["at_end"]:
            text += ", until the program ended"
        figures = [
            Figure("held_for_seconds", seconds, "seconds"),
            Figure("held_for_steps", steps, "steps"),
        ]
        if held is not None:
            figures.insert(0, Figure("held", held, "bytes"))
        return Cost(text, tuple(figures), CostKind.MEMORY, held or 0)

    return measure


# -------------------------------------------------------------------------- TAP501
def _tracing(site: Site, obs: Observations) -> Cost | None:
    _, calls = function_calls_at(site, obs)
    if not calls:
        return None
    traces: dict[tuple[int, int], int] = {}
    for call in calls:
        key = (call.pid, call["function"])
        traces[key] = max(traces.get(key, 0), call["traces_after"])
    count = sum(traces.values())
    seconds = sum(call["tracing_seconds"] or 0 for call in calls)
    text = f"traced {_plural(count, 'time')}, {format_seconds(seconds)} spent tracing"
    figures = (Figure("traces", count, "traces"), Figure("tracing", seconds, "seconds"))
    return Cost(text, figures, CostKind.TIME, seconds)


# -------------------------------------------------------------------------- TAP502
def _rebuilt(site: Site, obs: Observations) -> Cost | None:
    built = constructions_at(obs, site)
    if len(built) < 2:
        return None
    replaced = [b["replaced"] for b in built if b["replaced"]]
    lost = [r["iterations"] for r in replaced if "iterations" in r]
    slots = sum(r.get("slot_variables", 0) for r in replaced)
    parameters = sum(r.get("parameters", 0) for r in replaced)
    figures = [Figure("built", len(built), "times")]
    parts = [f"built {_plural(len(built), 'time')}"]
    if lost:
        figures.append(Figure("optimizer_steps_reset", sum(lost), "steps"))
        counts = ", ".join(str(n) for n in lost[:5]) + (", ..." if len(lost) > 5 else "")
        parts.append(f"the optimizer's iterations went back to 0 (from {counts})")
    if slots:
        figures.append(Figure("slot_variables_recreated", slots, "variables"))
        parts.append(f"{_plural(slots, 'slot variable')} were recreated")
    if parameters:
        figures.append(Figure("parameters_reinitialized", parameters, "parameters"))
        parts.append(f"{_plural(parameters, 'parameter')} were initialized again")
    return Cost("; ".join(parts), tuple(figures), CostKind.TRAINING, len(built))


# --------------------------------------------------------------------- TAP401/TAP403
def _no_gradient(names: Iterable[str]) -> Cost | None:
    unique = list(dict.fromkeys(names))
    if not unique:
        return None
    text = f"no gradient for {_names(unique)}"
    figures = (Figure("no_gradient", unique, "variables"),)
    return Cost(text, figures, CostKind.TRAINING, len(unique))


def _unfiltered_apply(site: Site, obs: Observations) -> Cost | None:
    applies = events_at(obs.of(schema.APPLY), site)
    return _no_gradient(name for apply in applies for name in apply["none_variables"] or [])


def _transform_raised(site: Site, obs: Observations) -> Cost | None:
    """The variables whose None gradient the transform met: those of the gradient call
    that came last, in the same process, before the first error at the site."""
    for error in errors_at(site, obs):
        before = [
            call
            for call in obs.of(schema.GRADIENT)
            if call.pid == error.pid and call.index < error.index and call["none_names"]
        ]
        if before:
            return _no_gradient(before[-1]["none_names"])
    return None


# -------------------------------------------------------------------------- TAP303
def _inference_layers(site: Site, obs: Observations) -> Cost | None:
    calls = [c for c in events_at(obs.of(schema.LAYER_CALL), site) if not c["training"]]
    names = list(dict.fromkeys(n for c in calls for n in c["inference_layers"] or []))
    if not names:
        return None
    text = f"ran {_names(names)} in inference mode while training"
    figures = (Figure("inference_mode", names, "layers"),)
    return Cost(text, figures, CostKind.TRAINING, len(names))


COSTS: dict[str, Measure] = {
    "TAP102": _held(header=False),
    "TAP103": _held(header=True),
    "TAP303": _inference_layers,
    "TAP401": _unfiltered_apply,
    "TAP403": _transform_raised,
    "TAP501": _tracing,
    "TAP502": _rebuilt,
}


def cost_of(code: str, site: Site, obs: Observations) -> Cost | None:
    measure = COSTS.get(code)
    return measure(site, obs) if measure is not None else None


def runtime_apply_cost(apply: Event) -> Cost | None:
    """The cost of a None gradient reaching an update that no diagnostic covers."""
    return _no_gradient(apply["none_variables"] or [])
