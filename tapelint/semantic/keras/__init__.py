"""Keras models and layers: which expressions certainly are one, what they are made of,
what they hold, and how they behave in training.

- `keras_objects`: is an expression certainly a Keras model or layer, how was it made,
  does it hold Keras variables?
- `forward_pass`: which of the parts a subclassed model or layer creates does its `call`
  use?
- `method_returns`: what a method gives back on every `return`, read from the file's text
  (`self.model = self._define_model()`).
- `keras_composition`: the walk over what a Keras model or layer is made of, shared by
  the questions below.
- `keras_state`: does such a model/layer certainly hold non-trainable variables (batch
  normalisation, frozen parts)?
- `keras_training`: does such a model/layer certainly compute something different in
  training (dropout, batch normalisation, a `call` that reads `training`)?
- `keras_regularization`: does such a model/layer certainly have regularization losses
  (`kernel_regularizer=`, `add_loss`)?
"""
