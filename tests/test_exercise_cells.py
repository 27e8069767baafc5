"""Exercise blanks: the cells a course leaves for the student are told apart from real
syntax errors by what the cell says, not by the error."""

from __future__ import annotations

import pytest

from tapelint.parsing.slicer import SyntaxProblem
from tapelint.settings.policies.exercise_cells import is_exercise_blank
from tapelint.sources.ipython_input import cell_code


def _problem(lines: list[str]) -> SyntaxProblem:
    problem = cell_code(lines)
    assert isinstance(problem, SyntaxProblem), "the cell must fail to parse"
    return problem


@pytest.mark.parametrize(
    "cell",
    [
        "real_loss = # TODO: Your code goes here.\nreturn_value = real_loss",
        "def compute_gradients(X, Y):\n    # YOUR CODE HERE",
        "chars = #insert code here",
        "self.embedding = #insert code here",
        "decoded = decode(data)\nresized = #TODO: Resize decoded image",
        "# TODO 4 - Your code goes here.\n\n  save(index, path)",
        "### START CODE HERE ###\nA = \n### END CODE HERE ###",
        "def sum_squares(N):\n    return <YOUR CODE: student.implement_me()>",
        "<this cell looks as if it wants you to create variables here>",
        "loss, _ = run([loss, step], <YOUR CODE: feed values to placeholders>)",
        "def vectorize(s):\n  # TODO\n\nvectors = vectorize(songs)",
        "model = Sequential([\n    Flatten(),\n    [TODO Dense layer to output probabilities]\n])",
        "def euclidean(p):\n    # TODO 2: Create londiff\n    # the difference of lon\n    londiff = \n"
        "    return londiff",
        "path = 'export'\n\n# TODO 5: Export the model\n# Specify the path\n# Tip: see the guide\n"
        "tf. # <--- complete",
    ],
)
def test_blanks_left_for_the_student(cell):
    lines = cell.splitlines()
    assert is_exercise_blank(lines, _problem(lines))


@pytest.mark.parametrize(
    "cell",
    [
        "def report(history)\n    print(history)",
        "# TODO: tidy this up\nx = 1\ny = 2\nz = 3\ndef f(a)\n    return a",
        "# TODO: tidy this up\nx = 1\n# compute the report\ndef f(a)\n    return a",
        "print 'hello'",
        "todo_list = [1, 2\nprint(todo_list)",
        "raise ValueError, 'something is wrong'",
        "if a < b\n    print(a)",
        "x = a <b> c d",
    ],
)
def test_real_syntax_errors(cell):
    lines = cell.splitlines()
    assert not is_exercise_blank(lines, _problem(lines))


def test_html_is_no_placeholder():
    lines = ["# Setup", "%%html", "<div>Begin</div>"]
    problem = _problem(lines)
    assert not is_exercise_blank(lines, problem)
