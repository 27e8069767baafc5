"""`tapelint validate` on every script in fixtures/runtime/, on real TensorFlow: each run
must give exactly the verdicts the fixture's markers state, and its exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.validate.runs import (
    RUNTIME,
    expectation,
    expected_verdicts,
    observed_verdicts,
    validate,
)

SCRIPTS = sorted(
    path.name for path in RUNTIME.glob("*.py") if "# exit:" in path.read_text(encoding="utf-8")
)
# Files the scripts import or run: their markers hold for those scripts too.
IMPORTED = {
    "cross_module_helper.py": ["update_helpers.py"],
    "gradients_on_state.py": ["state_helpers.py"],
    "spawns_trainer.py": ["unfiltered_frozen_head.py"],
}


def _found(expected: set, observed: set) -> set:
    """`found` markers accept a confirmed static diagnostic or a runtime finding."""
    resolved = set()
    for name, line, code, status in expected:
        if status == "found":
            for candidate in ("confirmed", "runtime"):
                if (name, line, code, candidate) in observed:
                    status = candidate
        resolved.add((name, line, code, status))
    return resolved


@pytest.mark.parametrize("script", SCRIPTS)
def test_verdicts_match_the_markers(script: str) -> None:
    run = validate(script)
    files = [RUNTIME / script, *(RUNTIME / name for name in IMPORTED.get(script, []))]
    observed = observed_verdicts(run)
    expected = _found(expected_verdicts(files), observed)
    assert observed == expected, run.stderr[-3000:]


@pytest.mark.parametrize("script", SCRIPTS)
def test_exit_status(script: str) -> None:
    run = validate(script)
    assert run.exit_code == expectation(RUNTIME / script).exit_code, run.stderr[-3000:]


UPDATE_CODES = ("TAP401", "TAP403")
UPDATE_SCRIPTS = [
    script
    for script in SCRIPTS
    if any(code in (RUNTIME / script).read_text(encoding="utf-8") for code in UPDATE_CODES)
    and "# keras 2: no" not in (RUNTIME / script).read_text(encoding="utf-8")
]


@pytest.mark.parametrize("script", UPDATE_SCRIPTS)
def test_keras2_stack_gives_the_same_update_verdicts(script: str) -> None:
    """On a Keras 2 stack (`tf_keras` as `keras`, `TF_USE_LEGACY_KERAS=1`), every TAP401 and
    TAP403 marker of a fixture holds as it does on Keras 3."""
    run = validate(script, keras2=True)
    files = [RUNTIME / script, *(RUNTIME / name for name in IMPORTED.get(script, []))]
    observed = {item for item in observed_verdicts(run) if item[2] in UPDATE_CODES}
    expected = {item for item in expected_verdicts(files) if item[2] in UPDATE_CODES}
    assert observed == _found(expected, observed), run.stderr[-3000:]


def _lines_run(script: str) -> set[int]:
    """The script's lines that ran in a plain run under `sys.settrace` (tests/validate/
    lines_run.py), up to its end: only for runs the validator did not stop."""
    expect = expectation(RUNTIME / script)
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("lines_run.py")), script, *expect.args],
        cwd=RUNTIME,
        capture_output=True,
        text=True,
        timeout=int(expect.timeout or 120) + 60,
        check=False,
    )
    marker = [line for line in result.stderr.splitlines() if line.startswith("LINES-RUN ")]
    assert marker, result.stderr[-2000:]
    return set(json.loads(marker[-1].removeprefix("LINES-RUN ")))


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_line_that_ran_is_not_reached(script: str) -> None:
    """No verdict is `not-reached` for a line of the script that ran, as a plain run traced
    line by line shows (runs the validator stopped or killed run less: not compared)."""
    run = validate(script)
    if "Stopped the program" in run.stderr or "time limit" in run.stderr:
        pytest.skip("the validator stopped this run early; a plain run goes further")
    ran = _lines_run(script)
    wrong = [
        (item["line"], item["code"])
        for item in run.items
        if item["runtime"] == "not-reached"
        and Path(item["path"]).name == script
        and item["line"] in ran
    ]
    assert not wrong, run.stderr[-2000:]


def test_a_program_stopped_after_max_steps_says_so() -> None:
    assert "Stopped the program after 3 optimizer steps" in validate("gan_two_optimizers.py").stderr


def test_model_fit_steps_are_counted_and_stopped() -> None:
    assert "after 3 optimizer steps (--max-steps 3)" in validate("fit_custom_train_step.py").stderr


def test_updates_seen_while_a_compiled_step_traced_are_counted_as_traces() -> None:
    [item] = [i for i in validate("tf_function_step.py").items if i["code"] == "TAP401"]
    assert "a None gradient reached it in 2 of 2 traces of the compiled step" in item["evidence"]
    assert "updates" not in item["evidence"]


def test_a_crash_before_training_is_summarised() -> None:
    stderr = validate("crash_before_training.py").stderr
    assert "failed before its first training step: FileNotFoundError" in stderr
    assert "crash_before_training.py:13" in stderr


def test_a_program_that_never_ends_is_killed_at_the_time_limit() -> None:
    stderr = validate("loops_forever.py").stderr
    assert "at the time limit (20 s)" in stderr
    assert "still running at the time limit" in stderr


def test_runtime_only_finding_points_into_the_helper_module() -> None:
    [item] = validate("gradients_on_state.py").items
    assert item["path"].endswith("state_helpers.py")
    assert item["origin"] == "runtime"
    assert "dense_2/kernel" in item["message"]


def test_a_call_that_hands_gradients_to_a_helper_is_confirmed_at_the_helpers_apply() -> None:
    [item] = validate("cross_module_helper.py").items
    assert item["path"].endswith("runtime/cross_module_helper.py")
    assert (item["line"], item["origin"]) == (27, "static")
    places = [(place["path"].rpartition("/")[2], place["line"]) for place in item["related"]]
    assert places == [("cross_module_helper.py", 23), ("update_helpers.py", 6)]
    assert item["runtime"] == "confirmed"
    assert "a None gradient reached it" in item["evidence"]
    assert "dense_2/kernel" in item["cost"]["text"]  # the variables that got none, by name


def test_an_error_raised_while_tracing_is_summarised_by_its_own_message() -> None:
    # TensorFlow prefixes it with "in user code:" and a traceback; the evidence is one line.
    # (Raised where the layer built in `train_step` is first called, it is the constructor's.)
    [item] = [i for i in validate("compiled_steps.py").items if i["code"] == "TAP502"]
    assert item["evidence"].startswith("ValueError: tf.function only supports singleton")
    assert "\n" not in item["evidence"]
