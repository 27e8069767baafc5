"""Rule documentation for editors: the hover text and the page a diagnostic's code links to.

The hover is the text `tapelint rule CODE` prints, offline and for the installed version. A
diagnostic's `codeDescription` links to the rule's page on the documentation site
(`Rule.docs_url()`), which is generated from that same text, as SARIF's `helpUri` does.
"""

from __future__ import annotations

from tapelint.findings.rule import Rule
from tapelint.linter.registry import rule_by_code_or_name


def rule_page(rule: type[Rule]) -> str:
    """What `tapelint rule` prints for `rule`, without the final newline."""
    default = "preview" if rule.preview else "on by default"
    header = f"{rule.code} {rule.name} ({rule.severity.value}, {default})"
    return f"{header}\n\n{rule.documentation()}"


def page_uri(code: str) -> str | None:
    """The address of the rule's page on the documentation site; None for an unknown code."""
    rule = rule_by_code_or_name(code)
    return rule.docs_url() if rule is not None else None
