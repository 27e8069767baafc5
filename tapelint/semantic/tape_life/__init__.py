"""A tape's life and cost: what work runs while it is held, what it records, which tapes a
function hands back, and gradients in plain sight.

- `significant_work`: does work that runs while a tape is held cost memory (a model run
  again, a helper that runs one, `yield`), or is it idle (updates, metrics, checks)?
- `toy_values`: does a tape record only values written out in the code and tiny (a guide's
  `tf.Variable(3.0)`, `tf.random.normal([7, 5])`)?
- `handing_back`: which tapes does a function create and hand back to its callers on
  every path (`return out, tape`)?
- `inspection`: is a gradient in a notebook only printed, displayed or asserted, so a None
  there is in plain sight?
"""
