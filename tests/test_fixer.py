"""`--fix`, `--unsafe-fixes` and `--diff`: what is changed, what is never changed."""

from __future__ import annotations

import ast
import os
import stat

import pytest

from tapelint.findings.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from tapelint.linter.fixer import FixError, apply_fixes, fix_source
from tests.cli_helpers import (
    LOSS_OUTSIDE,
    NOT_RELEASED,
    PERSISTENT_ONCE,
    PERSISTENT_ONCE_INSIDE,
    run_cli,
    write,
)

RELEASED = NOT_RELEASED.replace(
    "    g2 = tape.gradient(loss, x)\n", "    g2 = tape.gradient(loss, x)\n    del tape\n"
)


def test_fix_removes_an_unnecessary_persistent_flag(project):
    path = write(project, "train.py", PERSISTENT_ONCE)
    result = run_cli("check", "--fix")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Found 1 problem in 1 file (1 fixed, 0 remaining).\n"
    fixed = path.read_text()
    assert fixed == PERSISTENT_ONCE.replace("tf.GradientTape(persistent=True)", "tf.GradientTape()")
    ast.parse(fixed)


def test_fix_releases_a_persistent_tape(project):
    path = write(project, "train.py", NOT_RELEASED)
    result = run_cli("check", "--fix")
    assert (result.exit_code, result.stdout) == (0, "")
    assert path.read_text() == RELEASED
    ast.parse(path.read_text())


def test_second_fix_changes_nothing(project):
    path = write(project, "train.py", NOT_RELEASED + "\n" + PERSISTENT_ONCE + LOSS_OUTSIDE)
    first = run_cli("check", "--fix")
    assert first.exit_code == 1  # TAP101 has no fix
    assert "(2 fixed, 1 remaining)" in first.stderr
    after_first = path.read_bytes()
    second = run_cli("check", "--fix")
    assert path.read_bytes() == after_first
    assert second.stdout == first.stdout
    assert second.stderr == "Found 1 problem in 1 file.\n"
    assert run_cli("check", "--diff").stdout == ""


def test_remaining_diagnostics_are_reported_after_fixing(project):
    write(project, "train.py", PERSISTENT_ONCE + LOSS_OUTSIDE)
    result = run_cli("check", "--fix", "--output-format", "json")
    assert result.exit_code == 1
    assert '"code": "TAP101"' in result.stdout
    assert "TAP102" not in result.stdout


def test_diff_prints_the_change_and_writes_nothing(project):
    path = write(project, "train.py", NOT_RELEASED)
    result = run_cli("check", "--diff")
    assert result.exit_code == 1
    assert path.read_text() == NOT_RELEASED
    assert result.stdout.startswith("--- train.py\n+++ train.py\n@@ ")
    added = [line for line in result.stdout.splitlines() if line.startswith("+ ")]
    assert added == ["+    del tape"]
    assert result.stderr == "Would fix 1 problem in 1 file.\n"


