"""Reading a notebook cell as IPython runs it: checked against IPython itself.

A real IPython shell is the oracle (in a process of its own, as a kernel has one): for every
cell below, tapelint reports TAP001 exactly when the shell cannot turn the cell into Python
that parses (`InteractiveShell.transform_cell`: the input transformer, then automagic for a
one-line cell). A handful of cells depend on the IPython version (its leading-indentation rule
changed in 9.0.2); for those, the generation that runs them is named, and tapelint must
accept them whichever is installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import IPython
import pytest

from tapelint.parsing.slicer import SyntaxProblem
from tapelint.sources.ipython_input import (
    AUTOMAGIC_NAMES,
    NEUTRAL,
    PYTHON_CELL_MAGICS,
    CellCode,
    cell_code,
)

# IPython 9.0.2 removes the indentation common to all lines; earlier versions remove the
# first line's indentation from the lines that start with it.
COMMON_INDENT = IPython.version_info >= (9, 0, 2)

# Reads a JSON list of cells on stdin; prints, for each, whether IPython runs it (a Python
# cell magic's body is judged as the cell the magic runs), and the magics the shell knows.
ORACLE = """
import ast, json, sys
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)
python_magics = set(json.loads(sys.argv[1]))

def runs(cell):
    try:
        tree = ast.parse(shell.transform_cell(cell))
    except SyntaxError:
        return False
    match tree.body:
        case [ast.Expr(ast.Call(ast.Attribute(attr="run_cell_magic"), [name, _, body]))]:
            return name.value not in python_magics or runs(body.value)
    return True

magics = shell.magics_manager.lsmagic()
print(json.dumps({
    "runs": [runs(cell) for cell in json.load(sys.stdin)],
    "magics": sorted(set(magics["line"]) | set(magics["cell"])),
}))
"""


def read(cell: str) -> CellCode | SyntaxProblem:
    lines = cell.split("\n")
    return cell_code(lines[:-1] if lines[-1] == "" else lines)


SAME_IN_EVERY_VERSION = [
    # leading indentation
    "    x = 1\n    for i in y:\n        z = i\n",
    "\n\n    x = 1\n    y = 2\n",
    "  x = 1\n y = 2\n",  # less indented than the first line: an error
    "    if a:\n        b\n    else:\n        c\n",
    # cell magics
    "%%time\nfor i in range(3):\n    x = i\n",
    "%%timeit -n 10\nmodel(x)\n",
    "%%capture out\n!pip install x\nimport tensorflow as tf\n",
    "%%time\n    for i in range(3):\n        x = i\n",
    "%%time\nwith tf.GradientTape() as tape\n    x = 1\n",  # a broken body
    "%%bash\nfor f in *; do echo $f; done\n",
    "%%writefile train.py\nimport (\n",
    "\n%%time\nx = 1\n",
    "%%time?\n",
    # line magics, shell, help
    "%matplotlib inline\nimport tensorflow as tf\n",
    "    %matplotlib inline\n    import tensorflow as tf\n",
    "for f in files:\n    !wc -l {f}\n",
    "    for f in files:\n        %timeit f(x)\n",
    "!pip install tensorflow \\\n    keras\nimport keras\n",
    "!!ls\n",
    "x = !ls\nprint(x)\n",
    "x = %timeit -o f()\n",
    "files = !ls *.py\nfiles\n",
    "a[1] = !ls\n",
    "x == !ls\n",
    "model.fit?\n",
    "model.fit??\n",
    "?model\n",
    "??tf.GradientTape\n",
    "%timeit?\n",
    "tf.*Tape*?\n",
    "for i in y:\n    i?\n",
    "a = b?\n",
    "f(x)?\n",  # not a name before the ?: IPython fails
    "model.fit? \n",  # a space after the ?
    "x = 1  # what?\n%time y\n",
    "?\n",
    "!echo it's done\nx = 1\n",
    "%timeit f(a,\n  b)\n",  # the magic ends at the line end; the rest is an error
    "%time x \\\n  y\nz = 1\n",
    # automagic: a one-line cell naming a magic without its %
    "pip install -e .\n",
    "ls ./data/train/\n",
    "   pip install tensorflow\n",
    "\n\ncd ..\n",
    "time model(x)\n",
    "%%capture\npip install tensorflow\n",
    "pip install tensorflow\nimport tensorflow\n",  # two lines: no automagic
    "cat data.txt\n\n",  # a blank line after it is a second line
    "pip.install x\n",
    "ls = 3\n",
    "ls, = x y\n",
    # Python that looks like IPython
    "%load_ext autoreload\nstep = (10\n        % 3)\n",
    '%load_ext autoreload\nTEXT = """\n%d steps\n!x\n"""\n',
    "%time x\nok = a != b\nc %= 3\n",
    "%time x\ny = 1 // 2\n",
    "%time x\nlabel = 'what?'\n",
    # prompts pasted with the code
    ">>> x = 1\n>>> for i in y:\n...     z = i\n",
    "In [1]: x = 1\n   ...: y = 2\n",
    # broken whatever IPython does
    "with tf.GradientTape() as tape\n    loss = 1\n",
    "%matplotlib inline\ndef f(:\n",
    "x = (1,\n",
    "if a:\n        b\n    c\n",
    "",
    "\n\n",
]

# (cell, whether IPython 9.0.2+ runs it, whether IPython 7-9.0.1 runs it)
VERSION_DEPENDENT = [
    (" %%time\nfor i in range(3):\n    x = i\n", False, True),
    (" for i in range(3):\n     x = i\n", True, True),
    ("    x = 1\ny = 2\n", False, True),
    ("        # setup\n    for a in b:\n        c\n", True, False),
    (" %%bash\nls -la (\n", False, True),
]


@pytest.fixture(scope="module")
def ipython(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What a real IPython shell says about every cell of this module, and its magics."""
    cells = SAME_IN_EVERY_VERSION + [cell for cell, _, _ in VERSION_DEPENDENT]
    result = subprocess.run(
        [sys.executable, "-c", ORACLE, json.dumps(sorted(PYTHON_CELL_MAGICS))],
        input=json.dumps(cells),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "IPYTHONDIR": str(tmp_path_factory.mktemp("ipython"))},
    )
    answer = json.loads(result.stdout)
    return {"runs": dict(zip(cells, answer["runs"], strict=True)), "magics": answer["magics"]}


