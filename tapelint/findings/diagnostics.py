"""What a check reports: diagnostics, their positions and their fixes.

Lines and columns are 1-based everywhere in this module (as printed to humans and in JSON);
the flake8 adapter converts to flake8's 0-based column at its boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Applicability(StrEnum):
    """How sure a fix is to keep behaviour (ruff's vocabulary)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the source text between two positions (end exclusive) with `content`."""

    start: Position
    end: Position
    content: str
    # Notebook cell the positions are in (1-based index into `cells`); None for plain files.
    cell: int | None = None


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Related:
    path: str
    line: int
    column: int
    message: str
    cell: int | None = None


@dataclass(frozen=True)
class Diagnostic:
    path: str
    start: Position
    end: Position
    code: str
    name: str
    severity: Severity
    message: str
    fix: Fix | None = None
    # Notebook cell (1-based index into the notebook's `cells`); None for plain files.
    cell: int | None = None
    # Other places the finding rests on (the gradient call a helper's result came from,
    # the apply inside a helper): path as reported, 1-based line and column, cell, what.
    related: tuple[Related, ...] = ()

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.start.line, self.start.column, self.code)
