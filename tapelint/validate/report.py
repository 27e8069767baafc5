"""Printing a validation: the diagnostics with their verdicts and what each confirmed one
cost, a table of those costs, and a summary of the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tapelint.output import json as json_output
from tapelint.output import text as text_output
from tapelint.validate.join import Validated, counts
from tapelint.validate.verdict import Cost, Status


def render(items: Sequence[Validated], output_format: str) -> str:
    if output_format == "json":
        return json_output.render_annotated(
            [
                (
                    item.diagnostic,
                    {
                        "runtime": item.verdict.status.value,
                        "origin": item.origin,
                        "evidence": item.verdict.evidence,
                        "cost": _cost_json(item.verdict.cost),
                    },
                )
                for item in items
            ]
        )
    return text_output.render_annotated([(item.diagnostic, note(item)) for item in items])


def note(item: Validated) -> str:
    """`[confirmed] (what it cost; the evidence)`: the cost first, it decides what to fix."""
    verdict = item.verdict
    cost = f"{verdict.cost.text}; " if verdict.cost is not None else ""
    return f"[{verdict.status.value}] ({cost}{verdict.evidence})"


def _cost_json(cost: Cost | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {
        "text": cost.text,
        "figures": [{"name": f.name, "value": f.value, "unit": f.unit} for f in cost.figures],
    }


def cost_table(items: Sequence[Validated]) -> str:
    """The confirmed problems with a measured cost, most costly first, when there are at
    least two to compare: what was trained wrongly or thrown away first (it makes the run
    wrong, not slow), then time, then memory, each largest first. Empty otherwise."""
    costly = [
        item
        for item in items
        if item.verdict.status is Status.CONFIRMED and item.verdict.cost is not None
    ]
    if len(costly) < 2:
        return ""
    costly.sort(key=lambda item: (item.verdict.cost.kind, -item.verdict.cost.size))  # type: ignore[union-attr]
    places = [f"{i.diagnostic.path}:{i.diagnostic.start.line}" for i in costly]
    width = max(len(place) for place in places)
    lines = ["", "What the confirmed problems cost on this run, most costly first:"]
    for item, place in zip(costly, places, strict=True):
        lines.append(f"  {item.diagnostic.code}  {place:<{width}}  {item.verdict.cost.text}")  # type: ignore[union-attr]
    return "\n".join(lines) + "\n"


def summary(items: Sequence[Validated], how_it_ended: str) -> str:
    tally = counts(items)
    parts = [
        f"{tally['confirmed']} confirmed",
        f"{tally['refuted']} refuted",
        f"{tally['not-reached']} not reached",
    ]
    if tally["inconclusive"]:
        parts.append(f"{tally['inconclusive']} inconclusive")
    parts.append(f"{tally['runtime']} found at runtime only")
    return f"{how_it_ended}; {', '.join(parts)}."