@pytest.mark.parametrize("cell", SAME_IN_EVERY_VERSION)
def test_tap001_exactly_when_ipython_fails(ipython: dict, cell: str) -> None:
    runs = ipython["runs"][cell]
    assert isinstance(read(cell), CellCode) is runs, f"IPython {'runs' if runs else 'fails'}"


@pytest.mark.parametrize(("cell", "runs_in_9", "runs_in_8"), VERSION_DEPENDENT)
def test_a_cell_one_ipython_version_runs_is_not_tap001(
    ipython: dict, cell: str, runs_in_9: bool, runs_in_8: bool
) -> None:
    assert ipython["runs"][cell] is (runs_in_9 if COMMON_INDENT else runs_in_8)
    assert isinstance(read(cell), CellCode) is (runs_in_9 or runs_in_8)


def test_every_magic_of_the_installed_ipython_is_known_to_automagic(ipython: dict) -> None:
    assert set(ipython["magics"]) - {"!"} <= AUTOMAGIC_NAMES


def test_lines_keep_their_place_and_indentation_is_recorded() -> None:
    code = read(" %%time\n for i in range(3):\n     !echo {i}\n     x = i\n")
    assert isinstance(code, CellCode)
    assert code.lines == (NEUTRAL, "for i in range(3):", f"    {NEUTRAL}", "    x = i")
    assert code.removed == (" ", " ", " ", " ")
    assert code.special == {0, 2}
    assert code.indent == " "
    assert code.column_in_cell(4, 5) == 6


def test_a_python_cell_magic_body_has_its_own_indentation() -> None:
    code = read("%%timeit\n    for i in y:\n        z = i\n")
    assert isinstance(code, CellCode)
    assert code.lines == (NEUTRAL, "for i in y:", "    z = i")
    assert (code.removed, code.indent) == (("", "    ", "    "), "    ")


def test_a_cell_magic_that_is_not_python_leaves_the_cell_out() -> None:
    code = read("%%bash\nls -la\n")
    assert isinstance(code, CellCode)
    assert (code.python, code.lines) == (False, ("", ""))


def test_an_escape_continued_by_brackets_ends_at_its_line_as_in_ipython() -> None:
    problem = read("%timeit f(a,\n  b)\n")
    assert isinstance(problem, SyntaxProblem)
    assert (problem.line, problem.message) == (2, "unexpected indent")


def test_a_problem_is_located_in_the_cell_as_the_user_sees_it() -> None:
    problem = read("    x = 1\n    with tf.GradientTape() as tape\n        y = 2\n")
    assert isinstance(problem, SyntaxProblem)
    assert (problem.line, problem.column, problem.message) == (2, 35, "expected ':'")


def test_colab_form_lines_before_a_cell_magic():
    """Colab runs a form cell's magic after its `#@title` / `#@markdown` lines (IPython
    alone does not, so this case is not checked against IPython)."""
    html = cell_code(["#@title Intro", "%%html", "<div>Let's begin</div>"])
    assert isinstance(html, CellCode) and not html.python
    timed = cell_code(["#@title Setup", "# @markdown Installs", "%%capture", "import os"])
    assert isinstance(timed, CellCode) and timed.lines[3] == "import os"
    spaced = cell_code(["#@title ", "", "%%html", "<div>Example Grid</div>"])
    assert isinstance(spaced, CellCode) and not spaced.python
    plain = cell_code(["# Setup", "%%html", "<div>Let's begin</div>"])
    assert isinstance(plain, SyntaxProblem)
