"""Cells of a Python notebook written in another language: left out, not TAP001."""

from __future__ import annotations

import json

import pytest

from tapelint.linter.engine import Linter
from tapelint.linter.notebooks.notebook import check_notebook, read_notebook
from tapelint.linter.registry import all_rules
from tapelint.sources.cell_language import declared_language, is_declared_foreign, looks_like_r

LINTER = Linter([r for r in all_rules() if not r.preview])
STEP = (
    "import tensorflow as tf\nwith tf.GradientTape() as tape:\n    pred = model(x, training=True)\n"
    "loss = tf.reduce_mean(pred)\ngrads = tape.gradient(loss, model.trainable_variables)\n"
)


def notebook(*cells: tuple[str, dict]) -> bytes:
    document = {
        "cells": [
            {"cell_type": "code", "metadata": metadata, "source": source}
            for source, metadata in cells
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    "cell",
    [
        "data_dir <- '/tmp/glm'\nx <- as.matrix(read.csv(paste(data_dir, '/x.csv')))\n",
        'fit <- glmnet(\nx = x,\ntype.logistic = "Newton"\n)\n',
        "write.csv(as.matrix(coef(fit, 0.008)),\n          row.names=FALSE)\n",
        "library(ggplot2)\nggplot(df, aes(x = a)) + geom_histogram(bins = 30)\n",
        "install.packages('glmnet', repos = 'https://cloud.r-project.org')\nz = if (a) 1 else 2\n",
        "keep <- !is.na(df$value)  # R comment\n",
    ],
    ids=["assignment", "assignment-of-call", "as-dot-call", "library", "install", "is-dot"],
)
def test_r_cells_are_recognised(cell: str) -> None:
    assert looks_like_r(cell.splitlines())


@pytest.mark.parametrize(
    "cell",
    [
        'print "loss:", loss\n',
        "with tf.GradientTape() as tape\n    loss = 1\n",
        "msg = 'x <- 1 and as.matrix(m)'\nif ok\n",
        "for i in range(3)  # library(x)\n    pass\n",
        "value = model.as.matrix\nif x\n",
    ],
    ids=["python2-print", "missing-colon", "r-in-a-string", "r-in-a-comment", "attribute"],
)
def test_python_syntax_errors_are_not_r(cell: str) -> None:
    assert not looks_like_r(cell.splitlines())


def test_a_python_notebook_leaves_r_cells_out_and_still_reports_python_errors() -> None:
    r_cell = "x <- as.matrix(read.csv('x.csv'))\n"
    data = notebook((r_cell, {}), ('print "x"\n', {}), (STEP, {}))
    program = read_notebook(data)
    assert program is not None
    assert [number for number, _ in program.problems] == [2]
    assert [cell.editable for cell in program.cells] == [False, False, True]
    found = [(d.code, d.cell) for d in check_notebook(LINTER, data, "nb.ipynb")]
    assert found == [("TAP001", 2), ("TAP101", 3)]


def test_a_cell_whose_metadata_names_another_language_is_left_out() -> None:
    python_looking = "import tensorflow as tf\nwith tf.GradientTape() as tape:\n    y = f(x)\n"
    tail = "loss = tf.reduce_mean(y)\ngrads = tape.gradient(loss, vs)\n"
    data = notebook((python_looking, {"vscode": {"languageId": "r"}}), (tail, {}))
    program = read_notebook(data)
    assert program is not None and program.cells[0].lines == ("", "", "")
    assert check_notebook(LINTER, data, "nb.ipynb") == []
    kept = notebook((python_looking, {"vscode": {"languageId": "python"}}), (tail, {}))
    assert [d.code for d in check_notebook(LINTER, kept, "nb.ipynb")] == ["TAP101"]


@pytest.mark.parametrize(
    ("metadata", "language", "foreign"),
    [
        ({"vscode": {"languageId": "r"}}, "r", True),
        ({"dotnet_interactive": {"language": "csharp"}}, "csharp", True),
        ({"vscode": {"languageId": "python"}}, "python", False),
        ({"collapsed": True}, None, False),
        (None, None, False),
    ],
)
def test_declared_language(metadata: object, language: str | None, foreign: bool) -> None:
    assert declared_language(metadata) == language
    assert is_declared_foreign(metadata) is foreign
