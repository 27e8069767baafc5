"""Where gradients go after `tape.gradient`: which calls apply them and with which
optimizer, what they are paired with, which transforms touch them, and whether None is
handled on the way.

- `gradients`: where a gradient call's results go, what `apply_gradients` pairs, and is
  None handled on the way?
- `optimizers`: is the receiver of `.apply(...)` / `.apply_gradients(...)` a Keras
  optimizer, another library's, or unknown: which calls apply gradients?
- `transforms`: which per-gradient transforms run unguarded over raw gradients?
- `parameter_transforms`: which parameters of a function (or each of their elements) go
  through an op that raises on None, unguarded: a fact of its summary.
"""
