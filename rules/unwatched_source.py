from collections.abc import Iterator

from tapelint.analysis import FileModel
from tapelint.analysis.inspection import only_inspected
from tapelint.analysis.watching import unwatched_sources
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, tape_label


class UnwatchedSource(Rule):
    """## What it does
    Checks for a gradient source that is a plain tensor (made by `tf.constant`,
    `tf.convert_to_tensor`, `tf.random.*`, `tf.zeros`/`ones`/`fill`/`eye`/`linspace`/`range`,
    arithmetic outside the tape, or a NumPy array), not a `tf.Variable`, and that the tape
    never watches.

    ## Why is this bad?
    A tape watches the trainable variables it touches, but ordinary tensors only when asked
    (seed 000: "Trainable variables are watched automatically, but ordinary tensors are not").
    The gradient for an unwatched tensor is `None`.

    A NumPy array as a source is worse: `gradient` raises `AttributeError` (`'numpy.ndarray'
    object has no attribute '_id'`, TensorFlow 2.21) and `watch` refuses it; convert it to a
    tensor first, then watch the tensor.

    Only the tape whose gradient is asked for counts: an outer tape's `watch` does not make
    an inner tape record. `tape.watch([x, y])` watches both.

    Any `watch` of the source on that tape counts, even one after the source's first use:
    that loses the operations before it only when nothing else made the tape record them
    (measured on TensorFlow 2.21: `u = net(points); tape.watch(points)` still gives a
    gradient for `points`, since the model's variables made the tape record the call).

    A source whose origin is not visible here (a parameter, an attribute, a helper's result,
    a value computed inside the block from other values) is never reported, nor is any
    source of a tape passed to other code, which might watch it.

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Example
    ```python
    x = tf.random.normal((4, 3))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * x)
    grad_x = tape.gradient(y, x)
    ```

    Use instead:
    ```python
    x = tf.random.normal((4, 3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    grad_x = tape.gradient(y, x)
    ```
    """

    code = "TAP201"
    name = "unwatched-source"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for call in model.gradient_calls:
            tape = tape_label(call.tape)
            inspected = only_inspected(model, call)
            for unwatched in unwatched_sources(model, call):
                source = unwatched.source.value
                if unwatched.numpy_array:
                    yield Finding(
                        unwatched.source,
                        f"`{source}` is a NumPy array, which `{tape}.{call.method}` cannot "
                        f"differentiate with respect to (it raises AttributeError); convert it "
                        f"with `tf.convert_to_tensor` before the block and `{tape}.watch` the "
                        "tensor",
                    )
                    continue
                if inspected:
                    continue  # printed, not used: the None is in plain sight
                yield Finding(
                    unwatched.source,
                    f"`{source}` is a plain tensor that `{tape}` never watches, so "
                    f"`{tape}.{call.method}` returns None for it; call `{tape}.watch({source})` "
                    "at the start of the `with` block",
                )
