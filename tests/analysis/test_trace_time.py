"""Values a reused trace freezes (TAP503): what is reported, where, and what changes it."""

from __future__ import annotations

import textwrap

from tapelint.rules.compiled_steps._trace_time import frozen_values

from tests.analysis.helpers import code, model_of

HEADER = "import random\nimport numpy as np\nimport tensorflow as tf\n"


def _frozen(source: str) -> list[tuple[str, str, str, str | None]]:
    """(kind, function, reported code, what changes it or the helper) for each value."""
    model = model_of(HEADER + textwrap.dedent(source))
    found = []
    for value in frozen_values(model):
        extra = value.helper
        if value.changed_by is not None:
            extra = code(model, value.changed_by).strip().split("\n", 1)[0]
        found.append((value.kind.value, value.function, code(model, value.node), extra))
    return found


def test_a_draw_in_a_step_called_in_a_loop_is_frozen():
    assert _frozen(
        """
        @tf.function
        def step(x):
            return x + np.random.rand()

        for x in batches:
            step(x)
        """
    ) == [("random", "step", "np.random.rand()", None)]


def test_the_same_step_called_once_is_not():
    assert (
        _frozen(
            """
            @tf.function
            def step(x):
                return x + np.random.rand()

            step(x)
            """
        )
        == []
    )


def test_a_helper_draw_is_reported_at_the_call_in_the_step_naming_the_helper():
    assert _frozen(
        """
        def flip(x):
            return x[::-1] if random.random() < 0.5 else x

        @tf.function
        def step(x):
            return flip(x) * 2

        for x in batches:
            step(x)
        """
    ) == [("random", "step", "flip(x)", "flip")]


def test_a_counter_the_loop_increments_and_the_loop_variable_are_frozen():
    assert _frozen(
        """
        count = 0

        @tf.function
        def step(x):
            return x * count + epoch

        for epoch in range(3):
            for x in batches:
                step(x)
                count += 1
        """
    ) == [
        ("loop-state", "step", "count", "count += 1"),
        ("loop-state", "step", "epoch", "for epoch in range(3):"),
    ]


def test_the_counter_passed_as_a_python_argument_retraces_instead():
    assert (
        _frozen(
            """
            @tf.function
            def step(x, epoch):
                return x * epoch + np.random.rand()

            for epoch in range(3):
                step(x, epoch)
            """
        )
        == []
    )


def test_an_attribute_changed_by_the_calling_loop_and_an_outer_list_appended_to():
    assert _frozen(
        """
        class Trainer:
            def __init__(self):
                self.index = 0
                self.history = []

            @tf.function
            def step(self):
                loss = self.data[self.index]
                self.history.append(loss)
                return loss

            def fit(self):
                while True:
                    self.step()
                    self.index += 1
        """
    ) == [
        ("append", "step", "self.history.append(loss)", None),
        ("loop-state", "step", "self.index", "self.index += 1"),
    ]


def test_an_attribute_set_to_a_variable_anywhere_is_not_a_python_number():
    assert (
        _frozen(
            """
            class Trainer:
                def __init__(self):
                    self.index = tf.Variable(0)

                @tf.function
                def step(self):
                    return self.data[self.index]

                def fit(self):
                    while True:
                        self.step()
                        self.index += 1
            """
        )
        == []
    )


def test_a_keras_train_step_override_needs_no_loop_and_run_eagerly_silences_it():
    override = textwrap.dedent(
        """
        class Net(tf.keras.Model):
            def train_step(self, data):
                return data + np.random.rand()
        """
    )
    assert _frozen(override) == [("random", "train_step", "np.random.rand()", None)]
    assert _frozen(override + "\nnet = Net()\nnet.compile(run_eagerly=True)\n") == []
    assert _frozen(override + "\n# compile(run_eagerly=True) to debug\n") != []


def test_a_step_a_factory_returns_is_called_through_the_name_it_is_bound_to():
    factory = textwrap.dedent(
        """
        def make(obj):
            @tf.function
            def step():
                return obj.x[np.random.randint(3)]

            return step
        """
    )
    reused = factory + "\nop = make(o)\nfor _ in range(3):\n    op()\n"
    remade = factory + "\nfor _ in range(3):\n    op = make(o)\n    op()\n"
    assert [kind for kind, *_ in _frozen(reused)] == ["random"]
    assert _frozen(remade) == []
