"""Shell completion (click's, documented in docs/cli.md): options, and rule codes and names
for the selector options and `tapelint rule`. Runs the real command as a shell would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def completions(*words: str) -> list[str]:
    """What bash is offered for the last of `words` (`tapelint` comes first)."""
    env = {
        **os.environ,
        "_TAPELINT_COMPLETE": "bash_complete",
        "COMP_WORDS": " ".join(("tapelint", *words)),
        "COMP_CWORD": str(len(words)),
    }
    result = subprocess.run(
        [sys.executable, "-m", "tapelint"], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [line.partition(",")[2] for line in result.stdout.splitlines()]


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore", "--unfixable"])
def test_selector_options_complete_rule_codes(option):
    offered = completions("check", option, "tap10")
    assert "TAP101" in offered and "TAP102" in offered
    assert all(code.startswith("TAP10") for code in offered)


def test_a_comma_separated_list_completes_its_last_selector():
    assert completions("check", "--select", "TAP101,TAP40") == [
        "TAP101,TAP401",
        "TAP101,TAP402",
        "TAP101,TAP403",
        "TAP101,TAP404",
    ]


def test_rule_completes_codes_and_names():
    assert completions("rule", "unfiltered-") == ["unfiltered-apply-gradients"]
    assert "TAP401" in completions("rule", "TAP4")


def test_validate_completes_rule_codes_too():
    assert "TAP201" in completions("validate", "--ignore", "TAP2")
