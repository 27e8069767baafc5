from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.flow.differentiability import BREAK_REASONS, path_breaks
from tapelint.semantic.tape_life.inspection import only_inspected


class NonDifferentiableOpInPath(Rule):
    """## What it does
    Checks, inside a tape's recording block, for an op without a gradient through which every
    path from a gradient source to the gradient target goes: `argmax`/`argmin`,
    `round`/`sign`/`floor`/`ceil` (and `//`), a comparison, a cast to an integer or bool
    dtype, `tf.where(cond, 1.0, 0.0)` with constant branches, or `tf.stop_gradient` applied to
    the whole path. The report is at the op where the path is cut.

    Not flagged: such an op that only masks or weights a differentiable term
    (`mask * loss`, `tf.where(pred > 0, a, b)`, a baseline or target network's output under
    `tf.stop_gradient`, a straight-through estimator `x + tf.stop_gradient(q - x)`), ops on
    labels or inputs, `argmax` used for a metric that does not reach the target, and anything
    the target reaches through a function this analysis does not know.

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Why is this bad?
    These ops have no gradient (or, for `sign`, a zero one). If the target depends on a
    source only through them, `tape.gradient` returns `None` for that source and the model
    silently stops learning (https://www.tensorflow.org/guide/autodiff#getting_a_gradient_of_none).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(10)])


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            pred = tf.cast(tf.argmax(logits, axis=-1), tf.float32)
            loss = tf.reduce_mean(tf.square(pred - y))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def compute_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)  # a loss on the logits or probabilities
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP302"
    name = "non-differentiable-op-in-path"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for call in model.gradient_calls:
            if only_inspected(model, call):
                continue  # printed, not used: the None is in plain sight
            for found in path_breaks(model, call):
                tape = tape_label(call.tape, "tape")
                advice = (
                    "apply it only to the part that must stay constant"
                    if found.kind == "stop_gradient"
                    else "use a differentiable op (e.g. softmax or sigmoid instead of a hard "
                    "decision)"
                )
                source = f"`{found.source}`" + ("'s variables" if found.source_is_model else "")
                them = "them" if found.source_is_model else "it"
                yield Finding(
                    found.node,
                    f"`{source_of(model, found.node)}` {BREAK_REASONS[found.kind]}, and the "
                    f"target of `{tape}.gradient` depends on {source} only through it, "
                    f"so no gradient reaches {them}; {advice}",
                )
