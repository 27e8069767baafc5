"""The flake8 plugin, through a real `flake8` process: the same findings as `tapelint check`
at the same line and column, and flake8's own select, ignore and noqa deciding."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tapelint.integrations.flake8_plugin import TapelintChecker, _linters, _settings
from tapelint.linter.registry import all_rules
from tests.cli_helpers import LOSS_OUTSIDE, UNFILTERED
from tests.fixture_markers import FIXTURES

ROOT = FIXTURES.parent


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`flake8 --isolated ARGS`: no config file of the machine or the repository applies."""
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def findings(output: str) -> set[tuple[str, int, int, str, str]]:
    result = set()
    for line in output.splitlines():
        path, row, col, rest = line.split(":", 3)
        code, _, message = rest.strip().partition(" ")
        result.add((Path(path).as_posix(), int(row), int(col), code, message))
    return result


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def _plugin_is_registered() -> None:
    """These tests need tapelint installed (`pip install -e '.[test]'`): flake8 finds plugins
    by their entry point, and a missing one must fail the tests, not skip them."""
    entry_points = metadata.entry_points(group="flake8.extension")
    targets = {entry.name: entry.value for entry in entry_points}
    assert targets.get("TAP") == "tapelint.integrations.flake8_plugin:TapelintChecker", (
        "the flake8 entry point TAP is not installed; run: pip install -e '.[test]'"
    )


def test_flake8_reports_what_tapelint_check_reports_at_the_same_positions() -> None:
    folders = [*sorted(p.name for p in FIXTURES.glob("TAP[1-9]*")), "clean"]
    paths = [f"fixtures/{name}" for name in folders]
    by_flake8 = flake8("--select", "TAP", *paths, cwd=ROOT)
    assert by_flake8.returncode == 1, by_flake8.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--output-format", "json", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # flake8 runs no plugin on a file Python cannot parse (its own E999 stands there), such
    # as a Colab export that tapelint reads as IPython (see the plugin's docstring).
    by_tapelint = {
        (d["path"], d["line"], d["column"], d["code"], d["message"])
        for d in json.loads(checked.stdout)
        if _parses(ROOT / d["path"])
    }
    assert len(by_tapelint) > 50  # the fixtures are full of findings
    assert findings(by_flake8.stdout) == by_tapelint


@pytest.fixture
def bad_step(tmp_path: Path) -> Path:
    (tmp_path / "step.py").write_text(LOSS_OUTSIDE)  # TAP101 at 8:12
    (tmp_path / "apply.py").write_text(UNFILTERED)  # TAP401 at 8:5
    return tmp_path


def test_select_and_ignore_are_flake8s(bad_step: Path) -> None:
    everything = findings(flake8("--select", "TAP", ".", cwd=bad_step).stdout)
    assert {(p, row, col, code) for p, row, col, code, _ in everything} == {
        ("step.py", 8, 12, "TAP101"),
        ("apply.py", 8, 5, "TAP401"),
    }
    only_4xx = findings(flake8("--select", "TAP4", ".", cwd=bad_step).stdout)
    assert {code for *_, code, _ in only_4xx} == {"TAP401"}
    ignored = flake8("--select", "TAP", "--ignore", "TAP401", ".", cwd=bad_step)
    assert {code for *_, code, _ in findings(ignored.stdout)} == {"TAP101"}
    per_file = flake8("--select", "TAP", "--per-file-ignores", "step.py:TAP1", ".", cwd=bad_step)
    assert {code for *_, code, _ in findings(per_file.stdout)} == {"TAP401"}


def test_default_selection_includes_the_plugin(bad_step: Path) -> None:
    result = flake8("step.py", cwd=bad_step)
    assert "step.py:8:12: TAP101 " in result.stdout


def test_noqa_is_flake8s(bad_step: Path) -> None:
    step = bad_step / "step.py"
    line = "    return tape.gradient(loss, model.trainable_variables)"
    step.write_text(LOSS_OUTSIDE.replace(line, line + "  # noqa: TAP101"))
    assert flake8("--select", "TAP", "step.py", cwd=bad_step).stdout == ""
    step.write_text(LOSS_OUTSIDE.replace(line, line + "  # noqa: E501"))
    assert "TAP101" in flake8("--select", "TAP", "step.py", cwd=bad_step).stdout


def test_a_file_that_does_not_parse_is_flake8s_e999(bad_step: Path) -> None:
    (bad_step / "broken.py").write_text("import tensorflow as tf\nwith tf.GradientTape() as t\n")
    result = flake8("broken.py", cwd=bad_step)
    assert "E999" in result.stdout
    assert "TAP" not in result.stdout


def test_standard_input_is_checked_with_the_given_name(bad_step: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TAP", "-"],
        input=LOSS_OUTSIDE,
        cwd=bad_step,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "stdin:8:12: TAP101 " in result.stdout


def test_the_plugin_runs_no_preview_rule_and_no_tool_rule(tmp_path: Path) -> None:
    expected = {r.code for r in all_rules() if not r.preview and not r.engine_reported}
    assert _linters(_settings(tmp_path)).for_file(tmp_path / "train.py").codes == expected
    assert TapelintChecker.name == "tapelint"


def test_flake8_with_the_plugin_never_imports_tensorflow() -> None:
    script = (
        "import sys\n"
        "from flake8.main.cli import main\n"
        "try:\n"
        f"    main(['--isolated', '--select', 'TAP', {str(FIXTURES)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'tapelint.integrations.flake8_plugin' in sys.modules, 'the plugin did not run'\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
