"""Compiled steps (TAP5xx): `tf.function`s traced again and again, training state rebuilt
per step, Python side effects a reused trace freezes.

- `tf_function_retracing`: TAP501; `state_created_in_step`: TAP502;
  `python_side_effect_in_tf_function`: TAP503.
- `_sweeps`: is a loop a sweep over cases written out in the code, and is a loop variable
  one of its case values? (TAP501, TAP503)
- `_retracing`: which `tf.function`s are created per step or called with a changing Python
  value? (TAP501, TAP503)
- `_constructors`: which calls build training state (optimizers, models, layers,
  variables), and what each holds: slots, variables made at construction? (TAP502)
- `_graph_building`: which code builds a graph once, or is lifted by `tf.init_scope`?
  (TAP502, TAP503)
- `_repetition`: what does one iteration of a loop (or one call of a function called in
  a loop) train, and is each optimizer and trained object the same in every repetition?
  (TAP502)
- `_state_creation`: which constructions of training state does a repeated step rebuild
  while the same variables train, or create variables in compiled code? (TAP502)
- `_trace_time`: which values does a compiled step, called again and again with its trace
  reused, compute or read only while it is traced (NumPy or Python randomness, a number
  the calling loop changes, a list outside it appended to)? (TAP503)
"""
