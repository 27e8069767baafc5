"""One rule of containment: an internal error while analysing one file, in whichever phase
of a run (first pass, project index, second pass), is reported for that file, once, and the
run goes on: the other files' findings are printed (issue 20).

The failures are injected into an in-process run by making one step raise for one file.
"""

from __future__ import annotations

import textwrap

import pytest

from tapelint.run import per_file as checking
from tapelint.run.cache import ResultCache
from tapelint.run.workspace import Project
from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

HELPERS = textwrap.dedent(
    """\
    import tensorflow as tf


    def grads(model, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    """
)

# Checked again with the project's index: `grads` is a helper of the project.
TRAIN = textwrap.dedent(
    """\
    from helpers import grads


    def step(model, opt, x):
        g = grads(model, x)
        opt.apply_gradients(zip(g, model.trainable_variables))
    """
)

INJECTED = RuntimeError("injected")

# Code without a tape, enough that `--jobs 2` checks the files in a pool of workers (which
# fork, and so inherit the injected failure).
PADDING = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(4000))


def _raising_for_train(original, is_train):
    def replacement(*args, **kwargs):
        if is_train(*args, **kwargs):
            raise INJECTED
        return original(*args, **kwargs)

    return replacement


def _first_pass(monkeypatch):
    original = checking.analyse_data
    monkeypatch.setattr(
        checking,
        "analyse_data",
        _raising_for_train(
            original, lambda task, data, context: "train" in task.display and context.index is None
        ),
    )


def _naming(monkeypatch):
    monkeypatch.setattr(
        Project,
        "module_of",
        _raising_for_train(Project.module_of, lambda self, path, data=None: "train" in path),
    )


def _index(monkeypatch):
    monkeypatch.setattr(
        Project,
        "recheck_view",
        _raising_for_train(
            Project.recheck_view, lambda self, path, module, analysis: "train" in path
        ),
    )


def _second_pass(monkeypatch):
    original = checking.analyse_data
    monkeypatch.setattr(
        checking,
        "analyse_data",
        _raising_for_train(
            original,
            lambda task, data, context: "train" in task.display and context.index is not None,
        ),
    )


def _storing_the_recheck(monkeypatch):
    monkeypatch.setattr(
        ResultCache,
        "put_recheck",
        _raising_for_train(
            ResultCache.put_recheck,
            lambda self, key, diagnostics, asked, digest: any(
                "train" in d.path for d in diagnostics
            ),
        ),
    )


PHASES = {
    "first pass": _first_pass,
    "first pass, naming the module": _naming,
    "project index": _index,
    "second pass": _second_pass,
    "second pass, storing its result": _storing_the_recheck,
}


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("phase", sorted(PHASES), ids=lambda name: name.replace(" ", "-"))
def test_an_internal_error_in_any_phase_is_the_files_and_the_run_goes_on(
    project, monkeypatch, phase, jobs
):
    write(project, "helpers.py", HELPERS)
    write(project, "train.py", TRAIN)
    write(project, "loose.py", LOSS_OUTSIDE + PADDING)
    clean = run_cli("check", "--jobs", jobs, "--no-cache", ".")
    assert clean.codes() == [("loose.py", "TAP101"), ("train.py", "TAP401")], clean.stderr

    PHASES[phase](monkeypatch)
    result = run_cli("check", "--jobs", jobs, ".")
    assert result.exit_code == 2
    assert result.codes() == [("loose.py", "TAP101")]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: train.py: internal error: RuntimeError: injected"]
