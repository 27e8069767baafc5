"""Notebooks: cells joined as one program, IPython syntax neutralised, positions per cell,
bad notebooks as TAP002, and `tapelint check` over a directory with notebooks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.findings.diagnostics import Applicability, Edit, Fix, Position
from tapelint.linter.engine import Linter
from tapelint.linter.fixer import apply_fixes
from tapelint.linter.notebooks.notebook import NotebookError, check_notebook, read_notebook
from tapelint.linter.registry import all_rules
from tapelint.semantic.file_model.model import UNREAD_CELL
from tapelint.settings.policies.lab_solutions import cell_key
from tapelint.sources.ipython_input import NEUTRAL
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


# How the reader writes a neutralised IPython line, and the line that ends each cell.
PASS = NEUTRAL
END = "# tapelint: end of cell"


def program_lines(*cells: tuple[str, str]) -> list[str]:
    program = read_notebook(notebook(*cells))
    assert program is not None and program.problems == ()
    return program.text.splitlines()


def test_magics_become_pass_without_shifting_lines() -> None:
    cell = "%matplotlib inline\n!pip install x \\\n    y\nimport tensorflow as tf\nm?\nout = !ls\n"
    assert program_lines(("code", cell)) == [
        PASS,
        PASS,
        PASS,
        "import tensorflow as tf",
        PASS,
        PASS,
        END,
    ]
    program = read_notebook(notebook(("code", cell)))
    assert program is not None
    assert program.origins == tuple((1, line) for line in range(1, 8))


def test_magic_inside_an_indented_block_keeps_the_block_valid() -> None:
    lines = program_lines(("code", "for f in files:\n    !wc -l {f}\n"))
    assert lines == ["for f in files:", f"    {PASS}", END]


def test_non_python_cell_magic_blanks_the_cell_and_python_ones_keep_the_body() -> None:
    bash = "%%bash\nwith tf.GradientTape() as tape\n"
    timed = "%%time\nx = 1\n"
    assert program_lines(("code", bash), ("code", timed)) == ["", "", END, PASS, "x = 1", END]


def test_valid_python_that_looks_like_magic_is_untouched() -> None:
    cell = 'TEXT = """\n%d steps\n!x\n"""\nstep = (10\n        % 3)\nok = a != b\n'
    assert program_lines(("code", cell)) == [*cell.splitlines(), END]


def test_a_magic_line_inside_a_string_is_put_back_when_the_cell_has_magics() -> None:
    cell = '%load_ext autoreload\nTEXT = """\n%d steps\n"""\n'
    assert program_lines(("code", cell)) == [PASS, 'TEXT = """', "%d steps", '"""', END]


def test_a_cell_that_does_not_parse_is_tap001_there_and_the_rest_is_checked() -> None:
    broken = "with tf.GradientTape() as tape\n    loss = 1\n"
    data = notebook(
        ("code", "import tensorflow as tf\n"), ("code", broken), ("code", STEP + LOSS_AFTER)
    )
    found = {(d.code, d.cell, d.start.line) for d in check_notebook(LINTER, data, "nb.ipynb")}
    assert found == {("TAP001", 2, 1), ("TAP101", 3, 5)}


def test_a_python_cell_left_out_for_not_parsing_is_marked_unread() -> None:
    """What such a cell does with the other cells' names is not known (it may ask a tape for
    its gradients); a cell in another language or a shell cell cannot."""
    blank = "grads = # YOUR CODE HERE\nopt.apply_gradients(zip(grads, variables))\n"
    r_cell = "square <- function(x) { x * x }\nlibrary(ggplot2)\n"
    program = read_notebook(notebook(("code", blank), ("code", r_cell), ("code", "%%bash\nls\n")))
    assert program is not None
    assert program.text.splitlines() == [UNREAD_CELL, "", END, "", "", END, "", "", END]


def test_top_level_await_which_ipython_allows_is_not_a_syntax_error() -> None:
    cells = (("code", "%time x = 1\nresult = await fetch()\n"), ("code", STEP + LOSS_AFTER))
    program = read_notebook(notebook(*cells))
    assert program is not None and program.problems == ()
    assert program.text.startswith(f"{PASS}\nresult = await fetch()\n{END}\nimport tensorflow")
    found = [(d.code, d.cell) for d in check_notebook(LINTER, notebook(*cells), "nb.ipynb")]
    assert found == [("TAP101", 2)]


@pytest.mark.parametrize(
    "cell",
    [
        " %%time\nfor i in range(3):\n    x = i\n",
        " for i in range(3):\n     x = i\n",
        "    !pip install -q tensorflow\n    import numpy as np\n",
        "x = !ls\nprint(x)\n",
        "model.fit?\n",
        "??model.fit\n",
        "    for step in range(3):\n        %timeit model(x)\n        print(step)\n",
        ">>> y = model(x)\n>>> print(y)\n",
    ],
    ids=[
        "indented %%time",
        "indented for",
        "!pip indented",
        "x = !ls",
        "obj?",
        "??obj",
        "%timeit in indented block",
        "prompts",
    ],
)
def test_a_cell_jupyter_runs_is_not_tap001(cell: str) -> None:
    data = notebook(("code", cell), ("code", STEP + LOSS_AFTER))
    found = [(d.code, d.cell, d.start.line) for d in check_notebook(LINTER, data, "nb.ipynb")]
    assert found == [("TAP101", 2, 5)]


def test_a_cell_jupyter_cannot_run_is_tap001_where_the_user_sees_the_error() -> None:
    broken = "    x = 1\n    with tf.GradientTape() as tape\n        loss = 1\n"
    data = notebook(("code", "%matplotlib inline\n"), ("markdown", "text"), ("code", broken))
    [diagnostic] = check_notebook(LINTER, data, "nb.ipynb")
    assert (diagnostic.code, diagnostic.cell, diagnostic.start) == ("TAP001", 3, Position(2, 35))
    assert diagnostic.message == "cannot parse: expected ':'"


def test_a_finding_in_an_indented_cell_is_at_the_column_the_user_sees() -> None:
    indented = "".join(f"  {line}\n" for line in (STEP + LOSS_AFTER).splitlines())
    [diagnostic] = check_notebook(LINTER, notebook(("code", indented)), "nb.ipynb")
    assert (diagnostic.code, diagnostic.cell) == ("TAP101", 1)
    assert (diagnostic.start, diagnostic.end) == (Position(5, 11), Position(5, 57))
    line = indented.splitlines()[4]
    assert line[10:56] == "tape.gradient(loss, model.trainable_variables)"


def test_checking_notebooks_never_imports_tensorflow() -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tapelint.linter.engine import Linter\n"
        "from tapelint.linter.notebooks.notebook import check_notebook\n"
        "from tapelint.linter.registry import all_rules\n"
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


LEFT_ALIVE = FIXTURES / "notebooks" / "flag_persistent_tape_left_alive.ipynb"
MAGICS = FIXTURES / "notebooks" / "flag_magics_keep_lines.ipynb"


def nbformat_layout(document: dict) -> bytes:
    """How Jupyter (nbformat) writes a notebook, as the fixtures are written."""
    return (json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def test_fix_changes_only_the_fixed_cell_and_keeps_the_rest_byte_for_byte(project: Path) -> None:
    target = project / "nb.ipynb"
    shutil.copy(LEFT_ALIVE, target)
    result = run_cli("check", "--fix", "nb.ipynb")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "1 fixed, 0 remaining" in result.stderr
    expected = json.loads(LEFT_ALIVE.read_text())
    # The `with` is in cell 2; the tape's last use, and so the `del`, in cell 4.
    expected["cells"][3]["source"] = [
        "du_dt = tape.gradient(u, t)\n",
        "denergy_dt = tape.gradient(energy, t)\n",
        "del tape",
    ]
    assert target.read_bytes() == nbformat_layout(expected)
    assert LEFT_ALIVE.read_bytes() == nbformat_layout(json.loads(LEFT_ALIVE.read_text()))
    again = run_cli("check", "--fix", "nb.ipynb")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "", "All checks passed!\n")
    assert target.read_bytes() == nbformat_layout(expected)


def test_fix_keeps_a_colab_style_layout(project: Path) -> None:
    """Colab and the TensorFlow docs save with two-space indents and keys in their own order."""
    document = json.loads(LEFT_ALIVE.read_text())
    colab = {"cells": document["cells"], "metadata": {"colab": {"name": "x"}}, "nbformat": 4}
    colab["cells"] = [{"source": c.pop("source"), **c} for c in colab["cells"]]  # unsorted
    target = project / "nb.ipynb"
    target.write_text(json.dumps(colab, indent=2) + "\n")
    assert run_cli("check", "--fix", "nb.ipynb").exit_code == 0
    colab["cells"][3]["source"][-1] += "\n"
    colab["cells"][3]["source"].append("del tape")
    assert target.read_text() == json.dumps(colab, indent=2) + "\n"


def test_fix_puts_the_ipython_lines_back(project: Path) -> None:
    target = project / "nb.ipynb"
    shutil.copy(MAGICS, target)
    result = run_cli("check", "--fix", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1  # the TAP101 has no fix
    fixed = json.loads(target.read_text())["cells"]
    original = json.loads(MAGICS.read_text())["cells"]
    assert [c["source"] for c in fixed[:4]] == [c["source"] for c in original[:4]]
    source = "".join(fixed[4]["source"])
    assert source.startswith("%timeit model(x)\nif any(g is None for g in grads):\n")
    assert "if g is not None])  # expect: TAP401:1" in source
    assert [d["code"] for d in json.loads(run_cli("check", "--output-format", "json").stdout)] == [
        "TAP101"
    ]


def test_diff_shows_cell_diffs_and_writes_nothing(project: Path) -> None:
    target = project / "nb.ipynb"
    shutil.copy(LEFT_ALIVE, target)
    result = run_cli("check", "--diff", "nb.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("--- nb.ipynb:cell 4\n+++ nb.ipynb:cell 4\n")
    assert "+del tape\n" in result.stdout
    assert target.read_bytes() == LEFT_ALIVE.read_bytes()


def test_a_notebook_in_a_layout_json_cannot_reproduce_is_left_alone(project: Path) -> None:
    document = json.loads(LEFT_ALIVE.read_text())
    compact = json.dumps(document, separators=(",", ":")).encode()
    target = project / "nb.ipynb"
    target.write_bytes(compact)
    result = run_cli("check", "--fix", "nb.ipynb")
    assert result.exit_code == 1
    assert "nb.ipynb: fixes not applied: the notebook's JSON layout" in result.stderr
    assert target.read_bytes() == compact


def test_json_output_says_which_cell_each_fix_edit_is_in(project: Path) -> None:
    shutil.copy(LEFT_ALIVE, project / "nb.ipynb")
    [diagnostic] = json.loads(run_cli("check", "--output-format", "json").stdout)
    assert (diagnostic["code"], diagnostic["cell"], diagnostic["line"]) == ("TAP103", 2, 1)
    [edit] = diagnostic["fix"]["edits"]
    assert (edit["cell"], edit["line"], edit["column"], edit["content"]) == (4, 3, 1, "del tape\n")


def test_fixing_a_notebook_on_standard_input_prints_the_fixed_notebook(project: Path) -> None:
    result = CliRunner().invoke(
        cli, ["check", "--stdin-filename", "nb.ipynb", "--fix", "-"], input=LEFT_ALIVE.read_bytes()
    )
    assert result.exit_code == 0
    cells = json.loads(result.stdout_bytes)["cells"]
    assert cells[3]["source"][-1] == "del tape"


INDENTED = FIXTURES / "notebooks" / "flag_indented_cells.ipynb"


def test_fix_writes_an_indented_cell_back_with_its_indentation(project: Path) -> None:
    target = project / "nb.ipynb"
    shutil.copy(INDENTED, target)
    result = run_cli("check", "--fix", "--unsafe-fixes", "nb.ipynb")
    assert "1 fixed, 2 remaining" in result.stderr
    cells = json.loads(target.read_text())["cells"]
    original = json.loads(INDENTED.read_text())["cells"]
    assert [c["source"] for c in cells[:6]] == [c["source"] for c in original[:6]]
    source = "".join(cells[6]["source"])
    # The IPython line and the indentation IPython removes are kept; added lines get it too.
    assert source.startswith("    model.summary?\n    if any(g is None for g in grads):\n")
    assert "\n    optimizer.apply_gradients([(g, v) for g, v in zip(" in source
    program = read_notebook(target.read_bytes())
    assert program is not None and [n for n, _ in program.problems] == [5]
    assert target.read_bytes() == nbformat_layout(json.loads(target.read_text()))


def test_reported_edits_in_an_indented_cell_are_what_fix_writes(project: Path) -> None:
    cells = (
        "  import tensorflow as tf\n  x = tf.Variable(load_weights())\n"
        "  with tf.GradientTape(persistent=True) as tape:\n      y = x * x\n      z = y * y\n",
        "  dy = tape.gradient(y, x)\n  dz = tape.gradient(z, x)",
    )
    data = notebook(*(("code", cell) for cell in cells))
    (project / "nb.ipynb").write_bytes(nbformat_layout(json.loads(data)))
    [diagnostic] = json.loads(run_cli("check", "--output-format", "json").stdout)
    assert (diagnostic["code"], diagnostic["cell"], diagnostic["line"]) == ("TAP103", 1, 3)
    [edit] = diagnostic["fix"]["edits"]
    assert (edit["cell"], edit["line"], edit["column"], edit["content"]) == (
        2,
        3,
        1,
        "  del tape\n",
    )
    start, end = (
        Position(edit["line"], edit["column"]),
        Position(edit["end_line"], edit["end_column"]),
    )
    reported = Fix("", Applicability.SAFE, (Edit(start, end, edit["content"]),))
    applied, _ = apply_fixes(cells[1], [reported])
    assert run_cli("check", "--fix", "nb.ipynb").exit_code == 0
    written = "".join(json.loads((project / "nb.ipynb").read_text())["cells"][1]["source"])
    assert written == f"{cells[1]}\n  del tape"
    assert applied == f"{written}\n"  # --fix keeps the cell without a final line end


def test_a_lab_cell_copied_from_its_solution_is_reported_on_the_solution_only(tmp_path):
    """`lab_solutions`: the lab's copy of a solution cell (comments aside) is left out; a
    cell of the lab's own is reported; without the solution on disk the lab reports all."""

    step = (
        "with tf.GradientTape() as tape:\n"
        "    loss = tf.reduce_sum(model(x))\n"
        "grads = tape.gradient(loss, model.trainable_variables)\n"
        "optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    assert cell_key("# TODO: read this\n" + step + "\n\n") == cell_key(step)
    assert cell_key(step.replace("reduce_sum", "reduce_mean")) != cell_key(step)

    def notebook(*sources: str) -> str:
        cells = [
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": source,
            }
            for source in sources
        ]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    setup = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    setup += "optimizer = tf.keras.optimizers.Adam()\nx = tf.ones((2, 2))\n"
    own = step.replace("reduce_sum", "reduce_mean")
    (tmp_path / "labs").mkdir()
    lab = tmp_path / "labs" / "train.ipynb"
    lab.write_text(notebook(setup, "# TODO: run the step\n" + step, own))
    linter = Linter([rule for rule in all_rules() if rule.code == "TAP401"])
    alone = check_notebook(linter, lab.read_bytes(), str(lab))
    assert sorted(d.cell for d in alone) == [2, 3]
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "train.ipynb").write_text(notebook(setup, step))
    beside = check_notebook(linter, lab.read_bytes(), str(lab))
    assert [d.cell for d in beside] == [3]
