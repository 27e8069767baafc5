"""What the run says about one diagnostic."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from tapelint.validate.observations import Frame


class Status(StrEnum):
    CONFIRMED = "confirmed"  # the problem happened
    REFUTED = "refuted"  # the code ran and the problem did not happen
    NOT_REACHED = "not-reached"  # the code did not run
    # The code ran, but what the probe can see does not decide (e.g. the rule's runtime fact
    # is not exposed by TensorFlow, or the run ended before the fact was settled).
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Figure:
    """One measured figure of a cost, with its unit."""

    name: str
    value: int | float | list[str]
    unit: str


class CostKind(IntEnum):
    """What a cost is made of; the summary table lists them in this order."""

    TRAINING = 0  # what was trained wrongly or not at all, or state thrown away
    TIME = 1
    MEMORY = 2


@dataclass(frozen=True)
class Cost:
    """What a confirmed problem cost on this run, as measured (never estimated)."""

    text: str  # shown after the verdict: "held 4.2 MB for 1 step after its last use"
    figures: tuple[Figure, ...]
    kind: CostKind
    size: float  # how large within its kind, to sort by


@dataclass(frozen=True)
class Verdict:
    status: Status
    evidence: str
    cost: Cost | None = None

    @staticmethod
    def confirmed(evidence: str) -> Verdict:
        return Verdict(Status.CONFIRMED, evidence)

    @staticmethod
    def refuted(evidence: str) -> Verdict:
        return Verdict(Status.REFUTED, evidence)

    @staticmethod
    def inconclusive(evidence: str) -> Verdict:
        return Verdict(Status.INCONCLUSIVE, evidence)


NOT_REACHED = Verdict(Status.NOT_REACHED, "the program never ran this code")


@dataclass(frozen=True)
class Site:
    """Where a diagnostic is: a resolved path and its first and last line."""

    path: str
    first: int
    last: int

    def overlaps(self, frame: Frame | None) -> bool:
        """The frame was executing code on the diagnostic's lines."""
        return (
            frame is not None
            and frame.path == self.path
            and frame.first <= self.last
            and self.first <= frame.last
        )

    def starts_with(self, frame: Frame | None) -> bool:
        """The frame was executing a statement that begins on the diagnostic's first line."""
        return frame is not None and frame.path == self.path and frame.first == self.first

    def inside(self, frame: Frame | None) -> bool:
        """The diagnostic lies within the span the frame was executing (a `with` block)."""
        return (
            frame is not None
            and frame.path == self.path
            and frame.first <= self.first <= frame.last
        )
