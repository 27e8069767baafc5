"""Notebook cells left incomplete on purpose: a course's exercise blanks.

Lab notebooks leave the lines a student writes blank, and such a cell does not parse until
the student fills it in: `real_loss = # TODO: Your code goes here.`, a function whose only
body is `# YOUR CODE HERE`, `chars = #insert code here`. The notebook fails as it is on
purpose, and its solution holds the code, so a TAP001 there tells its author nothing.

A cell that does not parse is an exercise blank when

- one of its lines assigns nothing but a comment (`name = # ...`), or
- a comment in it asks for code (`your code`, `insert code`, `code goes here`,
  `start code here`, `fill in`, `complete the code`), or
- the line the parser stopped at, or the line before it, is a comment that starts with
  `TODO` (`#TODO: Resize decoded image` under `resized =`).

Only cells that do not parse are looked at: a cell that parses is checked whatever its
comments say. The cell is left out, like a cell in another language; the rest of the
notebook is checked as usual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tapelint.source import SyntaxProblem

_BLANK_ASSIGNMENT = re.compile(r"^\s*[\w.\[\]\"', ]+=\s*#")
_ASKS_FOR_CODE = re.compile(
    r"#.*\b(?:your code|insert code|code goes here|start code here|fill in|complete the code)",
    re.IGNORECASE,
)
_TODO_COMMENT = re.compile(r"^\s*#\s*TODO\b|=\s*#\s*TODO\b", re.IGNORECASE)


def is_exercise_blank(lines: Sequence[str], problem: SyntaxProblem) -> bool:
    """Whether a cell of these lines, which failed to parse with `problem` (its line in the
    cell), is an exercise left blank on purpose (see the module's doc)."""
    if any(_BLANK_ASSIGNMENT.match(line) or _ASKS_FOR_CODE.search(line) for line in lines):
        return True
    near = lines[max(problem.line - 2, 0) : problem.line]
    return any(_TODO_COMMENT.search(line) for line in near)
