"""The summary line after the findings of the formats for people, in ruff's words.

    Found 3 problems in 2 files (1 fixed, 2 remaining; 1 more fixable with --unsafe-fixes).
    All checks passed!
    Would fix 2 problems in 1 file (1 more fix available with --unsafe-fixes).
    No problems would be fixed (2 fixes available with --unsafe-fixes).
    Fixed 2 problems (1 more fix available with --unsafe-fixes).      (--fix-only)

`All checks passed!` ends a run that found nothing (and met no error). A `--diff` or
`--fix-only` run with nothing to fix says nothing, unless unsafe fixes were left out: then
it says how many `--unsafe-fixes` would apply.

It goes to stderr, unlike ruff's (stdout): tapelint's stdout holds only the findings, the
diff or the fixed source, so that a pipe or `> file` gets exactly those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tapelint.linter.fixer import fixable_count

if TYPE_CHECKING:  # the run's types, for annotations: output sits below the run
    from tapelint.run.per_file import Options, Report

PASSED = "All checks passed!"


def summary(report: Report, options: Options, *, fix_only: bool = False) -> str | None:
    """The line to print, or None: nothing to say (a `--diff` with nothing to fix)."""
    hidden = _hidden(report, options)
    if options.diff:
        return _would_fix(report, hidden)
    if fix_only:
        return _fixed(report, hidden)
    remaining = report.diagnostics
    total = len(remaining) + report.fixed
    if not total:
        return None if report.errors else PASSED
    files = len({d.path for d in remaining} | set(report.fixed_paths))
    notes = []
    if report.fixed:
        notes.append(f"{report.fixed} fixed, {len(remaining)} remaining")
    fixable = fixable_count(remaining, unsafe=options.unsafe_fixes)
    if fixable and not options.fix:
        notes.append(f"{fixable} fixable with --fix")
    if hidden:
        notes.append(f"{hidden} more fixable with --unsafe-fixes")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"Found {count(total, 'problem')} in {count(files, 'file')}{suffix}."


def _would_fix(report: Report, hidden: int) -> str | None:
    more = f" ({_fixes(hidden)} available with --unsafe-fixes)" if hidden else ""
    if report.fixed:
        files = len(report.fixed_paths)
        return f"Would fix {count(report.fixed, 'problem')} in {count(files, 'file')}{more}."
    return f"No problems would be fixed{more}." if hidden else None


def _fixed(report: Report, hidden: int) -> str | None:
    more = f" ({_fixes(hidden)} available with --unsafe-fixes)" if hidden else ""
    if report.fixed:
        return f"Fixed {count(report.fixed, 'problem')}{more}."
    return f"No problems fixed{more}." if hidden else None


def _hidden(report: Report, options: Options) -> int:
    """Fixes of the findings left that only `--unsafe-fixes` would apply."""
    if options.unsafe_fixes:
        return 0
    remaining = report.diagnostics
    return fixable_count(remaining, unsafe=True) - fixable_count(remaining, unsafe=False)


def _fixes(number: int) -> str:
    return f"{number} fix{'' if number == 1 else 'es'}"


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
