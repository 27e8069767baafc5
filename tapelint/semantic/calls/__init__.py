"""Which function a call runs, and what calls hand on: compiled functions and training
steps, tapes handed to helpers, tapes helpers hand back.

- `objects`: which class an object a method is called on is an instance of (a constructed
  object, an annotated parameter, a parameter every call passes one class, `self.attr`).
- `callees`: which function a call runs (or a function handed on names), by the qualified
  name the index knows.
- `steps`: compiled functions, training steps and training loops.
- `spending`: which parameters a function asks for gradients on every path through it.
- `handed_tapes`: which calls hand back a tape a helper created (`out, tape =
  self._forward(x)`), for the second walk that makes it a tape of the caller?
"""
