"""A notebook whose cells `%run` or `%load` a project file: the file's names are known to
the later cells, its own findings are the file's (never reported twice), fixes leave it
alone; and the cells of a magic the notebook registers to run them as Python are checked."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tapelint.findings.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from tapelint.linter.engine import Linter
from tapelint.linter.notebooks.cell_files import LoadedFile
from tapelint.linter.notebooks.notebook import check_notebook, fix_notebook
from tapelint.linter.notebooks.program_files import CellFiles, Included, _placed, expand
from tapelint.linter.registry import all_rules
from tapelint.run.runner import Options, run, run_stdin
from tapelint.run.workspace import Project
from tapelint.settings.config import Settings
from tapelint.sources.ipython_input import NEUTRAL
from tests.fixture_markers import FIXTURES
from tests.test_notebook import notebook

RULES = [r for r in all_rules() if not r.preview]
LINTER = Linter(RULES)

SETUP = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(16), tf.keras.layers.Dropout(0.5)])
optimizer = tf.keras.optimizers.Adam(1e-3)


def compute_gradients(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    return tape.gradient(loss, model.trainable_variables)


def apply_raw(x, y):
    grads = compute_gradients(x, y)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""
# Each line a finding when `model` and the helpers are the file's (TAP303, TAP401).
STEP = """\
with tf.GradientTape() as tape:
    pred = model(x)
    loss = tf.reduce_mean(pred)
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def code(*sources: str) -> bytes:
    return notebook(*(("code", source) for source in sources))


def found(diagnostics: list[Diagnostic]) -> list[tuple[str, int | None, int]]:
    return sorted((d.code, d.cell, d.start.line) for d in diagnostics)


def test_later_cells_know_what_a_run_file_defines(project: Path) -> None:
    (project / "setup.py").write_text(SETUP)
    data = code("%matplotlib inline\n%run setup.py\nx, y = tf.ones((2, 3)), tf.ones((2, 1))", STEP)
    diagnostics = check_notebook(LINTER, data, "nb.ipynb")
    # The file's own TAP401 (in `apply_raw`) is the file's: not reported in the notebook.
    assert found(diagnostics) == [("TAP303", 2, 2), ("TAP401", 2, 5)]
    without = check_notebook(LINTER, code("x = 1", STEP), "nb.ipynb")
    assert found(without) == []  # nothing known of `model` and `optimizer`


def test_a_place_in_the_file_is_named_as_the_file(project: Path) -> None:
    (project / "work" / "lib").mkdir(parents=True)
    (project / "work" / "lib" / "setup.py").write_text(SETUP)
    cell = "%run -i lib/setup.py\ngrads = compute_gradients(x, y)\n"
    apply = "optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    [diagnostic] = check_notebook(LINTER, code(cell, apply), "work/nb.ipynb")
    assert (diagnostic.code, diagnostic.cell, diagnostic.start.line) == ("TAP401", 2, 1)
    assert "`compute_gradients` (work/lib/setup.py:10)" in diagnostic.message
    [related] = diagnostic.related
    assert (related.path, related.line, related.cell) == ("work/lib/setup.py", 10, None)


def test_a_file_that_cannot_be_read_stays_unknown(project: Path) -> None:
    (project / "setup.py").write_text(SETUP)
    (project / "broken.py").write_text(SETUP + "def f(:\n")
    unknown = ("%run missing.py", "%run broken.py", "%run -m setup", "if True:\n    %run setup.py")
    for line in unknown:
        assert check_notebook(LINTER, code(line, STEP), "nb.ipynb") == [], line


def test_a_file_that_would_make_the_program_too_large_is_left_out(project: Path) -> None:
    (project / "setup.py").write_text(SETUP)
    data = code("%run setup.py", STEP)
    small = Linter(RULES, max_file_size=len(SETUP))
    assert check_notebook(small, data, "nb.ipynb") == []
    assert found(check_notebook(LINTER, data, "nb.ipynb")) == [("TAP303", 2, 2), ("TAP401", 2, 5)]


def test_a_cell_that_still_holds_only_load_is_the_file(project: Path) -> None:
    (project / "setup.py").write_text(SETUP)
    assert found(check_notebook(LINTER, code("# setup\n%load setup.py", STEP), "nb.ipynb")) == [
        ("TAP303", 2, 2),
        ("TAP401", 2, 5),
    ]
    # `%load` with other code: IPython replaces the cell; what it holds now is unknown.
    assert check_notebook(LINTER, code("%load setup.py\nx = 1", STEP), "nb.ipynb") == []


def test_a_copy_load_made_reports_its_findings_on_the_file_only(project: Path) -> None:
    (project / "setup.py").write_text("# -*- coding: utf-8 -*-\n" + SETUP)
    copy = f"# %load setup.py\n{SETUP}"
    assert found(check_notebook(LINTER, code(copy, STEP), "nb.ipynb")) == [
        ("TAP303", 2, 2),
        ("TAP401", 2, 5),
    ]
    edited = copy.replace("model(x, training=True)", "model(x)")
    cell_findings = found(check_notebook(LINTER, code(edited), "nb.ipynb"))
    assert cell_findings == [("TAP303", 1, 10), ("TAP401", 1, 16)]  # the cell's own code now
    (project / "setup.py").write_text(SETUP.replace("1e-3", "1e-4"))  # the file changed
    assert found(check_notebook(LINTER, code(copy), "nb.ipynb")) == [("TAP401", 1, 16)]


