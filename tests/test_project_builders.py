"""What a function of another module builds (`tapelint.project.builders`): a module without a
trigger, or a builder cut out of a module's parse, is summarized for the function a caller
asks about, so `model = build_model()` imported from `models.py` is a known Keras model."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from tapelint.linter.engine import Linter, ModuleContext
from tapelint.linter.registry import all_rules
from tapelint.project.builders import built_by, possible_builders
from tapelint.project.modules import ModuleName
from tapelint.run.cache import ResultCache
from tapelint.run.workspace import Project
from tapelint.semantic.project_model.summaries import Built
from tapelint.settings.config import Settings
from tests.cli_helpers import write

LINTER = Linter([r for r in all_rules() if not r.preview])

MODELS = """\
import tensorflow as tf


def build_classifier():
    return tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.BatchNormalization()])


def build_regressor():
    return tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.Dropout(0.1)])
"""

TRAIN = """\
import tensorflow as tf

from models import build_classifier, build_regressor

classifier = build_classifier()
regressor = build_regressor()


def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(classifier(x, training=True)) + tf.reduce_mean(regressor(x, training=True))
    return tape.gradient(loss, classifier.variables + regressor.variables)
"""


def test_possible_builders():
    text = (
        b"import keras\ndef build(x):\n    return x\ndef  other (x): ...\nNORM = keras.layers.BatchNormalization\n"
        b"class A:\n    def method(self): ...\n    # def commented(): ...\n"
    )
    # Top-level functions and classes (what constructing one builds): not a method.
    assert possible_builders(text) == {"A", "build", "other"}
    assert (
        possible_builders(b"import torch\ndef build(): ...\nfrom torch.nn import Dropout\n")
        == set()
    )
    # No part with non-trainable state named: nothing TAP203 or TAP402 could use.
    assert possible_builders(b"import keras\ndef build(): ...\n") == set()


def test_a_builder_is_summarized_with_what_it_refers_to():
    text = (
        "import keras\n\n\nclass Net(keras.Model):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.norm = keras.layers.BatchNormalization()\n\n"
        "    def call(self, x):\n        return self.norm(x)\n\n\n"
        "def unrelated():\n    return 1\n\n\n"
        "def build():\n    return Net()\n"
    )
    summary = built_by(text, ModuleName("models"), "build")
    assert summary is not None
    normalised = Built(
        True,
        in_variables="BatchNormalization",
        in_weights="BatchNormalization",
        training_part="BatchNormalization",
    )
    assert summary.builds == normalised
    # Constructing the class builds an instance of it, with the same parts.
    constructed = built_by(text, ModuleName("models"), "Net")
    assert constructed is not None and constructed.builds == replace(normalised, of_class=True)
    assert built_by(text, ModuleName("models"), "unrelated") is None
    assert built_by("def build(:\n", ModuleName("models"), "build") is None


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


def test_two_builders_of_one_module_asked_by_one_file(project: Path):
    write(project, "models.py", MODELS)
    train = os.path.realpath(project / "train.py")
    found = _diagnostics(Project(Settings(root=project), cwd=project), train, TRAIN)
    assert [(line, code) for line, code, _ in found] == [(12, "TAP203"), (12, "TAP203")]
    assert "classifier.variables" in found[0][2] and "`build_classifier`" in found[0][2]
    assert "regressor.variables" in found[1][2] and "`build_regressor`" in found[1][2]


def test_a_builder_cut_out_of_a_module_with_a_tape(project: Path):
    tape = (
        "\n\ndef pretrain(model, x):\n    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(model(x))\n"
        "    return tape.gradient(loss, model.trainable_variables)\n"
    )
    write(project, "models.py", MODELS + tape)
    train = os.path.realpath(project / "train.py")
    found = _diagnostics(Project(Settings(root=project), cwd=project), train, TRAIN)
    assert [(line, code) for line, code, _ in found] == [(12, "TAP203"), (12, "TAP203")]


def test_what_a_builder_builds_is_cached_and_follows_its_module(project: Path, tmp_path_factory):
    settings = Settings(root=project)
    cache = ResultCache.open(tmp_path_factory.mktemp("cache"), settings)
    models = write(project, "models.py", MODELS)
    train = os.path.realpath(project / "train.py")
    first = Project(settings, cache=cache, cwd=project)
    assert [code for _, code, _ in _diagnostics(first, train, TRAIN)] == ["TAP203"] * 2
    assert first.loaded[0] >= 2  # each builder asked was parsed
    again = Project(settings, cache=cache, cwd=project)
    assert [code for _, code, _ in _diagnostics(again, train, TRAIN)] == ["TAP203"] * 2
    assert again.loaded[0] == 0  # from the cache
    models.write_text(MODELS.replace("BatchNormalization()", "LayerNormalization()"))
    edited = Project(settings, cache=cache, cwd=project)
    assert ["regressor.variables" in m for _, _, m in _diagnostics(edited, train, TRAIN)] == [True]


REGULARIZED = """\
from tensorflow import keras


def build_classifier():
    return keras.Sequential([keras.layers.Dense(8, kernel_regularizer=keras.regularizers.l2(1e-4))])
"""

FIT = """\
import tensorflow as tf

from models import build_classifier

classifier = build_classifier()
loss_fn = tf.keras.losses.MeanSquaredError()


def step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, classifier(x, training=True))
    return tape.gradient(loss, classifier.trainable_variables)
"""
REGULARIZATION = Linter([r for r in all_rules() if r.code == "TAP304"])


def _regularization(project: Project, path: str) -> list[str]:
    module = project.module_of(path, FIT.encode())
    analysis = REGULARIZATION.analyze_text(FIT, "train.py", context=ModuleContext(module.name))
    view = project.recheck_view(path, module, analysis)
    if view is not None:
        context = project.context(module, view)
        analysis = REGULARIZATION.analyze_text(FIT, "train.py", context=context)
    return [d.message for d in analysis.diagnostics]


def test_a_builder_says_which_part_adds_regularization_losses():
    assert possible_builders(REGULARIZED.encode()) == {"build_classifier"}
    summary = built_by(REGULARIZED, ModuleName("models"), "build_classifier")
    assert summary is not None and summary.builds is not None
    assert summary.builds.regularized == "Dense(kernel_regularizer=...)"
    assert summary.builds.in_variables is None


def test_what_a_builder_regularizes_is_cached_and_follows_its_module(
    project: Path, tmp_path_factory
):
    settings = Settings(root=project)
    cache = ResultCache.open(tmp_path_factory.mktemp("cache"), settings)
    models = write(project, "models.py", REGULARIZED)
    train = os.path.realpath(project / "train.py")
    [message] = _regularization(Project(settings, cache=cache, cwd=project), train)
    assert "`Dense(kernel_regularizer=...)` (in the model `build_classifier` returns)" in message
    again = Project(settings, cache=cache, cwd=project)
    assert len(_regularization(again, train)) == 1
    assert again.loaded[0] == 0  # from the cache
    models.write_text(REGULARIZED.replace("keras.regularizers.l2(1e-4)", "None"))
    assert _regularization(Project(settings, cache=cache, cwd=project), train) == []
