"""Which function a call runs, and what calls hand on: compiled functions and training
steps, tapes handed to helpers that spend them, tapes helpers hand back, gradients handed
to helpers that apply them.

- `objects`: which class an object a method is called on is an instance of (a constructed
  object, an annotated parameter, a parameter every call passes one class, `self.attr`).
- `callees`: which function a call runs (or a function handed on names), by the qualified
  name the index knows.
- `steps`: compiled functions, training steps and training loops. (TAP501, TAP502)
- `spending`: which parameters a function asks for gradients on every path through it.
- `tape_handoffs`: which calls hand a tape to a helper that always asks it for gradients?
  (TAP105)
- `handed_tapes`: which calls hand back a tape a helper created (`out, tape =
  self._forward(x)`), for the second walk that makes it a tape of the caller? (TAP102,
  TAP103, TAP105, TAP401)
- `appliers`: which calls hand gradients to a helper that applies them unfiltered?
  (TAP401)
"""
