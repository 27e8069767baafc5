from collections.abc import Iterator

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of
from tapelint.semantic import FileModel, Tri

from ._unused import unused_tapes


class UnusedTape(Rule):
    """## What it does
    Checks for a `tf.GradientTape` whose block records operations but that is never asked
    for a `gradient`, `jacobian` or `batch_jacobian`, and never handed on to code that
    could ask it. The typical case is an evaluation or test step copied from the training
    step that kept its `with tf.GradientTape() as tape:` wrapper.

    Reported at the `with` statement, only when every place that reads the tape is one
    tapelint follows: the `with` itself, `tape.watch(...)`, `tape.stop_recording()`,
    `tape.reset()` and `del tape`. Not flagged, because the tape may be asked where this
    file does not show it: a tape returned, yielded, stored on an object or in a
    container, passed to any call (`optimizer.minimize(loss, variables, tape=tape)`,
    a helper of yours), aliased to another name, or read from a nested function; a tape
    stored on `self`; a name declared `global` or `nonlocal`; a tape at a module's or a
    notebook's top level whose name a function of the file reads (the gradient call may
    be in a later cell: it is followed, and the tape is used). An outer tape whose only use
    is differentiating an inner tape's gradient is asked for that second derivative, and
    is used. Also not flagged: a block that records nothing (only printing, logging,
    Python values, `tf.zeros`-style constants), a tape with
    `watch_accessed_variables=False` that watches nothing, a block with `yield`, and code
    left for a student to write (`# YOUR CODE HERE` in the tape's function: the gradient
    call is the exercise). Test files are skipped by the default `per-file-ignores`.

    This rule is in preview: select it with `--select TAP107` or `--preview`.

    ## Why is this bad?
    A tape records every operation its block runs on a watched value, a model's forward
    pass included, and keeps the intermediate tensors the backward pass would need until
    the tape is released; a persistent tape keeps them until it is deleted. Nothing ever
    reads them. Often the tape is a leftover of a training step copied into an
    evaluation function; sometimes it is a training step whose gradient call and update
    were forgotten, and the model does not train at all.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(10)])
    loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    test_loss = keras.metrics.Mean()


    def test_step(images, labels):
        with tf.GradientTape() as tape:
            predictions = model(images, training=False)
            loss = loss_object(labels, predictions)
        test_loss(loss)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(10)])
    loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    test_loss = keras.metrics.Mean()


    def test_step(images, labels):
        predictions = model(images, training=False)
        loss = loss_object(labels, predictions)
        test_loss(loss)
    ```
    """

    code = "TAP107"
    name = "unused-tape"
    severity = Severity.WARNING
    preview = True
    # A function that mentions no trigger is cut out before the parse: it must not be one
    # that asks a module-level tape for its jacobian.
    triggers = ("GradientTape", ".gradient(", "jacobian(")

    def check(self, model: FileModel) -> Iterator[Finding]:
        for found in unused_tapes(model):
            tape = found.tape
            work = f"`{source_of(model, found.recorded)}`" if found.recorded else "the operations"
            kept = ", and keeps it until the tape is deleted" if tape.persistent is Tri.YES else ""
            if tape.name is None:
                problem = (
                    "this tape is never bound to a name, so nothing can ask it for a "
                    f"gradient; it records {work} and the rest of its block for nothing{kept}"
                )
            else:
                problem = (
                    f"`{tape.name}` is never asked for a gradient and never handed on, so it "
                    f"records {work} and the rest of its block for nothing{kept}"
                )
            yield Finding(
                found.block,
                f"{problem}; remove the tape, or take the gradient the step was meant to take",
            )
