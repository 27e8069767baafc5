from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.file_model.conversions import PREDICT_METHODS
from tapelint.semantic.flow.dataflow import numpy_on_path
from tapelint.semantic.tape_life.inspection import only_inspected


class NumpyInDifferentiablePath(Rule):
    """## What it does
    Checks, inside a tape's recording block, for a value computed from something the tape
    watches (a model output, a variable, a watched tensor) that goes through NumPy
    (`np.*`, `.numpy()`, `np.asarray`, `float()`/`int()` of a tensor, `.item()`, `.tolist()`,
    `tf.numpy_function`, `tf.py_function`) on its way into the gradient target. Keras
    `model.predict(x)` / `model.predict_on_batch(x)` on a model whose variables are the
    gradient sources counts too: it runs the model outside the tape and returns NumPy.

    NumPy on input data, random noise, shapes, or logging that does not reach the target is
    not flagged; neither is `tensorflow.experimental.numpy`, which stays differentiable. A
    value computed while the tape was not recording (before its block, in an earlier
    iteration of the loop, under `stop_recording()`) counts as input data, whatever it was
    computed from: a DQN's next state, reached through an action chosen from an earlier model
    output, carries no gradient the tape could follow.

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Why is this bad?
    The tape records TensorFlow operations only. A NumPy round trip produces a constant with
    no recorded history, so the part of the loss computed from it contributes no gradient:
    the gradient is silently `None` or silently wrong. TensorFlow's guide lists taking a
    gradient through NumPy among the ways to get a `None` gradient
    (https://www.tensorflow.org/guide/autodiff#getting_a_gradient_of_none).

    ## Example
    ```python
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = tf.reduce_mean(np.square(pred.numpy() - y))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)
            loss = tf.reduce_mean(tf.square(pred - y))
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP301"
    name = "numpy-in-differentiable-path"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for call in model.gradient_calls:
            if only_inspected(model, call):
                continue  # printed, not used: the None is in plain sight
            for numpy_call in numpy_on_path(model, call):
                tape = tape_label(call.tape)
                func = numpy_call.node.func
                if isinstance(func, cst.Attribute) and func.attr.value in PREDICT_METHODS:
                    advice = f"call the model instead (`{source_of(model, func.value)}(...)`)"
                else:
                    advice = "use TensorFlow ops on the tensor instead"
                yield Finding(
                    numpy_call.node,
                    f"`{source_of(model, numpy_call.node)}` leaves TensorFlow inside "
                    f"`{tape}`'s block on the way to the gradient target, so no gradient "
                    f"flows through it; {advice}",
                )
