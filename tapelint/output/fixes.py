"""`--show-fixes`: what the fixes did, or could do, in ruff's words (ASCII only).

With `--fix` (`--diff`), per file and code, the fixes applied (that would be):

    Fixed 3 problems:
    - train.py:
        2 x TAP103 (persistent-tape-not-released)

Without, a count of the findings the fixes can fix (each is marked `[*]` in the text format),
and of the unsafe fixes `--unsafe-fixes` would add:

    [*] 2 fixable with the --fix option (1 hidden fix can be enabled with the
    --unsafe-fixes option).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.fixer import fixable_count


def render_fixed(fixed_codes: Mapping[str, Counter[tuple[str, str]]], *, applied: bool) -> str:
    """The fixes applied (`applied`) or that would be, per file; "" when there are none."""
    tables = {path: codes for path, codes in fixed_codes.items() if codes.total()}
    total = sum(codes.total() for codes in tables.values())
    if not total:
        return ""
    width = len(str(max(count for codes in tables.values() for count in codes.values())))
    verb = "Fixed" if applied else "Would fix"
    lines = [f"{verb} {total} problem{'' if total == 1 else 's'}:"]
    for path in sorted(tables):
        lines.append(f"- {path}:")
        ordered = sorted(tables[path].items(), key=lambda item: (-item[1], item[0]))
        lines.extend(f"    {count:>{width}} x {code} ({name})" for (code, name), count in ordered)
    return "".join(f"{line}\n" for line in lines)


def render_fixable(diagnostics: Sequence[Diagnostic], *, unsafe: bool) -> str:
    """How many findings the enabled fixes can fix, and how many more unsafe ones would;
    "" when neither."""
    fixable = fixable_count(diagnostics, unsafe=unsafe)
    hidden = 0 if unsafe else fixable_count(diagnostics, unsafe=True) - fixable
    more = f"{hidden} hidden fix{'' if hidden == 1 else 'es'} can be enabled with the "
    more += "--unsafe-fixes option"
    if fixable and hidden:
        return f"[*] {fixable} fixable with the --fix option ({more}).\n"
    if fixable:
        return f"[*] {fixable} fixable with the --fix option.\n"
    if hidden:
        return f"No fixes available ({more}).\n"
    return ""
