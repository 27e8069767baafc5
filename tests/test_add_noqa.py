"""`tapelint check --add-noqa`: real runs on copies, then `check` again finds nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tapelint.cli import cli
from tapelint.linter.engine import Linter
from tapelint.linter.registry import all_rules
from tapelint.run.add_noqa import annotate
from tests.cli_helpers import LOSS_OUTSIDE, NOT_RELEASED, UNFILTERED, run_cli, write
from tests.fixture_markers import FIXTURES

APPLY = "    optimizer.apply_gradients(zip(grads, model.trainable_variables))"
GRADIENT = "    return tape.gradient(loss, model.trainable_variables)"

# TAP401 on a call over three lines (reported on its first line), and on a line whose
# statement goes on in a multi-line string: the comment goes where the string ends.
MULTI_LINE = """\
import tensorflow as tf


def train_step(model, optimizer, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(
        zip(grads, model.trainable_variables)
    )
    optimizer.apply_gradients(zip(grads, model.trainable_variables)); print('''
    done''')
"""
MULTI_LINE_ADDED = MULTI_LINE.replace(
    "    optimizer.apply_gradients(\n", "    optimizer.apply_gradients(  # noqa: TAP401\n"
).replace("    done''')\n", "    done''')  # noqa: TAP401\n")

# TAP103 on a `with` line continued with a backslash: the comment goes on the next line.
CONTINUED = NOT_RELEASED.replace(
    "    with tf.GradientTape(persistent=True) as tape:",
    "    with tf.GradientTape(persistent=True) \\\n            as tape:",
)
CONTINUED_ADDED = CONTINUED.replace("as tape:\n", "as tape:  # noqa: TAP103\n")


def check_finds_nothing() -> None:
    result = run_cli("check")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")


def test_add_noqa_silences_every_finding_and_changes_nothing_else(project: Path) -> None:
    write(project, "a_loss.py", LOSS_OUTSIDE)
    write(project, "b_multi_line.py", MULTI_LINE)
    write(project, "c_continued.py", CONTINUED)
    shutil.copy(FIXTURES / "notebooks" / "flag_magics_keep_lines.ipynb", project / "nb.ipynb")
    assert run_cli("check").exit_code == 1  # and the results are now in the cache
    result = run_cli("check", "--add-noqa")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Added 6 noqa directives to 4 files.\n"
    assert (project / "a_loss.py").read_text() == LOSS_OUTSIDE.replace(
        GRADIENT, f"{GRADIENT}  # noqa: TAP101"
    )
    assert (project / "b_multi_line.py").read_text() == MULTI_LINE_ADDED
    assert (project / "c_continued.py").read_text() == CONTINUED_ADDED
    check_finds_nothing()
    # A second run has nothing left to add.
    before = {path: path.read_bytes() for path in project.iterdir()}
    again = run_cli("check", "--add-noqa")
    assert (again.exit_code, again.stdout, again.stderr) == (0, "", "")
    assert {path: path.read_bytes() for path in project.iterdir()} == before


def test_a_notebook_gets_its_comments_in_the_cells_and_keeps_the_rest(project: Path) -> None:
    source = FIXTURES / "notebooks" / "flag_indented_cells.ipynb"
    target = project / "nb.ipynb"
    shutil.copy(source, target)
    result = run_cli("check", "--add-noqa", "nb.ipynb")
    assert result.exit_code == 0
    assert "Added 2 noqa directives to 1 file.\n" in result.stderr
    # The cell that does not parse gets no comment; the run says so.
    assert "warning: nb.ipynb:cell 5:1:37: TAP001 gets no noqa comment" in result.stderr
    expected = json.loads(source.read_text())
    for cell, line, code in ((2, 4, "TAP101"), (6, 1, "TAP401")):
        lines = expected["cells"][cell]["source"]
        lines[line] = f"{lines[line]}  # noqa: {code}"
    written = json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert target.read_text() == written
    remaining = run_cli("check", "nb.ipynb")
    assert remaining.codes() == [("nb.ipynb", "TAP001")]


def test_crlf_line_ends_and_the_encoding_are_kept(project: Path) -> None:
    crlf = UNFILTERED.replace("\n", "\r\n").encode()
    (project / "crlf.py").write_bytes(crlf)
    latin = "# -*- coding: latin-1 -*-\n# Entraîné en une étape.\n" + LOSS_OUTSIDE
    (project / "latin.py").write_bytes(latin.encode("latin-1"))
    bom = "\ufeff" + LOSS_OUTSIDE
    (project / "bom.py").write_bytes(bom.encode("utf-8"))
    assert run_cli("check", "--add-noqa").exit_code == 0
    assert (project / "crlf.py").read_bytes() == crlf.replace(
        APPLY.encode() + b"\r\n", APPLY.encode() + b"  # noqa: TAP401\r\n"
    )
    added = GRADIENT + "  # noqa: TAP101"
    assert (project / "latin.py").read_bytes() == latin.replace(GRADIENT, added).encode("latin-1")
    assert (project / "bom.py").read_bytes() == bom.replace(GRADIENT, added).encode("utf-8")
    check_finds_nothing()


@pytest.mark.parametrize(
    ("comment", "after"),
    [
        ("  # noqa: E501", "  # noqa: E501, TAP401"),
        ("  # noqa:E501,W291", "  # noqa:E501,W291, TAP401"),
        (
            "  # noqa: E501 the URL cannot be split",
            "  # noqa: E501, TAP401 the URL cannot be split",
        ),
        ("  # type: ignore", "  # type: ignore  # noqa: TAP401"),
        ("   ", "  # noqa: TAP401"),
    ],
)
def test_an_existing_comment_is_kept_and_noqa_codes_are_merged(
    project: Path, comment: str, after: str
) -> None:
    write(project, "train.py", UNFILTERED.replace(APPLY, APPLY + comment))
    result = run_cli("check", "--add-noqa")
    assert (result.exit_code, result.stderr) == (0, "Added 1 noqa directive to 1 file.\n")
    assert (project / "train.py").read_text() == UNFILTERED.replace(APPLY, APPLY + after)
    check_finds_nothing()


def flake8_long_lines_and_tap(path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """flake8 with the plugin and E501 at 60 columns: the apply line is the only long one."""
    options = ["--isolated", "--select", "E501,TAP", "--max-line-length", "60"]
    return subprocess.run(
        [sys.executable, "-m", "flake8", *options, path],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_flake8_reads_the_merged_codes_too(project: Path) -> None:
    write(project, "bare.py", UNFILTERED)
    unsilenced = flake8_long_lines_and_tap("bare.py", project)
    found = {tuple(line.split()[:2]) for line in unsilenced.stdout.splitlines()}
    assert found == {("bare.py:8:61:", "E501"), ("bare.py:8:5:", "TAP401")}
    write(project, "train.py", UNFILTERED.replace(APPLY, APPLY + "  # noqa: E501"))
    assert run_cli("check", "--add-noqa", "train.py").exit_code == 0
    result = flake8_long_lines_and_tap("train.py", project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_noqa_inside_a_string_on_the_line_is_not_merged_into(project: Path) -> None:
    line = '    print("# noqa: E501"); optimizer.apply_gradients(zip(grads, model.trainable_variables))'
    source = UNFILTERED.replace(APPLY, line)
    write(project, "train.py", source)
    result = run_cli("check", "--add-noqa")
    assert result.exit_code == 0
    assert (
        "train.py:8:28: TAP401 gets no noqa comment: a `# noqa` earlier on its line"
        in result.stderr
    )
    assert "Added" not in result.stderr
    assert (project / "train.py").read_text() == source


def test_a_file_that_does_not_parse_is_left_alone_with_a_warning(project: Path) -> None:
    write(project, "broken.py", "import tensorflow as tf\nwith tf.GradientTape() as tape\n")
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--add-noqa")
    assert result.exit_code == 0
    assert "warning: broken.py:2:31: TAP001 gets no noqa comment" in result.stderr
    assert result.stderr.endswith("Added 1 noqa directive to 1 file.\n")
    assert (
        project / "broken.py"
    ).read_text() == "import tensorflow as tf\nwith tf.GradientTape() as tape\n"


@pytest.mark.parametrize(
    "options", [["--fix"], ["--diff"], ["--unsafe-fixes"], ["--statistics"], ["--show-fixes"]]
)
def test_add_noqa_with_an_option_that_contradicts_it_is_a_usage_error(
    project: Path, options: list[str]
) -> None:
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--add-noqa", *options)
    assert result.exit_code == 2
    assert result.stderr == f"error: --add-noqa cannot be combined with {options[0]}\n"
    assert (project / "train.py").read_text() == LOSS_OUTSIDE


def test_add_noqa_on_standard_input_is_a_usage_error(project: Path) -> None:
    result = CliRunner().invoke(cli, ["check", "--add-noqa", "-"], input=LOSS_OUTSIDE)
    assert result.exit_code == 2
    assert result.stderr == "error: --add-noqa cannot be combined with standard input\n"


def test_a_notebook_whose_layout_cannot_be_kept_is_left_alone(project: Path) -> None:
    document = json.loads((FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb").read_text())
    compact = json.dumps(document, separators=(",", ":")).encode()
    (project / "nb.ipynb").write_bytes(compact)
    result = run_cli("check", "--add-noqa")
    assert result.exit_code == 0
    assert "nb.ipynb: no noqa comments added: the notebook's JSON layout" in result.stderr
    assert (project / "nb.ipynb").read_bytes() == compact


def test_nothing_is_written_when_linting_again_still_finds_a_silenced_finding() -> None:
    data = LOSS_OUTSIDE.encode()
    [diagnostic] = Linter(all_rules()).check_bytes(data, "train.py")
    result = annotate(data, [diagnostic], lambda new: [diagnostic], notebook=False)
    assert (result.data, result.added, result.remaining) == (None, 0, [diagnostic])
    assert result.warnings == [
        "train.py: no noqa comments added: the comment would not silence "
        "train.py:8:12: TAP101; file left unchanged"
    ]


def test_a_noqa_that_flake8_reads_as_bare_is_left_as_it_is(project: Path) -> None:
    # Two spaces after `noqa:`: flake8 (and tapelint) read no codes, so it silences everything.
    source = UNFILTERED.replace(APPLY, APPLY + "  # noqa:  E501")
    write(project, "train.py", source)
    result = run_cli("check", "--add-noqa")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert (project / "train.py").read_text() == source
