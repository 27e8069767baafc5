"""Keras models and layers: which expressions certainly are one, what they are made of,
what they hold, how they behave in training, and how they are called under a tape.

- `keras_objects`: is an expression certainly a Keras model or layer, how was it made,
  does it hold Keras variables? (TAP203, TAP204, TAP303)
- `forward_pass`: which of the parts a subclassed model or layer creates does its `call`
  use? (TAP203, TAP303)
- `method_returns`: what a method gives back on every `return`, read from the file's text
  (`self.model = self._define_model()`). (TAP103, TAP203, TAP303)
- `keras_composition`: the walk over what a Keras model or layer is made of, shared by
  the two questions below.
- `keras_state`: does such a model/layer certainly hold non-trainable variables (batch
  normalisation, frozen parts)? (TAP203)
- `keras_training`: does such a model/layer certainly compute something different in
  training (dropout, batch normalisation, a `call` that reads `training`)? (TAP303)
- `trained`: which models and layers a tape's gradient calls train (their variables are
  the sources). (TAP303, TAP304)
- `keras_regularization`: does such a model/layer certainly have regularization losses
  (`kernel_regularizer=`, `add_loss`)? (TAP304)
- `losses_in_target`: which gradient calls train a model with regularization losses but
  differentiate a target that never adds `model.losses`? (TAP304)
- `keras_calls`: which calls of such models/layers, made while a trained tape records,
  behave differently in training and lack `training=`? (TAP303)
"""
