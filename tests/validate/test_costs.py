"""What each confirmed problem cost, on real TensorFlow runs of fixtures/runtime/: every
figure is compared with a measurement the fixture makes itself (or with what the fixture
is known to contain), never with a number taken from the validator."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.validate.runs import ROOT, RUNTIME, Run, validate


def _item(run: Run, code: str, line_text: str, script: str) -> dict:
    lines = (RUNTIME / script).read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, start=1) if line_text in text)
    [item] = [i for i in run.items if i["code"] == code and i["line"] == line]
    assert item["runtime"] == "confirmed", item
    return item


def _figure(item: dict, name: str, unit: str) -> object:
    """The value of the one figure named `name` (a name says what it is: one figure each),
    which is in `unit`."""
    [figure] = [f for f in item["cost"]["figures"] if f["name"] == name]
    assert figure["unit"] == unit, figure
    return figure["value"]


def _independent(run: Run, code: str) -> str:
    match = re.search(rf"independent {code}: (.*)", run.stderr)
    assert match, run.stderr[-3000:]
    return match.group(1)


def test_bytes_a_persistent_tape_kept_alive_are_those_the_program_saw_it_keep() -> None:
    run = validate("tape_memory.py")
    for code, marker in (("TAP103", "verdict: TAP103"), ("TAP102", "verdict: TAP102")):
        item = _item(run, code, marker, "tape_memory.py")
        theirs = int(re.match(r"the tape keeps (\d+) bytes", _independent(run, code)).group(1))
        held = _figure(item, "held", "bytes")
        assert theirs >= 3 * 2**20  # several 1 MiB tensors: the figure has a scale to match
        # The tape also keeps TensorFlow's own scalars (a reduction's axis): a few bytes.
        assert theirs <= held <= theirs + 64, (theirs, held)
        assert item["cost"]["text"].startswith(f"held {held / 1e6:.1f} MB for ")
        assert _figure(item, "held_for_seconds", "seconds") > 0
        assert isinstance(_figure(item, "held_for_steps", "steps"), int)


def test_trace_count_is_tensorflows_own_and_tracing_time_fits_in_the_calls() -> None:
    run = validate("retracing_cost.py")
    item = _item(run, "TAP501", "verdict: TAP501", "retracing_cost.py")
    match = re.match(
        r"(\d+) traces; the calls that traced took ([\d.]+) s", _independent(run, "TAP501")
    )
    traces, calls_seconds = int(match.group(1)), float(match.group(2))
    assert traces >= 4  # one per epoch at least
    assert _figure(item, "traces", "traces") == traces
    assert 0 < _figure(item, "tracing", "seconds") <= calls_seconds


def test_what_an_optimizer_rebuilt_per_batch_threw_away() -> None:
    run = validate("optimizer_rebuilt.py")
    item = _item(run, "TAP502", "verdict: TAP502", "optimizer_rebuilt.py")
    match = re.match(
        r"(\d+) optimizers built, 1 step each, (\d+) trainable variables",
        _independent(run, "TAP502"),
    )
    built, variables = int(match.group(1)), int(match.group(2))
    rebuilds = built - 1
    assert _figure(item, "built", "times") == built
    assert _figure(item, "optimizer_steps_reset", "steps") == rebuilds * 1
    assert _figure(item, "slot_variables_recreated", "variables") == rebuilds * 2 * variables


def test_the_variables_without_a_gradient_are_named() -> None:
    run = validate("unfiltered_frozen_head.py")
    item = _item(run, "TAP401", "verdict: TAP401", "unfiltered_frozen_head.py")
    # The layer the loss never uses is named `auxiliary` in the fixture.
    assert _figure(item, "no_gradient", "variables") == ["auxiliary/kernel", "auxiliary/bias"]
    caught = validate("caught_none_gradient.py")
    confirmed = [i for i in caught.items if i["code"] == "TAP403" and i["runtime"] == "confirmed"]
    assert len(confirmed) == 3
    for item in confirmed:  # the fixture's unused variable, whichever way the error was caught
        assert _figure(item, "no_gradient", "variables") == ["frozen_bias"]


def test_the_layers_that_ran_in_inference_mode_are_named() -> None:
    run = validate("inference_mode_layers.py")
    item = _item(run, "TAP303", "verdict: TAP303", "inference_mode_layers.py")
    # The fixture's layers whose output depends on `training` (not the rate-0 dropout).
    names = _figure(item, "inference_mode", "layers")
    assert names == ["input_noise", "features_norm", "head_dropout"]


def test_a_compiled_train_step_names_the_layers_its_call_passes_training_none() -> None:
    run = validate("train_step_without_training_flag.py")
    item = _item(run, "TAP303", "verdict: TAP303", "train_step_without_training_flag.py")
    assert _figure(item, "inference_mode", "layers") == ["hidden_dropout"]


def test_the_text_report_ends_with_the_costs_most_costly_first() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tapelint",
            "validate",
            "--quiet",
            "fixtures/runtime/tape_memory.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = result.stdout.splitlines()
    table = lines[lines.index("What the confirmed problems cost on this run, most costly first:") :]
    assert [line.split()[0] for line in table[1:]] == ["TAP103", "TAP102"]  # 6.3 MB, 4.2 MB
    verdicts = [line for line in lines if "[confirmed] (held " in line]
    assert len(verdicts) == 2
