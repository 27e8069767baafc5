"""The probe's watch on the diagnosed lines (`probe/raises.py`), on a plain Python program
started the way `tapelint validate` starts one (its sitecustomize on PYTHONPATH): exceptions
the program catches are seen at their lines, in the main script and in an imported module,
and the program runs exactly as it does without the probe (output, exit status, traceback).
No TensorFlow needed: the watch starts before any import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tapelint.validate.launch import probe_environment
from tapelint.validate.observations import read_events
from tapelint.validate.probe import schema

MAIN = textwrap.dedent(
    """\
    import os
    import sys
    from helper import guarded, risky

    def step(x):
        return 1 / x  # watched

    for x in (0, 1):
        try:
            step(x)
        except ZeroDivisionError:
            print("caught")

    print("helper:", repr(guarded(risky)))
    try:
        {}["missing"]  # watched
    except KeyError:
        pass

    if sys.argv[1:] == ["crash"]:
        step(0)
    if sys.argv[1:] == ["exit"]:
        sys.exit(3)
    print("argv", sys.argv[1:], os.path.dirname(os.path.abspath(__file__)) == sys.path[0])
    """
)
HELPER = textwrap.dedent(
    """\
    def risky():
        return {}["key"]  # watched

    def guarded(function):
        try:
            return function()
        except Exception as error:
            return error
    """
)


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "helper.py").write_text(HELPER)
    sites = {
        str((tmp_path / "main.py").resolve()): [
            [_line(MAIN, "return 1 / x"), _line(MAIN, "return 1 / x")],
            [_line(MAIN, '{}["missing"]'), _line(MAIN, '{}["missing"]')],
        ],
        str((tmp_path / "helper.py").resolve()): [[2, 2]],
    }
    (tmp_path / "sites.json").write_text(json.dumps(sites))
    return tmp_path


def _run(folder: Path, *args: str, probe: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if probe:
        env = probe_environment(folder / "events.jsonl", 3, folder / "sites.json")
    return subprocess.run(
        [sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )


def test_caught_exceptions_are_seen_at_their_lines(program: Path) -> None:
    result = _run(program, "main.py", probe=True)
    assert result.returncode == 0, result.stderr
    raised = {
        (Path(e.where.path).name, e.where.first, e["type"])
        for e in read_events(program / "events.jsonl", program).of(schema.RAISE)
    }
    assert raised == {
        ("main.py", _line(MAIN, "return 1 / x"), "ZeroDivisionError"),
        ("main.py", _line(MAIN, '{}["missing"]'), "KeyError"),
        ("helper.py", 2, "KeyError"),
    }


@pytest.mark.parametrize("argument", ["run", "crash", "exit"])
def test_the_program_runs_as_it_does_without_the_probe(program: Path, argument: str) -> None:
    plain = _run(program, "main.py", argument, probe=False)
    watched = _run(program, "main.py", argument, probe=True)
    assert (watched.returncode, watched.stdout) == (plain.returncode, plain.stdout)
    assert watched.stderr == plain.stderr  # the same traceback, frame for frame
    assert plain.returncode == {"run": 0, "crash": 1, "exit": 3}[argument]


def test_python_dash_m_runs_as_usual(program: Path) -> None:
    plain = _run(program, "-m", "main", "run", probe=False)
    watched = _run(program, "-m", "main", "run", probe=True)
    assert (watched.returncode, watched.stdout, watched.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    helper = [
        e
        for e in read_events(program / "events.jsonl", program).of(schema.RAISE)
        if e.where.path.endswith("helper.py")
    ]
    assert helper  # an imported module is watched however the program starts
