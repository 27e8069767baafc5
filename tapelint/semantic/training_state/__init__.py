"""Training state across steps: compiled functions traced again and again, optimizers,
models and variables rebuilt by a repeated step, and values a reused trace freezes.

- `sweeps`: is a loop a sweep over cases written out in the code, and is a loop variable
  one of its case values? (TAP501)
- `retracing`: which `tf.function`s are created per step or called with a changing Python
  value? (TAP501)
- `constructors`: which calls build training state (optimizers, models, layers,
  variables), and what each holds: slots, variables made at construction? (TAP502)
- `graph_building`: which code builds a graph once, or is lifted by `tf.init_scope`?
  (TAP502)
- `repetition`: what does one iteration of a loop (or one call of a function called in
  a loop) train, and is each optimizer and trained object the same in every repetition?
  (TAP502)
- `optimizer_variables`: which updates hand a Keras 3 optimizer variables it was not built
  with (another model, the next model of a loop, a part unfrozen)? (TAP404)
- `state_creation`: which constructions of training state does a repeated step rebuild
  while the same variables train, or create variables in compiled code? (TAP502)
- `trace_time`: which values does a compiled step, called again and again with its trace
  reused, compute or read only while it is traced (NumPy or Python randomness, a number
  the calling loop changes, a list outside it appended to)? (TAP503)
"""
