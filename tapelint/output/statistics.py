"""`--statistics`: how many diagnostics of each code, most frequent first.

Text: one line per code, `count  code  name`, with `[*]` before the name when some of them
can be fixed with the fixes enabled. JSON: a list of {code, name, count, fixable}.
"""

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.fixer import applicable


@dataclass(frozen=True)
class Statistic:
    code: str
    name: str
    count: int
    fixable: int


def count_by_code(diagnostics: Sequence[Diagnostic], *, unsafe: bool) -> list[Statistic]:
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if applicable(d.fix, unsafe=unsafe))
    names = {d.code: d.name for d in diagnostics}
    return [
        Statistic(code, names[code], count, fixable[code])
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def render_text(rows: Sequence[Statistic]) -> str:
    if not rows:
        return ""
    width = max(len(str(row.count)) for row in rows)
    any_fixable = any(row.fixable for row in rows)
    lines = []
    for row in rows:
        mark = ("[*] " if row.fixable else "    ") if any_fixable else ""
        lines.append(f"{row.count:>{width}}  {row.code}  {mark}{row.name}\n")
    return "".join(lines)


def render_json(rows: Sequence[Statistic]) -> str:
    items = [{"code": r.code, "name": r.name, "count": r.count, "fixable": r.fixable} for r in rows]
    return json.dumps(items, indent=2) + "\n"
