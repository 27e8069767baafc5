"""The events file: one JSON object per line, appended by every instrumented process.

Shared by both sides (the probe writes, `tapelint.validate.observations` reads), so it is
plain data and standard library only.

Every event has `kind`, `pid` and `step` (optimizer steps completed so far in that process).
Events caused by user code have `at`: the user frames, innermost first, each
`[path, first_line, last_line, column]` where the lines span the expression the frame was
executing (a call spanning lines covers all of them) and the column is where it starts.
Kinds and their own fields:

- `start`: `argv`, `tensorflow` (whether the interpreter can import it).
- `tape`: a `tf.GradientTape` was created. `tape` (serial), `persistent`,
  `watch_accessed_variables`, `traced` (created while a `tf.function` traced).
- `enter`: `tape`; the tape's `with` block (or `__enter__`) began.
- `gradient`: `tape`, `method` (`gradient`, `jacobian`, `batch_jacobian`), `recording`
  (the tape was recording when called), `sources` (per flattened source: `variable`,
  `tensor` or `other`), `none` (per flattened source: its result was None), `none_names`
  (when some were None: those sources' variable names, else `source N`),
  `variable_ids` (`id()` of the variable sources), `source_ids` and `source_names` (per
  flattened source, in order), `gradient_ids` (per flattened source: `id()` of its
  gradient, null when None), `error`, and, when a zero-gradient op
  (`tf.sign`) ran while that tape recorded, `zero` (per flattened source: its eager
  result was all zeros); `regularized` (how many sources carry a regularizer, null when
  none is a Keras 3 variable), `added_losses` (the most losses a layer user code called
  while the tape recorded held: `add_loss`, activity regularizers) and `losses_read` (how
  many times user code read a Keras layer's `losses` while the tape recorded).
- `watch`: `tape`, `error`.
- `tape-end`: `tape`, `calls` (gradient/jacobian calls it served), `alive` (still
  referenced when the next tape from the same place was created, or when the program
  ended), `traced`, `ops` (the operations it recorded; counted only when TAP107 is
  validated, else null). Emitted for persistent tapes, and, when TAP107 is validated, for
  non-persistent ones that served no call.
- `release`: a persistent tape was released (or, `at_end`, was still alive when the program
  ended): `tape`, `seconds` and `steps` (optimizer steps) since its last gradient call (or
  the end of its block, if it had none), and `bytes`: of the tensors freed with it (measured
  for the first tape from each creation site, else null; `held.py`).
- `convert`: a tensor went to NumPy (`how`: `numpy`, `__array__`, `__float__`, `__int__`)
  while `recording` (serials of the tapes recording at that moment) was not empty; `error`.
- `apply`: `optimizer` (serial), `method`, `count` (gradients passed), `none_variables`
  (names of the variables whose gradient was None), `variables` (their `id()`s) and
  `variable_names`, `gradient_ids` (per pair: `id()` of the gradient, null when None),
  `built` (the `id()`s of the variables a Keras 3 optimizer was built with, null when it
  was not built yet), `traced`.
- `function`: a `tf.function` was created. `function` (serial), `user` (it wraps user
  code, or user code created it: `tf.function(model)`), `definition` ([path, first_line,
  header_last_line] of the wrapped function, when that is user code), `end` (the last line
  of its body, likewise).
- `side-effect`: user code drew NumPy's or Python's randomness (`what`:
  `numpy.random.rand`, ...) while a `tf.function` call traced; `function`: the serial of
  the function called eagerly (Keras' own, under `fit`), whose `call` events count.
- `call`: a user `tf.function` (or one whose trace ran a `side-effect`) was called
  eagerly. `function`, `traces_before`, `traces_after`, `tracing_seconds` (spent tracing
  during this call), `arguments` (the Python values among its arguments, as a string:
  equal strings mean `tf.function` saw the same non-tensor arguments).
- `op`: user code called a gradient-cutting op (`op`: `argmax`, `cast`, ...) while
  `recording` (tape serials) was not empty.
- `layer-call`: user code called a Keras layer or model while `recording` (tape serials)
  was not empty; `type`, `training` (whether `training=` was passed), and without it
  `inference_layers`: the names of the dropout, noise and batch-normalization layers that
  ran in inference mode within the call.
- `construct`: user code constructed a Keras layer or model, a Keras optimizer, or a
  `tf.Variable` (`what`, `type`); `replaced`: what the previous object built at the same
  place had (`iterations` and `slot_variables` of an optimizer, `parameters` of a built
  layer), or null.
- `steps`: the step count grew; `step` is the new count.
- `exception`: an uncaught exception. `type`, `message`, `at` (the traceback's user frames).
- `raise`: an exception raised at (or passing through) a watched line, caught or not
  (`raises.py`): `type`, `message`, `via` `line` and `at` that line's frame; or `via`
  `tf.function`: it left a `tf.function` call, `at` its traceback's user frames, innermost
  first.
- `line`: a watched line (one with a diagnostic) started running, once per line and
  process; `at` that line (Python 3.11: only lines `lines311` could mark).
- `stop`: the probe ended the program after `max_steps` optimizer steps.
- `probe-error`: the instrumentation itself failed (`message`); a tapelint bug.
"""

EVENTS_ENV = "TAPELINT_VALIDATE_EVENTS"
MAX_STEPS_ENV = "TAPELINT_VALIDATE_MAX_STEPS"  # 0 or unset: no step limit
SITES_ENV = "TAPELINT_VALIDATE_SITES"  # the lines to watch for exceptions (`raises.py`)
# The codes of the diagnostics being validated, comma-separated: some instrumentation costs
# enough to run only for the rule that needs it (TAP107's operation count).
CODES_ENV = "TAPELINT_VALIDATE_CODES"

START = "start"
TAPE = "tape"
ENTER = "enter"
GRADIENT = "gradient"
WATCH = "watch"
TAPE_END = "tape-end"
RELEASE = "release"
CONVERT = "convert"
APPLY = "apply"
FUNCTION = "function"
CALL = "call"
SIDE_EFFECT = "side-effect"
CONSTRUCT = "construct"
LAYER_CALL = "layer-call"
OP = "op"
STEPS = "steps"
EXCEPTION = "exception"
RAISE = "raise"
LINE = "line"
STOP = "stop"
PROBE_ERROR = "probe-error"
