"""Cell magics a notebook registers itself: only those that hand their cell to Python count,
and a notebook's cells using them are read as Python."""

from __future__ import annotations

import pytest

from tapelint.sources.cell_magics import registered
from tapelint.sources.ipython_input import NEUTRAL, PYTHON_CELL_MAGICS, CellCode, cell_code

BACKEND = """\
import os
from IPython.core.magic import register_cell_magic

@register_cell_magic
def backend(line, cell):
    current, required = os.environ.get("KERAS_BACKEND", ""), line.split()[-1]
    if current == required:
        get_ipython().run_cell(cell)
    else:
        print(f"This cell requires the {required} backend.")
"""


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (BACKEND, "backend"),
        ("@register_cell_magic\ndef py(line, cell):\n    exec(cell, globals())\n", "py"),
        (
            "@register_cell_magic('tf_only')\ndef f(line, body):\n"
            "    exec(compile(body, '<cell>', 'exec'))\n",
            "tf_only",
        ),
        (
            "@magic.register_line_cell_magic\ndef both(line, cell=None):\n"
            "    shell = get_ipython()\n    shell.run_cell(raw_cell=cell)\n",
            "both",
        ),
    ],
)
def test_a_magic_that_hands_its_cell_to_python_counts(code: str, name: str) -> None:
    assert registered(code, PYTHON_CELL_MAGICS) == PYTHON_CELL_MAGICS | {name}


@pytest.mark.parametrize(
    "code",
    [
        # the cell goes elsewhere: a file, a database, a changed text
        "@register_cell_magic\ndef save(line, cell):\n    open(line, 'w').write(cell)\n",
        "@register_cell_magic\ndef sql(line, cell):\n    spark.sql(cell)\n",
        "@register_cell_magic\ndef fixed(line, cell):\n"
        "    cell = cell.replace('x', 'y')\n    get_ipython().run_cell(cell)\n",
        "@register_cell_magic\ndef other(line, cell):\n    get_ipython().run_cell(line)\n",
        # not registered as a cell magic, or under a name that cannot be read
        "def backend(line, cell):\n    get_ipython().run_cell(cell)\n",
        "@register_line_magic\ndef backend(line, cell):\n    get_ipython().run_cell(cell)\n",
        "@register_cell_magic(NAME)\ndef backend(line, cell):\n    get_ipython().run_cell(cell)\n",
        # not at the top level of the cell
        "if True:\n    @register_cell_magic\n    def backend(line, cell):\n"
        "        get_ipython().run_cell(cell)\n",
    ],
)
def test_other_magics_do_not_count(code: str) -> None:
    assert registered(code, PYTHON_CELL_MAGICS) == PYTHON_CELL_MAGICS


def test_registering_a_name_again_another_way_removes_it() -> None:
    known = registered(BACKEND, PYTHON_CELL_MAGICS)
    again = "@register_cell_magic\ndef backend(line, cell):\n    print(cell)\n"
    assert registered(again, known) == PYTHON_CELL_MAGICS


def test_a_registered_magic_cell_is_read_as_python() -> None:
    cell = ["%%backend tensorflow", "import tensorflow as tf", "x = tf.ones(3)"]
    unknown = cell_code(cell)
    assert isinstance(unknown, CellCode) and not unknown.python
    known = cell_code(cell, registered(BACKEND, PYTHON_CELL_MAGICS))
    assert isinstance(known, CellCode) and known.python
    assert known.lines == (NEUTRAL, "import tensorflow as tf", "x = tf.ones(3)")
