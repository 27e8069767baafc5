"""`# noqa` through the command line: per line (codes or names, bare) and per file."""

from __future__ import annotations

import pytest

from tests.cli_helpers import LOSS_OUTSIDE, UNFILTERED, run_cli, write

GRADIENT_LINE = "    return tape.gradient(loss, model.trainable_variables)"


def check_with_comment(project, comment: str, source: str = LOSS_OUTSIDE):
    assert GRADIENT_LINE in source
    write(project, "train.py", source.replace(GRADIENT_LINE, GRADIENT_LINE + comment))
    return run_cli("check")


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: TAP101",
        "  # noqa:TAP101",
        "  # NOQA: tap101",
        "  # noqa: E501, TAP101",
        "  # noqa: loss-outside-tape",
        "  # noqa: TAP1",
        "  # noqa",
        "  # something else  # noqa",
    ],
)
def test_line_noqa_suppresses(project, comment):
    result = check_with_comment(project, comment)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "All checks passed!\n")


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: E501",
        "  # noqa: TAP102",
        "  # noqa: unnecessary-persistent-tape",
        "  # noqa: TAP4",
        "  # no qa",
    ],
)
def test_line_noqa_for_something_else_does_not_suppress(project, comment):
    result = check_with_comment(project, comment)
    assert result.exit_code == 1
    assert result.codes() == [("train.py", "TAP101")]


def test_noqa_on_another_line_does_not_suppress(project):
    source = LOSS_OUTSIDE.replace(
        "loss = tf.reduce_mean(pred)", "loss = tf.reduce_mean(pred)  # noqa"
    )
    write(project, "train.py", source)
    assert run_cli("check").codes() == [("train.py", "TAP101")]


def test_file_level_noqa_suppresses_everything(project):
    write(project, "train.py", "# tapelint: noqa\n" + LOSS_OUTSIDE + UNFILTERED)
    write(project, "other.py", LOSS_OUTSIDE)
    assert run_cli("check").codes() == [("other.py", "TAP101")]


def test_file_level_noqa_with_codes_suppresses_only_those(project):
    source = LOSS_OUTSIDE + UNFILTERED + "# tapelint: noqa: TAP401\n"
    write(project, "train.py", source)
    assert run_cli("check").codes() == [("train.py", "TAP101")]


def test_file_level_noqa_must_stand_on_its_own_line(project):
    source = LOSS_OUTSIDE.replace(
        "import tensorflow as tf", "import tensorflow as tf  # tapelint: noqa"
    )
    write(project, "train.py", source)
    assert run_cli("check").codes() == [("train.py", "TAP101")]


APPLY = "    optimizer.apply_gradients(zip(grads, model.trainable_variables))"


@pytest.mark.parametrize(
    ("statement", "silenced"),
    [
        # The line of the finding ends inside a string: its noqa goes where the string ends.
        (f"{APPLY}; print('''\n    done''')  # noqa: TAP401", True),
        (f"{APPLY}; print('''\n    done''')  # noqa: TAP101", False),
        (f"{APPLY}; print('''\n    done''')", False),
        # ... or with a backslash: where the continuation ends.
        (f"{APPLY}; x = 1 + \\\n        2  # noqa: TAP401", True),
        # A line inside brackets can hold a comment: the next one's noqa is not its own.
        (f"{APPLY}; x = (1 +\n        2)  # noqa: TAP401", False),
    ],
)
def test_a_line_that_cannot_end_in_a_comment_takes_its_noqa_where_it_ends(
    project, statement: str, silenced: bool
):
    write(project, "train.py", UNFILTERED.replace(APPLY, statement))
    result = run_cli("check")
    assert result.codes() == ([] if silenced else [("train.py", "TAP401")])
