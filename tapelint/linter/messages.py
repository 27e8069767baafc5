"""A diagnostic's message as its two parts: the problem, and the advice (what to do).

Every rule that reports findings writes its message as `problem; advice`: the advice is the
text after the message's last `; ` that is not inside a backtick-quoted code span (code
quoted in a message may hold `; ` of its own). The test suite holds every rule to this over
every fixture. The concise and grouped formats print the problem alone, on one short line;
the full format prints the advice as its `help:` line; JSON, SARIF and the text format keep
the whole message.

The diagnostics the engine reports itself (TAP001: the file does not parse; TAP002: it cannot
be read) carry the parser's or the file system's words and have no advice.
"""

from __future__ import annotations

from dataclasses import dataclass

from tapelint.findings.diagnostics import Diagnostic
from tapelint.linter.registry import rule_by_code_or_name

_SEPARATOR = "; "


@dataclass(frozen=True)
class Message:
    problem: str
    advice: str | None  # None: the message says only what is wrong


def split(diagnostic: Diagnostic) -> Message:
    """The problem and the advice of `diagnostic`'s message."""
    text = diagnostic.message
    rule = rule_by_code_or_name(diagnostic.code)
    if rule is None or rule.engine_reported:
        return Message(text, None)
    cut = _last_separator_outside_code(text)
    if cut is None:
        return Message(text, None)
    return Message(text[:cut], text[cut + len(_SEPARATOR) :])


def _last_separator_outside_code(text: str) -> int | None:
    found = None
    in_code = False
    for index, char in enumerate(text):
        if char == "`":
            in_code = not in_code
        elif not in_code and text.startswith(_SEPARATOR, index):
            found = index
    return found
