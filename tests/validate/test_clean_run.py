"""A run to read: TensorFlow's start-up INFO lines kept out of the program's output unless
the user set `TF_CPP_MIN_LOG_LEVEL`, everything else passed through as it comes, and the
validator's own lines set apart. Real processes, real TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint.validate.tflog import LineFilter, is_noise
from tests.validate.runs import ROOT

BANNER = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
INFO = "I0000 00:00:1796135824.327540   27609 port.cc:153] oneDNN custom operations are on."
PROGRAM_OUTPUT = [
    "step 1: loss 0.25",
    "I think this line is the program's own",
    "\r 10%|#   \r 20%|##  ",
    "W0000 00:00:1796135824.1 27609 x.cc:1] a warning is kept",
    "E0512 10:11:12.123456 27609 y.cc:2] so is an error",
]


@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
def test_the_filter_drops_only_the_info_lines_however_the_output_is_cut(chunk: int) -> None:
    lines = [BANNER, INFO, *PROGRAM_OUTPUT, INFO.replace("I0000", "I0512"), "no newline at the end"]
    data = "\n".join(lines).encode()
    stream = LineFilter()
    out = b"".join(stream.feed(data[i : i + chunk]) for i in range(0, len(data), chunk))
    out += stream.flush()
    assert out.decode() == "\n".join([*PROGRAM_OUTPUT, "no newline at the end"])


def test_a_line_being_written_is_passed_on_at_once_unless_it_may_be_noise() -> None:
    stream = LineFilter()
    assert stream.feed(b"\r 10%|#") == b"\r 10%|#"  # a progress bar is not held back
    assert stream.feed(b"#\n") == b"#\n"
    assert stream.feed(b"I0000 00:00:17961") == b""  # the start of an INFO line waits
    assert stream.feed(b".1 1 port.cc:153] oneDNN\nok\n") == b"ok\n"
    assert not is_noise(b"I0000 is not a timestamp\n")


def _validate(script: Path, *options: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tapelint", "validate", *options, str(script)],
        cwd=script.parent,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def chatty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    script = tmp_path_factory.mktemp("chatty") / "chatty.py"
    script.write_text(
        "import sys\n"
        "import tensorflow as tf\n"
        "print('to stdout:', float(tf.reduce_sum(tf.ones(3))))\n"
        "print('to stderr: done', file=sys.stderr)\n"
    )
    return script


def test_tensorflow_info_log_is_quiet_unless_the_user_set_the_level(chatty: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    quiet = _validate(chatty, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "to stdout: 3.0" in quiet.stdout
    assert "to stderr: done" in quiet.stderr
    assert "absl::InitializeLog" not in quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("I0000")]
    loud = _validate(chatty, env={**env, "TF_CPP_MIN_LOG_LEVEL": "0"})
    assert "absl::InitializeLog" in loud.stderr  # the user asked for TensorFlow's log


def test_the_validators_lines_frame_the_programs_output(chatty: Path) -> None:
    result = _validate(chatty, env=dict(os.environ))
    lines = result.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("tapelint validate: running"))
    end = lines.index("tapelint validate: the program's output ends here")
    assert start < lines.index("to stderr: done") < end
    assert lines[-1].startswith("The program exited with status 0")


def test_with_json_the_programs_output_goes_to_stderr(chatty: Path) -> None:
    result = _validate(chatty, "--output-format", "json", env=dict(os.environ))
    assert json.loads(result.stdout) == []  # stdout is the report and nothing else
    assert "to stdout: 3.0" in result.stderr
