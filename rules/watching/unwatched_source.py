from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.flow.watching import unwatched_sources
from tapelint.semantic.tape_life.inspection import never_read, only_inspected

from ._late_watch import sources_watched_too_late


class UnwatchedSource(Rule):
    """## What it does
    Checks for a gradient source that is a plain tensor (made by `tf.constant`,
    `tf.convert_to_tensor`, `tf.random.*`, `tf.zeros`/`ones`/`fill`/`eye`/`linspace`/`range`,
    arithmetic outside the tape, or a NumPy array), not a `tf.Variable`, and that the tape
    never watches; and for a source the tape watches only after the values the target is
    computed from were computed from it.

    ## Why is this bad?
    A tape watches the trainable variables it touches, but ordinary tensors only when asked
    with `tape.watch` (https://www.tensorflow.org/guide/autodiff#controlling_what_the_tape_watches).
    The gradient for an unwatched tensor is `None`.

    A NumPy array as a source is worse: `gradient` raises `AttributeError` (`'numpy.ndarray'
    object has no attribute '_id'`, TensorFlow 2.21) and `watch` refuses it; convert it to a
    tensor first, then watch the tensor.

    Only the tape whose gradient is asked for counts: an outer tape's `watch` does not make
    an inner tape record. `tape.watch([x, y])` watches both.

    A `watch` comes too late when the target depends on the source only through values
    computed from it before that watch: before the tape's block (nothing is recorded there),
    or in the block by operations none of whose inputs the tape watched yet, such as
    `points = tf.concat([x, t], 1)` followed by `tape.watch(x)`, or a function of the file
    that only runs such ops on its arguments (`points = collocation_points(x, t)`). The tape
    never recorded them, and the gradient is None (measured on TensorFlow 2.21). That is
    reported too.

    A `watch` after the first use is fine when something else made the tape record that
    use: `u = net(points); tape.watch(points)` gives a gradient for `points`, since the
    model's variables made the tape record the call (measured); so do `w * x` with a
    variable `w`, and `tf.concat([x, t], 1)` after `tape.watch(t)`. When the target also
    depends on the source through a use after the watch, the gradient is wrong (it misses
    the earlier path) but not None: not reported. An alias (`inputs = x`) and
    `tf.convert_to_tensor(x)` of a tensor compute nothing, so watching `x` watches them.

    A source whose origin is not visible here (a parameter, an attribute, a helper's result,
    a value computed inside the block from other values) is never reported, nor is any
    source of a tape passed to other code, which might watch it. Nor is a source whose
    gradient nothing reads: the result is used only at other positions (`grads[1]`), or
    unpacked into a name that is never used (`_, grad_w = tape.gradient(y, [c, w])`).

    In a notebook, a gradient that is only printed, displayed or asserted is not reported:
    the None is the cell's output, not a silent failure (guides print it on purpose).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    net = keras.Sequential([keras.layers.Dense(1)])

    x = tf.random.normal((4, 1))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * x)
    grad_x = tape.gradient(y, x)

    t = tf.zeros((4, 1))
    with tf.GradientTape() as tape:
        points = tf.concat([x, t], axis=1)
        tape.watch(x)
        u = net(points)
    u_x = tape.gradient(u, x)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    net = keras.Sequential([keras.layers.Dense(1)])

    x = tf.random.normal((4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    grad_x = tape.gradient(y, x)

    t = tf.zeros((4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        points = tf.concat([x, t], axis=1)
        u = net(points)
    u_x = tape.gradient(u, x)
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
                if unwatched.position is not None and never_read(model, call, unwatched.position):
                    continue  # nothing reads that gradient
                yield Finding(
                    unwatched.source,
                    f"`{source}` is a plain tensor that `{tape}` never watches, so "
                    f"`{tape}.{call.method}` returns None for it; call `{tape}.watch({source})` "
                    "at the start of the `with` block",
                )
            for late in () if inspected else sources_watched_too_late(model, call):
                source = late.source.value
                through = late.through.name
                if late.before_block:
                    how = f"`{through}` is computed from `{source}` before `{tape}`'s block"
                    fix = f"compute `{through}` inside the block, after `{tape}.watch({source})`"
                else:
                    how = f"`{tape}` watches `{source}` only after `{through}` is computed from it"
                    fix = f"call `{tape}.watch({source})` before `{source}` is first used"
                yield Finding(
                    late.source,
                    f"{how}, so the tape did not record that and `{tape}.{call.method}` returns "
                    f"None for `{source}`; {fix}",
                )
