"""Which rules run: resolving rule selectors the way ruff does.

A selector is a full code (`TAP101`), a code prefix (`TAP1`, `TAP`), a rule name
(`loss-outside-tape`) or `ALL`. The selected set is `select` (default `ALL`), plus
`extend-select`, minus `ignore`, applied in that order: unlike ruff, a more specific selector
does not outrank a broader one (`select = ["TAP101"]`, `ignore = ["TAP1"]` runs nothing).

Preview rules are opt-in: a prefix or `ALL` only reaches them in preview mode, while naming
one exactly (code or name) always selects it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tapelint.linter.registry import all_rules

if TYPE_CHECKING:
    from tapelint.findings.rule import Rule

ALL = "ALL"
_PREFIX = re.compile(r"^TAP\d{0,3}$")


class SelectorError(ValueError):
    """A selector that names no rule; the message suggests close matches."""


def rules_matching(selector: str, *, preview: bool) -> tuple[type[Rule], ...]:
    """The rules `selector` stands for; preview rules only if named exactly or `preview`."""
    key = selector.strip()
    for rule in all_rules():
        if key.upper() == rule.code or key.lower() == rule.name:
            return (rule,)
    upper = key.upper()
    if upper == ALL or _PREFIX.match(upper):
        matched = tuple(
            rule
            for rule in all_rules()
            if (upper == ALL or rule.code.startswith(upper)) and (preview or not rule.preview)
        )
        if upper == ALL or matched or any(r.code.startswith(upper) for r in all_rules()):
            return matched
    raise SelectorError(_unknown_selector_message(selector))


def _unknown_selector_message(selector: str) -> str:
    close = close_matches(selector)
    hint = (
        f"; did you mean {', '.join(close)}?"
        if close
        else "; expected a rule code (TAP101), a code prefix (TAP1), a rule name "
        "(loss-outside-tape) or ALL"
    )
    return f"unknown rule selector {selector!r}{hint}"


def close_matches(word: str) -> list[str]:
    """Codes and names that look like `word`, best first (for "did you mean").

    A code-like word is matched by its longest shared prefix past `TAP` (`TAP19` suggests
    the TAP1xx codes): character similarity alone would rank `TAP401` as high as `TAP101`.
    """
    upper = word.strip().upper()
    codes = [rule.code for rule in all_rules()]
    if upper.startswith("TAP"):
        shared = {code: _shared_prefix(code, upper) for code in codes}
        best = max(shared.values())
        return [code for code in codes if shared[code] == best > len("TAP")][:3]
    names = [rule.name for rule in all_rules()]
    return difflib.get_close_matches(word.strip().lower(), names, n=3, cutoff=0.6) or (
        difflib.get_close_matches(upper, codes, n=3, cutoff=0.6)
    )


def _shared_prefix(a: str, b: str) -> int:
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def validate(selectors: Iterable[str]) -> None:
    """Raise SelectorError for the first selector that names no rule."""
    for selector in selectors:
        rules_matching(selector, preview=True)


def select_rules(
    select: Iterable[str] | None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    *,
    preview: bool = False,
) -> tuple[type[Rule], ...]:
    """The rules to run, in code order. `select=None` means the default, `ALL`."""
    chosen: set[type[Rule]] = set()
    for selector in [*(select if select is not None else [ALL]), *extend_select]:
        chosen.update(rules_matching(selector, preview=preview))
    for selector in ignore:
        chosen.difference_update(rules_matching(selector, preview=True))
    return tuple(rule for rule in all_rules() if rule in chosen)
