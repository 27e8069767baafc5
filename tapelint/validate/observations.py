"""Reading the events file written by the probe into something the checks can ask.

Paths are resolved against the directory the program ran in, so they compare equal to the
resolved paths of the static diagnostics. Serials are per process: a tape is `(pid, serial)`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tapelint.validate.probe import schema

if TYPE_CHECKING:
    from tapelint.validate.verdict import Site


@dataclass(frozen=True)
class Frame:
    path: str  # resolved
    first: int
    last: int
    column: int = 1


@dataclass(frozen=True)
class Event:
    index: int  # order in the file (per process, the order things happened)
    kind: str
    pid: int
    step: int
    at: tuple[Frame, ...]
    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.data.get(key)

    @property
    def where(self) -> Frame | None:
        return self.at[0] if self.at else None


@dataclass
class Observations:
    events: list[Event] = field(default_factory=list)
    by_kind: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    tapes: dict[tuple[int, int], Event] = field(default_factory=dict)
    tape_ends: dict[tuple[int, int], Event] = field(default_factory=dict)

    def of(self, kind: str) -> list[Event]:
        return self.by_kind.get(kind, [])

    def gradients_of(self, pid: int, tape: int) -> Iterator[Event]:
        return (e for e in self.of(schema.GRADIENT) if e.pid == pid and e["tape"] == tape)

    @property
    def errors(self) -> list[Event]:
        """Exceptions seen where user code raised them: uncaught ones, and those raised at a
        watched line or let out of a `tf.function` call whether caught or not."""
        return sorted(self.of(schema.EXCEPTION) + self.of(schema.RAISE), key=lambda e: e.index)

    @property
    def started(self) -> list[Event]:
        return self.of(schema.START)

    @property
    def steps(self) -> int:
        """The most optimizer steps any process completed."""
        return max((e.step for e in self.events), default=0)

    @property
    def stopped(self) -> bool:
        return bool(self.of(schema.STOP))

    def ran(self, site: Site) -> bool:
        """A line of the site ran (a `line` event: the probe marks watched lines)."""
        return any(site.overlaps(event.where) for event in self.of(schema.LINE))

    def user_paths(self) -> set[str]:
        return {frame.path for event in self.events for frame in event.at}


def read_events(path: Path, cwd: Path) -> Observations:
    observations = Observations()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return observations
    resolved: dict[str, str] = {}
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the program was killed
        event = _event(len(observations.events), raw, cwd, resolved)
        observations.events.append(event)
        observations.by_kind[event.kind].append(event)
        if event.kind == schema.TAPE:
            observations.tapes[(event.pid, event["tape"])] = event
        elif event.kind == schema.TAPE_END:
            observations.tape_ends[(event.pid, event["tape"])] = event
    return observations


def _event(index: int, raw: dict[str, Any], cwd: Path, resolved: dict[str, str]) -> Event:
    at = tuple(_frame(item, cwd, resolved) for item in raw.pop("at", None) or ())
    if raw.get("definition"):
        raw["definition"] = _frame(raw["definition"], cwd, resolved)
    return Event(
        index=index,
        kind=str(raw.pop("kind", "")),
        pid=int(raw.pop("pid", 0)),
        step=int(raw.pop("step", 0)),
        at=at,
        data=raw,
    )


def _frame(item: list, cwd: Path, resolved: dict[str, str]) -> Frame:
    path, first, last, *rest = item
    if path not in resolved:
        resolved[path] = path if path.startswith("<") else str((cwd / path).resolve())
    return Frame(resolved[path], int(first), int(last), int(rest[0]) if rest else 1)
