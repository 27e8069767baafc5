"""Rule documentation for editors: the hover text and the page a diagnostic's code links to.

Both are the text `tapelint rule CODE` prints. tapelint has no documentation website, so a
diagnostic's `codeDescription` links to a Markdown file of that text, written on first use
into a private temporary directory that is removed when the server exits: clicking the code
in the editor opens the rule's documentation, offline and for the installed version.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tapelint.registry import rule_by_code_or_name
from tapelint.rule import Rule


def rule_page(rule: type[Rule]) -> str:
    """What `tapelint rule` prints for `rule`, without the final newline."""
    default = "preview" if rule.preview else "on by default"
    header = f"{rule.code} {rule.name} ({rule.severity.value}, {default})"
    return f"{header}\n\n{rule.documentation()}"


class RulePages:
    """A Markdown file per rule, written when first linked to."""

    def __init__(self) -> None:
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._uris: dict[str, str] = {}

    def uri(self, code: str) -> str | None:
        """The file URI of the rule's page; None for an unknown code."""
        if code in self._uris:
            return self._uris[code]
        rule = rule_by_code_or_name(code)
        if rule is None:
            return None
        if self._directory is None:
            self._directory = tempfile.TemporaryDirectory(prefix="tapelint-rules-")
        page = Path(self._directory.name) / f"{rule.code}-{rule.name}.md"
        page.write_text(rule_page(rule) + "\n", encoding="utf-8")
        self._uris[code] = page.as_uri()
        return self._uris[code]

    def close(self) -> None:
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None
            self._uris.clear()
