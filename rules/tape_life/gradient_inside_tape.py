from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, tape_label
from tapelint.semantic import FileModel, TapeCall, Tri
from tapelint.semantic.file_model.expressions import argument_value, contains
from tapelint.semantic.file_model.model import TapeInstance

from ._higher_order import InBlockCost, in_block_cost


class GradientInsideTape(Rule):
    """## What it does
    Checks for `tape.gradient` / `jacobian` / `batch_jacobian` called inside the tape's own
    recording block (not under `tape.stop_recording()`) where it costs something and no tape
    that records the call differentiates its result.

    It costs something when:

    - the tape is persistent, so it records the gradient computation too;
    - another tape records at the call (an enclosing tape, or a second tape of the same
      `with` that has not stopped), so that tape records the gradient computation (not in a
      `tf.function` or Keras `train_step`, where tapes record only while tracing);
    - the tape is not persistent, so it stops recording at the call, and something the block
      computes after the call feeds a later gradient call of the same tape (a call after the
      block, or the same call on a loop's next iteration), which then misses it.

    A persistent tape's block with several such calls is reported once, at the first call,
    with the number of the others: moving the calls out of the block is one fix.

    Not flagged: a non-persistent tape whose call is followed in its block only by the update,
    metrics, logging or nothing at all. TensorFlow stops the tape at that call, so it records
    nothing more and the call costs nothing. Higher-order derivatives are the legitimate case
    and are not flagged either: a gradient whose result an enclosing tape differentiates, or a
    persistent tape that differentiates its own first gradient. A gradient returned to the
    caller, stored, or passed to an unknown function is not flagged, since a tape in the
    caller may differentiate it.

    ## Why is this bad?
    A tape that records a gradient computation nobody differentiates spends CPU and memory
    for nothing; TensorFlow warns that calling `gradient` "inside the context is
    significantly less efficient than calling it outside the context". On a non-persistent
    tape the call stops the recording: what the block computes after it is silently not
    recorded, although it reads as if it were, so a later gradient of that tape cannot see it
    (and asking a spent non-persistent tape again raises, TAP105).

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.Adam()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            tape.watch(x)
            pred = model(x, training=True)
            input_grads = tape.gradient(pred, x)
            penalty = tf.reduce_mean(tf.square(input_grads))
            loss = loss_fn(y, pred) + 0.1 * penalty
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.Adam()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            with tf.GradientTape() as input_tape:
                input_tape.watch(x)
                pred = model(x, training=True)
            input_grads = input_tape.gradient(pred, x)
            penalty = tf.reduce_mean(tf.square(input_grads))
            loss = loss_fn(y, pred) + 0.1 * penalty
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(
            [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
        )
    ```
    """

    code = "TAP104"
    name = "gradient-inside-tape"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        # A persistent tape's block with several such calls is one mistake, with one fix
        # (take the calls out of the block): it is reported once, at its first call.
        persistent: dict[tuple[TapeInstance, cst.With | None], list[TapeCall]] = {}
        for call in model.gradient_calls:
            cost = in_block_cost(model, call)
            if cost is None:
                continue
            if cost.kind == "persistent":
                persistent.setdefault((call.tape, _block_of(call)), []).append(call)
                continue
            yield self._finding(model, call, cost, 0)
        for calls in persistent.values():
            first = calls[0]
            cost = in_block_cost(model, first)
            assert cost is not None
            yield self._finding(model, first, cost, len(calls) - 1)

    def _finding(self, model: FileModel, call: TapeCall, cost: InBlockCost, more: int) -> Finding:
        tape = tape_label(call.tape)
        if cost.kind != "unrecorded":
            advice = "call it after the `with` block"
        elif cost.later is call:
            advice = "create the tape inside the loop, one per iteration"
        else:
            advice = "take it from a separate tape nested inside the block"
        others = f" (and {more} more call{'s' if more > 1 else ''} in this block)" if more else ""
        return Finding(
            call.node,
            f"`{tape}.{call.method}` is called inside `{tape}`'s recording block{others}, "
            f"where {_effect(model, call, cost)}; {advice}",
        )


def _block_of(call: TapeCall) -> cst.With | None:
    """The `with` block of the call's tape that holds the call."""
    return next((b for b in call.tape.blocks if contains(b, call.node)), None)


def _effect(model: FileModel, call: TapeCall, cost: InBlockCost) -> str:
    """What the in-block call costs, as the message says it."""
    if cost.kind == "persistent":
        return "the persistent tape records the gradient computation too"
    if cost.recorder is not None:
        return f"`{tape_label(cost.recorder)}` records the gradient computation too"
    stops = "it stops" if call.tape.persistent is Tri.NO else "unless persistent, it stops"
    needed = cost.needed
    if needed is None or needed.stmt is call.stmt:
        what = "its result is" if needed is None else f"its result `{needed.name}` is"
    else:
        what = f"`{needed.name}`, computed after it, is"
    later = cost.later or call
    target = argument_value(later.node, 0, "target")
    shown = model.module.code_for_node(target) if target is not None else "..."
    again = ", which runs again on the loop's next iteration" if later is call else ""
    return (
        f"{stops} recording, so {what} not recorded for "
        f"`{tape_label(call.tape)}.{later.method}({shown}, ...)`{again}"
    )
