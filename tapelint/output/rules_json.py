"""`tapelint rules --output-format json`: the rules as a JSON list, for tools and scripts.

Each: code, name, severity, preview (true: runs only with `--preview`), fixable (true: some
of its findings come with a fix, `--fix` or `--unsafe-fixes`), url (its page on the
documentation site) and summary (the first sentence of what it does).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tapelint.findings.rule import Rule


def render(rules: Sequence[type[Rule]]) -> str:
    items = [
        {
            "code": rule.code,
            "name": rule.name,
            "severity": rule.severity.value,
            "preview": rule.preview,
            "fixable": rule.fixable,
            "url": rule.docs_url(),
            "summary": rule.summary(),
        }
        for rule in rules
    ]
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
