"""Which runtime-only findings to report: the same rule selection (`select`, `ignore`,
`per-file-ignores`) and `# noqa` comments as static diagnostics get.

A code this tapelint has no rule for yet (its static half is another rule's branch) is
reported unless an `ignore` selector names it or a prefix of it.
"""

from __future__ import annotations

from pathlib import Path

from tapelint.linter.registry import rule_by_code_or_name
from tapelint.linter.suppression import file_suppressions, line_suppression
from tapelint.settings.config import Settings
from tapelint.settings.globs import Globs, relative_posix
from tapelint.settings.selection import rules_matching, select_rules


class RuntimeFindingFilter:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        chosen = select_rules(
            settings.select, settings.extend_select, settings.ignore, preview=settings.preview
        )
        self.selected = {rule.code for rule in chosen}
        self.per_file = [
            (Globs([glob]), {r.code for s in selectors for r in rules_matching(s, preview=True)})
            for glob, selectors in settings.per_file_ignores
        ]
        self._lines: dict[str, list[str]] = {}

    def __call__(self, code: str, path: str, line: int) -> bool:
        return self._selected(code, path) and not self._suppressed(code, path, line)

    def _selected(self, code: str, path: str) -> bool:
        if rule_by_code_or_name(code) is None:
            return not any(code.startswith(s.upper()) for s in self.settings.ignore)
        if code not in self.selected:
            return False
        relative = relative_posix(Path(path), self.settings.root) or Path(path).name
        return not any(code in codes for globs, codes in self.per_file if globs.match(relative))

    def _suppressed(self, code: str, path: str, line: int) -> bool:
        if path not in self._lines:
            try:
                self._lines[path] = Path(path).read_text(encoding="utf-8").split("\n")
            except (OSError, UnicodeDecodeError):
                self._lines[path] = []
        lines = self._lines[path]
        rule = rule_by_code_or_name(code)
        names = {code} | ({rule.name.upper()} if rule else set())
        selectors = file_suppressions("\n".join(lines))
        if 0 < line <= len(lines):
            on_line = line_suppression(lines[line - 1])
            if on_line is not False:
                selectors.append(on_line)
        return any(
            found is None or any(name.startswith(s) or name == s for s in found for name in names)
            for found in selectors
        )
