"""Code cells of a Python notebook that are written in another language.

The notebook's kernel language is the notebook's, but a cell may be written for another
kernel: Colab notebooks ask the reader to "switch to an R runtime" for a few cells, VS Code
records a cell's own language in its metadata, .NET Interactive notebooks in theirs. Such a
cell fails in a Python kernel on purpose, and a TAP001 there would tell its author nothing.
So it is left out, as a cell magic whose body is not Python is (`%%bash`, `%%R`), when

- its metadata names a language that is not Python (`vscode.languageId`, the key VS Code
  writes; `dotnet_interactive.language`, the one .NET Interactive writes), or
- IPython cannot run it (see tapelint.sources.ipython_input) and it is recognisably R: a line that
  starts with an R assignment (`x <- read.csv(...)`), or a call of `library(...)`,
  `require(...)` or `install.packages(...)` at the start of a line, or of an R function
  whose dotted name starts with a Python keyword (`as.matrix(...)`, `is.na(...)`, which no
  Python can contain).

A cell that IPython can run is Python, whatever it looks like: the R signs are looked for
only in cells that do not parse. A Python cell with a real syntax error and none of these
signs (a Python 2 `print "x"`, a missing `:`) stays TAP001.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

# (metadata section, key) naming a cell's own language.
_CELL_LANGUAGE_KEYS = (("vscode", "languageId"), ("dotnet_interactive", "language"))
# An R assignment starting a line: `name <- value`, `obj$field <- value`, `x[1] <<- value`.
_R_ASSIGNMENT = re.compile(r"\s*[A-Za-z._][\w.$]*(?:\[[^\]]*\])?\s*<<?-\s*\S")
_R_PACKAGE_CALL = re.compile(r"\s*(?:library|require|install\.packages)\(")
# `as.matrix(`, `is.na(`: a dotted name whose first part is a Python keyword, called.
_R_KEYWORD_DOTTED_CALL = re.compile(r"(?<![\w.])(?:as|is)\.[A-Za-z_][\w.]*\(")


def declared_language(metadata: Any) -> str | None:
    """The language a cell's metadata gives it, lower-cased; None when it gives none."""
    if not isinstance(metadata, dict):
        return None
    for section, key in _CELL_LANGUAGE_KEYS:
        value = metadata.get(section)
        language = value.get(key) if isinstance(value, dict) else None
        if isinstance(language, str) and language:
            return language.lower()
    return None


def is_declared_foreign(metadata: Any) -> bool:
    """Whether a cell's metadata says it is written in a language other than Python."""
    language = declared_language(metadata)
    return language is not None and not language.startswith("python")


def looks_like_r(lines: Sequence[str]) -> bool:
    """Whether a cell that does not parse as Python shows R syntax (see the module's doc)."""
    for line in lines:
        code = _without_comment(line)
        if _R_ASSIGNMENT.match(code) or _R_PACKAGE_CALL.match(code):
            return True
        if any(_outside_strings(code, m.start()) for m in _R_KEYWORD_DOTTED_CALL.finditer(code)):
            return True
    return False


def _without_comment(line: str) -> str:
    """The line up to a `#` that is not inside quotes (R and Python comment alike)."""
    for index, char in enumerate(line):
        if char == "#" and _outside_strings(line, index):
            return line[:index]
    return line


def _outside_strings(line: str, index: int) -> bool:
    """Whether `index` is outside the quotes opened on this line before it (an even number
    of each quote character before it; an approximation good enough for one line)."""
    before = line[:index]
    return before.count('"') % 2 == 0 and before.count("'") % 2 == 0
