"""What a function of another module does to each gradient it is handed
(`tapelint.project.transformers`): a helper module with no tape is read for a function
only when a check hands that function raw gradients, and asks the index its `transforms`."""

from __future__ import annotations

import os
from pathlib import Path

from tapelint.linter.engine import Linter, ModuleContext
from tapelint.linter.registry import all_rules
from tapelint.project.modules import ModuleName
from tapelint.project.transformers import defines, transforms_of
from tapelint.run.cache import ResultCache
from tapelint.run.workspace import Project
from tapelint.semantic.project_model.summaries import (
    TRANSFORMS_OF,
    FunctionSummary,
    ModuleSummary,
    ProjectIndex,
    Site,
    Transformed,
    transforms_question,
)
from tapelint.settings.config import Settings
from tests.cli_helpers import write

LINTER = Linter([r for r in all_rules() if not r.preview])

NOISE = """\
import tensorflow as tf


def add_noise(g, stddev=0.01):
    return g + tf.random.normal(tf.shape(g), stddev=stddev)


def plot(values):
    return values * 2


class Accumulator:
    def __init__(self, variables):
        self.sums = [tf.zeros_like(v) for v in variables]

    def add(self, grads):
        self.sums = [s + g for s, g in zip(self.sums, grads)]
"""

TRAIN = """\
import tensorflow as tf

from noise import add_noise, plot

model = tf.keras.Sequential([tf.keras.layers.Dense(4)])


def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) - y)
    grads = tape.gradient(loss, model.trainable_variables)
    plot(loss)
    return tf.nest.map_structure(add_noise, grads)
"""


def test_defines_looks_at_code_only():
    assert defines(NOISE, "add_noise") and defines(NOISE, "Accumulator")
    assert not defines(NOISE, "add")  # a method, not a top-level name
    assert not defines('"""\ndef add_noise(g): ...\n"""\n', "add_noise")
    assert not defines("def add_noise_twice(g): ...\n", "add_noise")


def test_transforms_of_a_function_and_of_a_class():
    summary = transforms_of(NOISE, "noise.py", ModuleName("noise"), "add_noise")
    assert summary is not None and not summary.classes and not summary.bases
    functions = summary.functions
    assert list(functions) == ["add_noise"]
    facts = functions["add_noise"].transforms
    assert [t.param for t in facts] == [0, 1]  # `stddev` goes into `tf.random.normal` too
    fact = facts[0]
    assert (fact.param, fact.each, fact.site.path, fact.site.line) == (0, False, "noise.py", 5)
    assert "`g + tf.random.normal" in fact.site.label and "`add_noise`" in fact.site.label
    # Only the transforms: nothing else the first pass did not know is told.
    assert functions["add_noise"] == FunctionSummary(("g", "stddev"), transforms=facts)
    accumulator = transforms_of(NOISE, "noise.py", ModuleName("noise"), "Accumulator")
    assert accumulator is not None
    methods = accumulator.functions
    # `__init__` runs `tf.zeros_like` on each variable: a fact too, of no use to a caller.
    assert sorted(methods) == ["Accumulator.__init__", "Accumulator.add"]
    assert [(t.param, t.each) for t in methods["Accumulator.add"].transforms] == [(1, True)]
    # What the class binds and its bases: the index's method look-up goes through them.
    assert set(accumulator.classes) == {"Accumulator"}
    assert {"__init__", "add"} <= set(accumulator.classes["Accumulator"])
    assert accumulator.bases == {"Accumulator": ()}
    assert transforms_of("def add_noise(:\n", "noise.py", ModuleName("noise"), "add_noise") is None


