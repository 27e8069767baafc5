"""Updates (TAP4xx): how gradients reach the variables: None left unfiltered, gradients
paired with the wrong variables, transforms that raise on None, an optimizer handed
variables it was not built with.

- `unfiltered_apply_gradients`: TAP401; `gradient_variable_mismatch`: TAP402;
  `none_unsafe_gradient_transform`: TAP403; `optimizer_variables_changed`: TAP404.
- `_appliers`: which calls hand gradients to a helper that applies them unfiltered?
  (TAP401)
- `_disconnection`: does a tape's block throw a model output away, the evidence TAP401 asks
  for in test code?
- `_lengths`: do the gradients and the variables an apply zips differ in length, or sit out
  of step (`zip(grads[:-(n + 1)], model.trainable_variables)`)? (TAP402)
- `_identity`: do two expressions certainly denote different variable lists? (TAP402,
  TAP404)
- `_helper_transforms`: which calls hand raw gradients to a function of the project that
  transforms each one unguarded (`helper(grads)`, `tf.nest.map_structure(helper, grads)`)?
  (TAP403)
- `_optimizer_variables`: which updates hand a Keras 3 optimizer variables it was not built
  with (another model, the next model of a loop, a part unfrozen)? (TAP404)
"""
