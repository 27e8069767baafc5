"""A training step whose loss is computed after the tape's block: the tape never recorded it,
so every gradient is None and the model learns nothing from the step."""

import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(1e-3)


def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
    loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(
        [(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None]
    )
    return loss
