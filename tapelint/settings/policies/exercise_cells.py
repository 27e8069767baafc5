"""Notebook cells left incomplete on purpose: a course's exercise blanks.

Lab notebooks leave the lines a student writes blank, and such a cell does not parse until
the student fills it in: `real_loss = # TODO: Your code goes here.`, a function whose only
body is `# YOUR CODE HERE`, `chars = #insert code here`. The notebook fails as it is on
purpose, and its solution holds the code, so a TAP001 there tells its author nothing.

A cell that does not parse is an exercise blank when

- one of its lines assigns nothing but a comment (`name = # ...`), or
- it asks for code, in a comment or in a placeholder (`your code`, `insert code`,
  `code goes here`, `start code here`, `fill in`, `complete the code`), or
- it holds a placeholder in angle brackets where code goes (`x = <YOUR CODE>`, a line that is
  only `<create the variables here>`): no Python expression starts with `<`, or
- `TODO` is on the line the parser stopped at, on the last non-blank line before it, or in
  the comment lines directly above it (a function whose body is only `# TODO`,
  `[TODO Dense layer]`, `#TODO: Resize` under `resized =`, `# TODO 2: Create two new
  features` over a comment or two and `londiff = `).

Only cells that do not parse are looked at: a cell that parses is checked whatever its
comments say. The cell is left out, like a cell in another language; the rest of the
notebook is checked as usual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tapelint.parsing.slicer import SyntaxProblem

_BLANK_ASSIGNMENT = re.compile(r"^\s*[\w.\[\]\"', ]+=\s*#")
_ASKS_FOR_CODE = re.compile(
    r"\b(?:your code|insert code|code goes here|start code here|fill in|complete the code)\b",
    re.IGNORECASE,
)
# `<words ...>` where an expression starts: a whole line, or after `=`, `(`, `[` or `,`. A
# placeholder holds words (a space, no `=` or quotes), which an HTML tag (`<div>`,
# `<svg width="210">`) does not.
_ANGLE_PLACEHOLDER = re.compile(r"(?:^|[=(\[,])\s*<[A-Za-z][^<>=\"']*\s[^<>=\"']*>")
_TODO = re.compile(r"\bTODO\b")


def is_exercise_blank(lines: Sequence[str], problem: SyntaxProblem) -> bool:
    """Whether a cell of these lines, which failed to parse with `problem` (its line in the
    cell), is an exercise left blank on purpose (see the module's doc)."""
    if any(
        _BLANK_ASSIGNMENT.match(line) or asks_for_code(line) or _ANGLE_PLACEHOLDER.search(line)
        for line in lines
    ):
        return True
    stopped = problem.line - 1
    before = [line for line in lines[: max(stopped, 0)] if line.strip()]
    near = [*lines[stopped : stopped + 1], *before[-1:], *_comments_above(before)]
    return any(_TODO.search(line) for line in near)


def asks_for_code(line: str) -> bool:
    """Whether a line asks the student for code (`# YOUR CODE HERE`, `### START CODE HERE
    ###`, `insert code`): also in code that parses, where what the student has still to
    write is missing (TAP107: a tape whose gradient call is the exercise)."""
    return _ASKS_FOR_CODE.search(line) is not None


def _comments_above(before: Sequence[str]) -> list[str]:
    """The comment lines directly above the line the parser stopped at (blank lines
    between them aside): the instructions written over an exercise blank."""
    run: list[str] = []
    for line in reversed(before):
        if not line.lstrip().startswith("#"):
            break
        run.append(line)
    return run
