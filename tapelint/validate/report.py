"""Printing a validation: the diagnostics with their verdicts, and a summary of the run."""

from __future__ import annotations

from collections.abc import Sequence

from tapelint.output import json as json_output
from tapelint.output import text as text_output
from tapelint.validate.join import Validated, counts


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
                    },
                )
                for item in items
            ]
        )
    return text_output.render_annotated(
        [
            (item.diagnostic, f"[{item.verdict.status.value}] ({item.verdict.evidence})")
            for item in items
        ]
    )


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
