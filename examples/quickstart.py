"""A small training loop with four mistakes, for `tapelint check` and `tapelint validate`.

The model has dropout but is called without `training=`; the variables include a head
that the loss never reaches, so its gradients are None and `apply_gradients` gets them
unfiltered; the optimizer is rebuilt for every batch, losing its momentum; and the tape is
persistent although it answers one gradient call.
"""

import keras
import tensorflow as tf

model = keras.Sequential(
    [
        keras.Input((4,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(3),
    ]
)
unused_head = keras.layers.Dense(3, name="unused_head")
unused_head.build((None, 16))
variables = model.trainable_variables + unused_head.trainable_variables
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for _ in range(5):
    x = tf.random.normal((32, 4))
    y = tf.random.uniform((32,), 0, 3, dtype=tf.int32)
    optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    with tf.GradientTape(persistent=True) as tape:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
