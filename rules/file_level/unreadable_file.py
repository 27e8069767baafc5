from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Rule


class UnreadableFile(Rule):
    """## What it does
    Reports a file that cannot be read or decoded: no permission, bytes that are not UTF-8
    (and no coding cookie says otherwise), or a notebook that is not valid notebook JSON.

    ## Why is this bad?
    tapelint cannot check what it cannot read. The run goes on with the other files.

    Like TAP001, this applies to the files tapelint needs to read: a file whose raw bytes never
    mention a gradient tape is skipped before it is decoded (a UTF-16 file, for instance).

    ## Example
    A `train.py` saved as Latin-1, with an `é` in a comment (the byte 0xE9, which is not UTF-8)
    and no coding cookie:
    ```python
    # Author: Renée
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    ```

    Use instead: save the file as UTF-8, or declare its encoding with a coding cookie on line 1
    or 2:
    ```python
    # -*- coding: latin-1 -*-
    # Author: Renée
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])


    def compute_gradients(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        return tape.gradient(loss, model.trainable_variables)
    ```
    """

    code = "TAP002"
    name = "unreadable-file"
    severity = Severity.ERROR
    engine_reported = True
