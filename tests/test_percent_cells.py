"""Percent-format files (`# %%` cells): indentation IPython takes off a cell is no syntax
error; anything else is."""

from __future__ import annotations

import subprocess
import sys

from tapelint.sources.percent_cells import runs_as_cells


def test_an_indented_cell_runs_as_a_cell():
    text = "# %%\nimport math\n\n# %%\n    y = math.sqrt(2)\n    print(y)\n"
    assert runs_as_cells(text)


def test_a_real_syntax_error_in_a_cell():
    text = "# %%\nimport math\n\n# %%\nif math.pi > 3\n    print('pi')\n"
    assert not runs_as_cells(text)


def test_a_file_without_cells():
    assert not runs_as_cells("    y = 1\n")


def test_the_code_before_the_first_marker_is_a_cell_too():
    assert not runs_as_cells("def f(:\n    pass\n# %%\nx = 1\n")
    assert runs_as_cells("x = 1\n# %%\n  y = 2\n")


def test_the_cli_reports_a_real_error_and_not_an_indented_cell(tmp_path):
    """Through `tapelint check`: the indented cell gives nothing, the missing colon TAP001.
    (Written here, not as a fixture: fixture files must parse, see fixtures/README.md.)"""
    tape = "import tensorflow as tf\n\nx = tf.constant(3.0)\n"
    (tmp_path / "cells.py").write_text(
        f"# %%\n{tape}\n# %%\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
    )
    (tmp_path / "broken.py").write_text(
        f"# %%\n{tape}\n# %%\nwith tf.GradientTape() as tape\n    tape.watch(x)\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--no-cache", "cells.py", "broken.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.stdout.splitlines() == ["broken.py:7:31: TAP001 cannot parse: expected ':'"]
