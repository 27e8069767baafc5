"""Where gradients go after `tape.gradient`: which calls apply them and with which
optimizer, what they are paired with, which transforms touch them, and whether None is
handled on the way.

- `gradients`: where a gradient call's results go, what `apply_gradients` pairs, and is
  None handled on the way? (TAP401, TAP402)
- `lengths`: do the gradients and the variables an apply zips differ in length, or sit out
  of step (`zip(grads[:-(n + 1)], model.trainable_variables)`)? (TAP402)
- `optimizers`: is the receiver of `.apply(...)` / `.apply_gradients(...)` a Keras
  optimizer, another library's, or unknown: which calls apply gradients? (TAP401, TAP402)
- `identity`: do two expressions certainly denote different variable lists? (TAP402)
- `transforms`: which per-gradient transforms run unguarded over raw gradients? (TAP403)
- `parameter_transforms`: which parameters of a function (or each of their elements) go
  through an op that raises on None, unguarded: a fact of its summary. (TAP403)
- `helper_transforms`: which calls hand raw gradients to a function of the project that
  transforms each one unguarded (`helper(grads)`, `tf.nest.map_structure(helper, grads)`)?
  (TAP403)
- `disconnection`: does a tape's block throw a model output away, the evidence TAP401 asks
  for in test code?
"""