def test_diff_without_anything_to_fix_exits_0(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--diff")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_diff_wins_over_fix(project):
    path = write(project, "train.py", PERSISTENT_ONCE)
    result = run_cli("check", "--fix", "--diff")
    assert result.exit_code == 1
    assert path.read_text() == PERSISTENT_ONCE


def test_unsafe_fix_only_with_unsafe_fixes(project):
    path = write(project, "train.py", PERSISTENT_ONCE_INSIDE)
    result = run_cli("check", "--fix")
    assert result.exit_code == 1
    assert result.codes() == [("train.py", "TAP102")]
    assert path.read_text() == PERSISTENT_ONCE_INSIDE
    assert "1 more fixable with --unsafe-fixes" in result.stderr
    assert run_cli("check", "--diff").stdout == ""
    assert (
        "+    with tf.GradientTape() as tape:"
        in run_cli("check", "--diff", "--unsafe-fixes").stdout
    )
    result = run_cli("check", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "tf.GradientTape() as tape" in path.read_text()


def test_noqa_diagnostic_is_never_fixed(project):
    source = NOT_RELEASED.replace(
        "with tf.GradientTape(persistent=True) as tape:",
        "with tf.GradientTape(persistent=True) as tape:  # noqa: TAP103",
    )
    path = write(project, "train.py", source)
    result = run_cli("check", "--fix")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")
    assert path.read_text() == source
    assert run_cli("check", "--diff", "--unsafe-fixes").stdout == ""


def test_fix_keeps_mode_line_ends_and_encoding(project):
    source = "# -*- coding: latin-1 -*-\n# café\n" + NOT_RELEASED
    path = project / "train.py"
    path.write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    path.chmod(0o750)
    assert run_cli("check", "--fix").exit_code == 0
    expected = "# -*- coding: latin-1 -*-\n# café\n" + RELEASED
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode("latin-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert sorted(os.listdir(project)) == ["train.py"]  # no temporary file left behind


def test_fix_keeps_a_bom(project):
    path = project / "train.py"
    path.write_bytes(b"\xef\xbb\xbf" + PERSISTENT_ONCE.encode())
    assert run_cli("check", "--fix").exit_code == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbfimport tensorflow as tf\n")
    assert b"tf.GradientTape() as tape" in path.read_bytes()


def test_fix_after_a_last_line_without_newline(project):
    # The work the tape is held for runs first in the next iteration, before the tape.
    source = NOT_RELEASED.replace("    print(g1, g2)\n    model.evaluate(validation_data)\n", "")
    source = source.replace(
        "for x in data:\n", "for x in data:\n    model.evaluate(validation_data)\n"
    )
    path = write(project, "train.py", source.rstrip("\n"))
    assert run_cli("check", "--fix").exit_code == 0
    assert path.read_text().endswith("    g2 = tape.gradient(loss, x)\n    del tape\n")
    ast.parse(path.read_text())


def test_fix_through_a_symlink_writes_the_target(project):
    target = write(project, "real/train.py", PERSISTENT_ONCE)
    os.symlink("real/train.py", project / "link.py")
    assert run_cli("check", "--fix", "link.py").exit_code == 0
    assert (project / "link.py").is_symlink()
    assert "tf.GradientTape() as tape" in target.read_text()


def _diagnostic(fix: Fix) -> Diagnostic:
    start = Position(1, 1)
    return Diagnostic("x.py", start, start, "TAP999", "test", Severity.WARNING, "m", fix)


def _fix(*edits: tuple[int, int, int, int, str], safe: bool = True) -> Fix:
    applicability = Applicability.SAFE if safe else Applicability.UNSAFE
    return Fix(
        "t",
        applicability,
        tuple(Edit(Position(a, b), Position(c, d), text) for a, b, c, d, text in edits),
    )


def test_fixes_that_break_the_code_are_not_applied():
    text = "x = 1\n"
    breaking = _diagnostic(_fix((1, 5, 1, 6, "(")))
    with pytest.raises(FixError, match="would not parse"):
        fix_source(text, lambda fixed: [breaking] if fixed == text else [], unsafe=False)


def test_fix_that_breaks_a_file_leaves_it_untouched_with_a_warning(project, monkeypatch):
    path = write(project, "train.py", PERSISTENT_ONCE)
    monkeypatch.setattr(
        "tapelint.run.per_file.fix_source",
        lambda *args, **kwargs: (_ for _ in ()).throw(FixError("the fixed code would not parse")),
    )
    result = run_cli("check", "--fix")
    assert result.exit_code == 1
    assert path.read_text() == PERSISTENT_ONCE
    assert "warning: train.py: fixes not applied: the fixed code would not parse" in result.stderr


def test_overlapping_fixes_are_applied_one_at_a_time():
    text = "a = 1\nb = 2\n"
    first = _fix((1, 5, 1, 6, "10"))
    overlapping = _fix((1, 1, 1, 6, "c = 3"))
    separate = _fix((2, 5, 2, 6, "20"))
    assert apply_fixes(text, [overlapping, first, separate]) == ("c = 3\nb = 20\n", 2)


def test_two_insertions_at_one_point_overlap():
    text = "a = 1\n"
    one, two = _fix((2, 1, 2, 1, "b = 2\n")), _fix((2, 1, 2, 1, "c = 3\n"))
    assert apply_fixes(text, [one, two]) == ("a = 1\nb = 2\n", 1)


def test_edits_of_one_fix_go_in_together_later_first():
    text = "a = 1\nb = 2\n"
    both = _fix((1, 5, 1, 6, "100"), (2, 1, 2, 2, "bee"))
    assert apply_fixes(text, [both]) == ("a = 100\nbee = 2\n", 1)


def test_edit_past_the_end_of_a_line_is_refused():
    with pytest.raises(FixError, match="past the end of line 1"):
        apply_fixes("a = 1\n", [_fix((1, 9, 1, 9, "x"))])


def test_fixing_converges_within_the_pass_limit():
    # A fix that keeps reappearing is applied at most MAX_PASSES times.
    def lint(text: str) -> list[Diagnostic]:
        return [_diagnostic(_fix((1, 1, 1, 1, "#")))]

    result = fix_source("x = 1\n", lint, unsafe=False)
    assert result.text == "#" * 10 + "x = 1\n"
    assert result.fixed == 10


def test_a_fix_that_changes_nothing_is_not_counted():
    calls = []

    def lint(text: str) -> list[Diagnostic]:
        calls.append(text)
        return [_diagnostic(_fix((1, 1, 1, 2, "x")))]

    result = fix_source("x = 1\n", lint, unsafe=False)
    assert (result.text, result.fixed, len(result.remaining), len(calls)) == ("x = 1\n", 0, 1, 1)


UNFILTERED = """\
import tensorflow as tf


def train_step(model, optimizer, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_unfiltered_apply_fix_is_unsafe_and_filters_and_reports(project):
    path = write(project, "train.py", UNFILTERED)
    assert run_cli("check", "--fix").exit_code == 1
    assert path.read_text() == UNFILTERED
    result = run_cli("check", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stdout) == (0, "")
    fixed = path.read_text()
    ast.parse(fixed)
    assert "    if any(g is None for g in grads):\n        tf.get_logger().warning(" in fixed
    assert (
        "    optimizer.apply_gradients([(g, v) for g, v in zip(grads, "
        "model.trainable_variables) if g is not None])\n"
    ) in fixed
    assert run_cli("check", "--fix", "--unsafe-fixes").stderr == "All checks passed!\n"
