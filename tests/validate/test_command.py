"""The `validate` command's own behaviour: commands after `--`, a missing TensorFlow, bad
usage. Real processes, real TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

from tests.validate.runs import ROOT


def _tapelint(*args: str, cwd: Path = ROOT, path: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tapelint", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), path]))},
    )


def test_a_command_after_dash_dash_runs_as_is() -> None:
    script = "fixtures/runtime/unfiltered_frozen_head.py"
    result = _tapelint("--quiet", "--output-format", "json", "--", sys.executable, script)
    assert result.returncode == 1, result.stderr[-2000:]
    [item] = json.loads(result.stdout)
    assert (item["code"], item["runtime"], item["origin"]) == ("TAP401", "confirmed", "static")
    assert "auxiliary/kernel" in item["cost"]["text"]


def test_an_interpreter_without_tensorflow_gets_install_instructions(tmp_path: Path) -> None:
    venv.create(tmp_path / "env", with_pip=False)
    python = tmp_path / "env" / "bin" / "python"
    result = _tapelint("--quiet", "--", str(python), "-c", "print('hello')")
    assert result.returncode == 2
    assert "TensorFlow is not importable" in result.stderr
    assert "pip install 'tapelint[validate]'" in result.stderr


def test_a_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    result = _tapelint("no_such_script.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "no such script" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_command_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    result = _tapelint("--", str(tmp_path / "missing-program"), cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot run" in result.stderr


def test_pytest_run_with_python_dash_m_is_instrumented() -> None:
    suite = "fixtures/runtime/pytest_suite.py"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", suite]
    result = _tapelint("--quiet", "--output-format", "json", "--", *command)
    assert result.returncode == 1, result.stderr[-2000:]
    [item] = json.loads(result.stdout)
    line = next(
        number
        for number, text in enumerate((ROOT / suite).read_text().splitlines(), start=1)
        if "the TAP401 line" in text
    )
    assert (item["line"], item["code"], item["runtime"]) == (line, "TAP401", "confirmed")
    assert "The program exited with status 0 after 2 optimizer steps" in result.stderr


def test_a_runtime_finding_obeys_noqa(tmp_path: Path) -> None:
    runtime = ROOT / "fixtures" / "runtime"
    (tmp_path / "gradients_on_state.py").write_text((runtime / "gradients_on_state.py").read_text())
    helper = (runtime / "state_helpers.py").read_text()
    marked = "optimizer.apply_gradients(zip(state.grads, state.variables))"
    assert marked in helper
    (tmp_path / "state_helpers.py").write_text(helper.replace(marked, marked + "  # noqa: TAP401"))
    result = _tapelint("--quiet", "--output-format", "json", "gradients_on_state.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout) == []
    assert "0 found at runtime only" in result.stderr


def test_check_does_not_load_the_validator() -> None:
    script = "import sys, tapelint.cli; assert 'tapelint.validate' not in sys.modules"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_an_existing_sitecustomize_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("MARK = 'the project sitecustomize ran'\n")
    show = "import sys; print(sys.modules['sitecustomize'].MARK)"
    result = _tapelint("--", sys.executable, "-c", show, path=str(tmp_path))
    assert "the project sitecustomize ran" in result.stdout
    assert result.returncode == 0, result.stderr[-2000:]


TRAINING_SUITE = "fixtures/runtime/pytest_training_suite.py"


def _passed(output: str) -> str:
    """pytest's summary: `4 passed`."""
    [summary] = [line for line in output.splitlines() if " passed" in line]
    return summary.split(" in ")[0].strip()


def test_a_test_command_runs_every_test_by_default() -> None:
    """No step limit by default after `--`: 3 training tests of 4 steps each and a last
    test all run, as in a plain pytest run."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TRAINING_SUITE]
    plain = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert plain.returncode == 0, plain.stdout[-2000:]
    result = _tapelint("--", *command)
    assert _passed(result.stdout) == _passed(plain.stdout) == "4 passed", result.stderr[-2000:]
    assert "Stopped the program" not in result.stderr
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_command_stopped_at_max_steps_exits_non_zero_and_says_so() -> None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TRAINING_SUITE]
    result = _tapelint("--max-steps", "2", "--", *command)
    assert result.returncode == 4, result.stderr[-2000:]
    assert "stopped the command at --max-steps 2" in result.stderr
    assert " passed" not in result.stdout


def test_paths_are_relative_to_the_working_directory_in_every_format(tmp_path: Path) -> None:
    """A script outside the working directory is `../...`, as text and as JSON (issue 33)."""
    elsewhere, work = tmp_path / "elsewhere", tmp_path / "work"
    elsewhere.mkdir()
    work.mkdir()
    script = ROOT / "fixtures" / "runtime" / "unfiltered_frozen_head.py"
    (elsewhere / "train.py").write_text(script.read_text())
    text = _tapelint("--quiet", "../elsewhere/train.py", cwd=work)
    assert "../elsewhere/train.py:22:5: TAP401" in text.stdout, text.stderr[-2000:]
    as_json = _tapelint("--quiet", "--output-format", "json", str(elsewhere / "train.py"), cwd=work)
    [item] = json.loads(as_json.stdout)
    assert item["path"] == "../elsewhere/train.py"