def test_a_question_of_transforms_is_asked_and_answered_apart():
    site = Site("noise.py", 5, 12, "`g + n` in `add_noise`")
    fact = Transformed(0, False, site)
    module = ModuleSummary("noise", {"add_noise": FunctionSummary(("g",), transforms=(fact,))})
    index = ProjectIndex([module])
    assert index.transforms("noise.add_noise") == (fact,)
    assert f"{TRANSFORMS_OF}noise.add_noise" in index.asked
    assert transforms_question(f"{TRANSFORMS_OF}noise.add_noise") == "noise.add_noise"
    assert transforms_question("noise.add_noise") is None
    # A check that asked only the name does not depend on the function's transforms.
    without = ProjectIndex([ModuleSummary("noise", {"add_noise": FunctionSummary(("g",))})])
    assert index.answers("noise.add_noise") == without.answers("noise.add_noise")
    assert index.digest(["noise.add_noise"]) == without.digest(["noise.add_noise"])
    question = f"{TRANSFORMS_OF}noise.add_noise"
    assert index.answers(question) != without.answers(question)
    assert index.digest([question]) != without.digest([question])


def _diagnostics(project: Project, path: str, text: str) -> list[tuple[int, str, str]]:
    """Checked as a run checks it: the first pass, then again with the project's index."""
    module = project.module_of(path, text.encode())
    context = ModuleContext(module.name, module.is_package)
    analysis = LINTER.analyze_text(text, os.path.basename(path), context=context)
    view = project.recheck_view(path, module, analysis)
    if view is not None:
        context = project.context(module, view)
        analysis = LINTER.analyze_text(text, os.path.basename(path), context=context)
    return [(d.start.line, d.code, d.message) for d in analysis.diagnostics]


def test_a_helper_module_without_a_tape_is_read_for_the_question(project: Path):
    write(project, "noise.py", NOISE)
    train = os.path.realpath(project / "train.py")
    checking = Project(Settings(root=project), cwd=project)
    found = _diagnostics(checking, train, TRAIN)
    assert [(line, code) for line, code, _ in found] == [(13, "TAP403")]
    assert "`add_noise`" in found[0][2] and "(noise.py:5)" in found[0][2]
    assert checking.loaded[0] == 1  # `noise.py`, once, for `add_noise`; `plot` is not read


def test_no_question_no_read(project: Path):
    write(project, "noise.py", NOISE)
    train = os.path.realpath(project / "train.py")
    filtered = TRAIN.replace(
        "map_structure(add_noise, grads)",
        "map_structure(add_noise, [g for g in grads if g is not None])",
    )
    checking = Project(Settings(root=project), cwd=project)
    assert _diagnostics(checking, train, filtered) == []
    assert checking.loaded[0] == 0  # asked only the names: the module has no trigger


def test_what_a_helper_transforms_is_cached_and_follows_its_module(project: Path, tmp_path_factory):
    settings = Settings(root=project)
    cache = ResultCache.open(tmp_path_factory.mktemp("cache"), settings)
    noise = write(project, "noise.py", NOISE)
    train = os.path.realpath(project / "train.py")
    first = Project(settings, cache=cache, cwd=project)
    assert [code for _, code, _ in _diagnostics(first, train, TRAIN)] == ["TAP403"]
    again = Project(settings, cache=cache, cwd=project)
    assert [code for _, code, _ in _diagnostics(again, train, TRAIN)] == ["TAP403"]
    assert again.loaded[0] == 0  # from the cache
    noise.write_text(NOISE.replace("return g + tf", "return None if g is None else g + tf"))
    edited = Project(settings, cache=cache, cwd=project)
    assert _diagnostics(edited, train, TRAIN) == []


def test_a_helper_cut_out_of_a_module_with_a_tape(project: Path):
    tape = (
        "\n\ndef pretrain(model, x):\n    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(model(x))\n"
        "    return tape.gradient(loss, model.trainable_variables)\n"
    )
    write(project, "noise.py", NOISE + tape)
    train = os.path.realpath(project / "train.py")
    found = _diagnostics(Project(Settings(root=project), cwd=project), train, TRAIN)
    assert [(line, code) for line, code, _ in found] == [(13, "TAP403")]
    assert "(noise.py:5)" in found[0][2]
