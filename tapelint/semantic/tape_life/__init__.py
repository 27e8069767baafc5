"""A tape's life and cost: how it is used, whether it escapes or is released, what work
runs while it is held, a second call on a spent tape, second-order gradients, unrelated
work in its block, and watches that come too late.

- `significant_work`: does work that runs while a tape is held cost memory (a model run
  again, a helper that runs one, `yield`), or is it idle (updates, metrics, checks)?
  (TAP103)
- `toy_values`: does a tape record only values written out in the code and tiny (a guide's
  `tf.Variable(3.0)`, `tf.random.normal([7, 5])`)? (TAP103)
- `handing_back`: which tapes does a function create and hand back to its callers on
  every path (`return out, tape`)? (TAP102, TAP103, TAP105, TAP401)
- `lifecycle`: how a tape is used, whether it escapes, whether it is released, counting
  the calls of the callers a tape is handed back to. (TAP102, TAP103)
- `higher_order`: is a gradient taken inside its own block, differentiated again, and what
  does the call cost there? (TAP104)
- `reuse`: which call asks a spent non-persistent tape a second time? (TAP105)
- `unrelated`: which work in a block depends on nothing the tape watches? (TAP106)
- `unused`: which tapes record their block for nothing, never asked for a gradient nor
  handed on? (TAP107)
- `late_watch`: does the target depend on a source only through values computed from it
  before the tape watched it? (TAP201)
- `inspection`: is a gradient in a notebook only printed, displayed or asserted, so a None
  there is in plain sight? (TAP101, TAP201, TAP202, TAP301, TAP302)
"""
