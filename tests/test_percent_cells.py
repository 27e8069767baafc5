"""Percent-format files (`# %%` cells): indentation IPython takes off a cell is no syntax
error; anything else is."""

from __future__ import annotations

from tapelint.percent_cells import runs_as_cells


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
