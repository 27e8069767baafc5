"""Every rule's documented examples do what the documentation says, checked alone.

The code blocks come from the text `tapelint rule CODE` prints (the same text the site's rule
pages show). Each block is a whole program a reader could paste: it is written to a file of its
own, in a directory of its own, and checked with the real
`tapelint check --preview --output-format json` (the command itself, run in-process by
click's test runner). Every block of the "## Example" section, checked with `--select CODE`,
must report CODE; every block of the "Use instead" section (up to the next heading) must
report nothing from any rule, preview rules included: a reader copies it as the right way to
write the step, so it must not draw another rule's finding (an unfiltered update, say).

Two rules are about the file rather than its code, and are special:

- TAP001 (syntax-error): its Example is the one block that does not parse; every other block,
  its own Use instead included, must parse, so that a Use instead cannot report nothing merely
  because it is not Python.
- TAP002 (unreadable-file): its Example says the file is saved as Latin-1, so its blocks are
  written in Latin-1; the Use instead is the same file with a coding cookie.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.linter.registry import all_rules

FENCE = re.compile(r"^```python\n(.*?)^```$", flags=re.DOTALL | re.MULTILINE)
# The encoding each rule's example files are written in: the one its Example names.
ENCODING = {"TAP002": "latin-1"}
UNPARSABLE_EXAMPLE = "TAP001"
RULES = [rule.code for rule in all_rules()]


def printed_documentation(code: str) -> str:
    result = CliRunner().invoke(cli, ["rule", code], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def example_blocks(code: str) -> tuple[list[str], list[str]]:
    """The code blocks of the "## Example" section, and those of its "Use instead"."""
    _, found, after_heading = printed_documentation(code).partition("\n## Example\n")
    assert found, f"{code}'s documentation has no '## Example' section"
    example, found, after_example = after_heading.partition("\nUse instead")
    assert found, f"{code}'s documentation has no 'Use instead' after its Example"
    use_instead = after_example.split("\n## ", 1)[0]
    return FENCE.findall(example), FENCE.findall(use_instead)


def reported_codes(
    code: str, source: str, directory: Path, monkeypatch: pytest.MonkeyPatch, *, select: str
) -> list[str]:
    """The codes `tapelint check --select SELECT --preview` reports for `source` (a block of
    CODE's documentation), written to `example.py` alone in `directory` and checked from
    there (no config, no cache)."""
    directory.mkdir()
    (directory / "example.py").write_bytes(source.encode(ENCODING.get(code, "utf-8")))
    monkeypatch.chdir(directory)
    command = ["check", "--select", select, "--preview", "--output-format", "json", "--no-cache"]
    result = CliRunner().invoke(cli, [*command, "example.py"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return [diagnostic["code"] for diagnostic in json.loads(result.stdout)]


@pytest.mark.parametrize("code", RULES)
def test_every_example_block_parses_but_the_syntax_errors(code: str) -> None:
    example, use_instead = example_blocks(code)
    assert example, f"{code}'s Example has no code block"
    assert use_instead, f"{code}'s Use instead has no code block"
    for block in use_instead if code == UNPARSABLE_EXAMPLE else example + use_instead:
        ast.parse(block)
    if code == UNPARSABLE_EXAMPLE:
        for block in example:
            with pytest.raises(SyntaxError):
                ast.parse(block)


@pytest.mark.parametrize("code", RULES)
def test_the_example_reports_its_rule(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example, _ = example_blocks(code)
    assert example, f"{code}'s Example has no code block"
    for number, block in enumerate(example, start=1):
        reported = reported_codes(
            code, block, tmp_path / f"example_{number}", monkeypatch, select=code
        )
        assert code in reported, f"{code}'s Example block {number} reports nothing:\n{block}"


@pytest.mark.parametrize("code", RULES)
def test_use_instead_reports_nothing(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, use_instead = example_blocks(code)
    assert use_instead, f"{code}'s Use instead has no code block"
    for number, block in enumerate(use_instead, start=1):
        reported = reported_codes(
            code, block, tmp_path / f"use_instead_{number}", monkeypatch, select="TAP"
        )
        assert reported == [], f"{code}'s Use instead block {number} reports {reported}:\n{block}"
