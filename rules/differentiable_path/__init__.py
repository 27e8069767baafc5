"""The differentiable path (TAP3xx): what cuts or changes the path from the sources to the
target: NumPy, ops without a gradient, Keras calls without `training=`, regularization
losses left out.

- `numpy_in_differentiable_path`: TAP301; `non_differentiable_op_in_path`: TAP302;
  `missing_training_flag`: TAP303; `regularization_losses_ignored`: TAP304.
- `_trained`: which models and layers a tape's gradient calls train (their variables are
  the sources). (TAP303, TAP304)
- `_keras_calls`: which calls of such models/layers, made while a trained tape records,
  behave differently in training and lack `training=`? (TAP303)
- `_losses_in_target`: which gradient calls train a model with regularization losses but
  differentiate a target that never adds `model.losses`? (TAP304)
"""
