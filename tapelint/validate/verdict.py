"""What the run says about one diagnostic."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tapelint.validate.observations import Frame


class Status(StrEnum):
    CONFIRMED = "confirmed"  # the problem happened
    REFUTED = "refuted"  # the code ran and the problem did not happen
    NOT_REACHED = "not-reached"  # the code did not run
    # The code ran, but what the probe can see does not decide (e.g. the rule's runtime fact
    # is not exposed by TensorFlow, or the run ended before the fact was settled).
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Verdict:
    status: Status
    evidence: str

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
