"""Notebooks: cells joined as one program, IPython syntax neutralised, positions per cell,
bad notebooks as TAP002, and `tapelint check` over a directory with notebooks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint.engine import Linter
from tapelint.notebook import NotebookError, check_notebook, read_notebook
from tapelint.registry import all_rules
from tests.cli_helpers import run_cli
from tests.fixture_markers import FIXTURES

LINTER = Linter([r for r in all_rules() if not r.preview])


def notebook(*cells: tuple[str, str], metadata: dict | None = None) -> bytes:
    document = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
            for kind, source in cells
        ],
        "metadata": metadata or {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document).encode()


STEP = (
    "import tensorflow as tf\nwith tf.GradientTape() as tape:\n    pred = model(x, training=True)\n"
)
LOSS_AFTER = "loss = tf.reduce_mean(pred)\ngrads = tape.gradient(loss, model.trainable_variables)\n"


def test_cells_are_one_program_and_positions_are_cell_lines() -> None:
    data = notebook(("markdown", "# title"), ("code", STEP), ("raw", "x"), ("code", LOSS_AFTER))
    [diagnostic] = check_notebook(LINTER, data, "nb.ipynb")
    assert (diagnostic.code, diagnostic.cell) == ("TAP101", 4)
    assert (diagnostic.start.line, diagnostic.start.column) == (2, 9)
    assert diagnostic.end.line == 2
    assert diagnostic.fix is None


def test_source_may_be_one_string() -> None:
    document = json.loads(notebook(("code", STEP), ("code", LOSS_AFTER)))
    for cell in document["cells"]:
        cell["source"] = "".join(cell["source"])
    [diagnostic] = check_notebook(LINTER, json.dumps(document).encode(), "nb.ipynb")
    assert (diagnostic.cell, diagnostic.start.line) == (2, 2)


def test_magics_become_pass_without_shifting_lines() -> None:
    cell = "%matplotlib inline\n!pip install x \\\n    y\nimport tensorflow as tf\nm?\nout = !ls\n"
    program = read_notebook(notebook(("code", cell)))
    assert program is not None
    assert program.text.splitlines() == [
        "pass",
        "pass",
        "pass",
        "import tensorflow as tf",
        "pass",
        "pass",
    ]
    assert program.origins == tuple((1, line) for line in range(1, 7))


def test_magic_inside_an_indented_block_keeps_the_block_valid() -> None:
    program = read_notebook(notebook(("code", "for f in files:\n    !wc -l {f}\n")))
    assert program is not None and program.problems == ()
    assert program.text == "for f in files:\n    pass\n"


def test_non_python_cell_magic_blanks_the_cell_and_python_ones_keep_the_body() -> None:
    bash = "%%bash\nwith tf.GradientTape() as tape\n"
    timed = "%%time\nx = 1\n"
    program = read_notebook(notebook(("code", bash), ("code", timed)))
    assert program is not None and program.problems == ()
    assert program.text == "\n\n\nx = 1\n"


def test_valid_python_that_looks_like_magic_is_untouched() -> None:
    cell = 'TEXT = """\n%d steps\n!x\n"""\nstep = (10\n        % 3)\nok = a != b\n'
    program = read_notebook(notebook(("code", cell)))
    assert program is not None and program.text == cell


def test_a_magic_line_inside_a_string_is_put_back_when_the_cell_has_magics() -> None:
    cell = '%load_ext autoreload\nTEXT = """\n%d steps\n"""\n'
    program = read_notebook(notebook(("code", cell)))
    assert program is not None
    assert program.text == 'pass\nTEXT = """\n%d steps\n"""\n'


def test_a_cell_that_does_not_parse_is_tap001_there_and_the_rest_is_checked() -> None:
    broken = "with tf.GradientTape() as tape\n    loss = 1\n"
    data = notebook(
        ("code", "import tensorflow as tf\n"), ("code", broken), ("code", STEP + LOSS_AFTER)
    )
    found = {(d.code, d.cell, d.start.line) for d in check_notebook(LINTER, data, "nb.ipynb")}
    assert found == {("TAP001", 2, 1), ("TAP101", 3, 5)}


def test_top_level_await_which_ipython_allows_is_not_a_syntax_error() -> None:
    cells = (("code", "%time x = 1\nresult = await fetch()\n"), ("code", STEP + LOSS_AFTER))
    program = read_notebook(notebook(*cells))
    assert program is not None and program.problems == ()
    assert program.text.startswith("pass\nresult = await fetch()\nimport tensorflow as tf\n")
    found = [(d.code, d.cell) for d in check_notebook(LINTER, notebook(*cells), "nb.ipynb")]
    assert found == [("TAP101", 2)]


def test_checking_notebooks_never_imports_tensorflow() -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tapelint.engine import Linter\n"
        "from tapelint.notebook import check_notebook\n"
        "from tapelint.registry import all_rules\n"
        "linter = Linter(all_rules())\n"
        f"paths = sorted(Path({str(FIXTURES / 'notebooks')!r}).glob('*.ipynb'))\n"
        "found = [d for p in paths for d in check_notebook(linter, p.read_bytes(), str(p))]\n"
        "assert found, 'the notebooks were not checked'\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_persistent_tape_alive_at_the_end_of_a_notebook_is_tap103() -> None:
    cells = (
        "import tensorflow as tf\nwith tf.GradientTape(persistent=True) as tape:\n"
        "    y = x * x\n    z = y * y\n",
        "dy = tape.gradient(y, x)\ndz = tape.gradient(z, x)\n",
    )
    data = notebook(*(("code", c) for c in cells))
    found = [(d.code, d.cell, d.start.line) for d in check_notebook(LINTER, data, "nb.ipynb")]
    assert found == [("TAP103", 1, 2)]
    # The same code as a script ends there: nothing outlives it, so nothing is reported.
    assert LINTER.check_text("".join(cells), "script.py") == []


def test_noqa_in_a_cell_silences_the_finding() -> None:
    suppressed = LOSS_AFTER.replace("variables)\n", "variables)  # noqa: TAP101\n")
    assert check_notebook(LINTER, notebook(("code", STEP), ("code", suppressed)), "n.ipynb") == []


def test_other_kernel_languages_are_not_checked() -> None:
    metadata = {"kernelspec": {"language": "R", "name": "ir"}}
    data = notebook(("code", "GradientTape is not python here ("), metadata=metadata)
    assert read_notebook(data) is None
    assert check_notebook(LINTER, data, "nb.ipynb") == []


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"cells": [GradientTape', "not a notebook: invalid JSON: Expecting value"),
        (b'["GradientTape"]', "the JSON is a list, not an object"),
        (b'{"GradientTape": 1}', "no `cells` list"),
        (b'{"cells": ["GradientTape"]}', "cell 1 is a string, not an object"),
        (
            b'{"cells": [{"cell_type": "code", "source": 3}], "x": "GradientTape"}',
            "the source of cell 1 is not text",
        ),
        (b'{"worksheets": [], "x": "GradientTape"}', "nbformat 3 notebooks are not supported"),
        (b'{"cells": [], "x": "GradientTape \xff"}', "cannot decode"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_tap002_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(NotebookError):
        read_notebook(data)
    [diagnostic] = check_notebook(LINTER, data, "nb.ipynb")
    assert diagnostic.code == "TAP002"
    assert reason in diagnostic.message
    assert diagnostic.cell is None


def test_a_notebook_that_never_mentions_a_tape_is_not_even_parsed() -> None:
    assert check_notebook(LINTER, b"{not json at all", "nb.ipynb") == []


def test_check_reports_notebook_findings_by_cell(project: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb", project / "nb.ipynb")
    (project / "broken.ipynb").write_text('{"cells": [ "GradientTape"')
    result = run_cli("check", ".")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("broken.ipynb:1:1: TAP002 not a notebook: invalid JSON")
    assert lines[1].startswith("nb.ipynb:cell 4:2:9: TAP101 ")
    as_json = json.loads(run_cli("check", "--output-format", "json", "nb.ipynb").stdout)
    assert [(d["cell"], d["line"], d["column"]) for d in as_json] == [(4, 2, 9)]


def test_fix_leaves_a_notebook_byte_for_byte_alone(project: Path) -> None:
    source = FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb"
    target = project / "nb.ipynb"
    shutil.copy(source, target)
    result = run_cli("check", "--fix", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1
    assert "TAP103" in result.stdout
    assert "fixable" not in result.stderr
    assert target.read_bytes() == source.read_bytes()
