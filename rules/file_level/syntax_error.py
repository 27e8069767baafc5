from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Rule


class SyntaxErrorInFile(Rule):
    """## What it does
    Reports a file (or notebook cell) that cannot be parsed, with the parser's line and reason.

    ## Why is this bad?
    A file tapelint cannot parse is a file it cannot check: its tapes go unexamined. The run
    goes on with the other files.

    Only files that can matter are parsed: a file whose code never uses a gradient tape (or
    `tf.function`, or `.apply_gradients(...)`), including one that names it only in docstrings,
    comments or strings, is skipped before parsing, so its syntax errors are left to the
    interpreter and other tools.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x):
        with tf.GradientTape() as tape
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP001"
    name = "syntax-error"
    severity = Severity.ERROR
    engine_reported = True