def test_a_fix_after_a_run_line_is_written_into_its_cell(project: Path) -> None:
    (project / "setup.py").write_text(SETUP)
    cell = "%run setup.py\ngrads = compute_gradients(x, y)\n"
    apply = "optimizer.apply_gradients(zip(grads, model.trainable_variables))"
    data = code(cell + apply)
    fixed = fix_notebook(LINTER, data, "nb.ipynb", unsafe=True)
    [(number, before, after)] = fixed.changes
    assert (number, before) == (1, cell + apply)
    assert after.startswith(cell + "if any(g is None for g in grads):\n")
    assert after.endswith("if g is not None])")
    assert fixed.remaining == []


def _finding(line: int, edit_line: int) -> Diagnostic:
    edit = Edit(Position(edit_line, 1), Position(edit_line, 1), "del tape\n")
    fix = Fix("Release the tape", Applicability.SAFE, (edit,))
    start = Position(line, 1)
    return Diagnostic("nb.ipynb", start, start, "TAP103", "name", Severity.WARNING, "m", fix)


def test_no_fix_edits_a_file_or_a_copy_and_positions_go_back_to_the_program() -> None:
    loaded = LoadedFile("/p/setup.py", "setup.py", ("x = 1", "y = 2"), ((1, "x = 1"), (2, "y = 2")))
    program = f"{NEUTRAL}\nz = 3\n# end\n# %load setup.py\nx = 1\ny = 2\n# end\n"
    copy = CellFiles(1, (), 0, loaded)
    included = Included((CellFiles(0, ((0, loaded),), 1, None), copy), code_cells=2)
    expanded = expand(program, included, "# end")
    assert expanded is not None
    lines = [NEUTRAL, "x = 1", "y = 2", "z = 3", "# end", "# %load setup.py", "x = 1", "y = 2"]
    assert expanded.text.splitlines() == [*lines, "# end"]
    assert expanded.lines == (1, 1, 1, 2, 3, 4, 5, 6, 7)
    assert expanded.files == {
        2: ("setup.py", 1),
        3: ("setup.py", 2),
        7: ("setup.py", 1),
        8: ("setup.py", 2),
    }
    assert expanded.guarded == {2, 3, 7, 8, 9}  # a line added after the copy would join it
    placed = _placed([_finding(2, 4), _finding(4, 3), _finding(4, 9), _finding(4, 5)], expanded)
    # The first is the file's; the second and third would edit the file or the copy.
    assert [(d.start.line, d.fix is not None) for d in placed] == [
        (2, False),
        (2, False),
        (2, True),
    ]
    assert placed[2].fix is not None and placed[2].fix.edits[0].start == Position(3, 1)


MAGIC = """\
from IPython.core.magic import register_cell_magic

@register_cell_magic
def backend(line, cell):
    if os.environ.get("KERAS_BACKEND") == line.split()[-1]:
        get_ipython().run_cell(cell)
"""
BUGGY = """\
import tensorflow as tf
with tf.GradientTape() as tape:
    pred = w * x
loss = tf.reduce_mean(pred)
grads = tape.gradient(loss, [w])
"""


def test_cells_of_a_magic_the_notebook_registers_are_checked() -> None:
    data = code(f"%%backend tensorflow\n{BUGGY}", MAGIC, f"%%backend tensorflow\n{BUGGY}")
    # Cell 1 runs before the magic exists (IPython fails it): left out, as an unknown magic.
    assert found(check_notebook(LINTER, data, "nb.ipynb")) == [("TAP101", 3, 6)]
    unknown = code(MAGIC, f"%%tensorflow_only\n{BUGGY}")
    assert check_notebook(LINTER, unknown, "nb.ipynb") == []


def test_a_fix_in_a_registered_magic_cell_is_written_back() -> None:
    leaks = "import tensorflow as tf\nwith tf.GradientTape(persistent=True) as tape:\n"
    leaks += "    y = w * x\ndy = tape.gradient(y, w)\ndz = tape.gradient(y * y, w)\n"
    fixed = fix_notebook(
        LINTER, code(MAGIC, f"%%backend tensorflow\n{leaks}"), "nb.ipynb", unsafe=False
    )
    [(number, _, after)] = fixed.changes
    assert number == 2 and after.startswith("%%backend tensorflow\n")
    assert after.rstrip().endswith("del tape")


def test_a_server_checks_a_notebook_again_when_its_run_file_changes(project: Path) -> None:
    (project / "setup.py").write_text("x = 1\n")
    (project / "nb.ipynb").write_bytes(code("%run setup.py", STEP))
    settings = Settings(root=project)
    workspace = Project(settings, watch_disk=True)
    data = (project / "nb.ipynb").read_bytes()

    def check() -> list[tuple[str, int | None, int]]:
        result = run_stdin(data, str(project / "nb.ipynb"), settings, Options(), workspace)
        return found(result.report.diagnostics)

    assert check() == []
    real = os.path.realpath(project / "setup.py")
    assert workspace.dependents(real) == {os.path.realpath(project / "nb.ipynb")}
    workspace.set_source(real, SETUP.encode())  # the file edited in the editor, unsaved
    assert check() == [("TAP303", 2, 2), ("TAP401", 2, 5)]
    assert json.loads(data)["cells"][0]["source"] == ["%run setup.py"]


def test_fixing_a_project_with_a_notebook_that_runs_its_files_does_not_depend_on_jobs(
    tmp_path: Path, monkeypatch
) -> None:
    source = FIXTURES / "projects" / "notebook_runs_project_file"
    results = []
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        shutil.copytree(source, root)
        monkeypatch.chdir(root)
        report = run(["."], Settings(root=root), Options(fix=True, unsafe_fixes=True, jobs=jobs))
        files = {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}
        results.append((found(report.diagnostics), report.fixed, files))
    assert results[0] == results[1]
    assert results[0][0] == [("TAP303", 5, 2)]  # TAP303 has no fix
