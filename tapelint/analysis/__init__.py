"""The tape model: what a module does with its gradient tapes. No rules and no TensorFlow here.

`build_model` walks a parsed module once; the other modules answer questions about it.

Building the model:
- `builder`: the one walk that builds the `FileModel` (scopes, definitions, uses, tapes,
  tape calls, apply calls, NumPy calls, None checks, every call site).
- `model`: the model's data (`FileModel`, `Def`, `Use`, `TapeInstance`, `TapeCall`,
  `CallSite`, `Tri`) and its indexes (calls on a tape, calls a statement makes).
- `state`: the bindings carried along one path while the model is built.
- `names`: import aliases; the canonical qualified name of an expression (a name imported
  from the project's modules is the TensorFlow or Keras name they bind it to, if any).
- `module_bindings`: what a module's top-level statements bind, for other modules that
  import from it (aliases, star imports, `try`/`except ImportError` alternatives,
  `__all__`).
- `expressions`: small syntactic questions (names an expression reads, arguments, blocks,
  is a node inside another).

What crosses a function boundary:
- `summaries`: what a function does with gradients (returns them raw, passes a parameter
  through, applies a parameter unfiltered, always asks a tape parameter for gradients), as
  plain data, and the project index that resolves those facts across modules.
- `function_summaries`: a module's summaries, from its tape model alone.
- `spending`: which parameters a function asks for gradients on every path through it.
- `tape_handoffs`: which calls hand a tape to a helper that always asks it for gradients?
  (TAP105)
- `library`: the summaries of well-known functions of other packages, as data.
- `callees`: which function a call runs, by the qualified name the index knows.
- `appliers`: which calls hand gradients to a helper that applies them unfiltered?
  (TAP401)

Questions the rules ask:
- `recording`: was a gradient target computed while its tape recorded? (TAP101)
- `dataflow`: which values derive from what a tape watches, and which NumPy calls lie on
  the way to the target? (TAP301, TAP303)
- `conversions`: which calls convert a value to NumPy, leaving TensorFlow (asked by
  `builder`, which records them as NumPy calls).
- `inspection`: is a gradient in a notebook only printed, displayed or asserted, so a None
  there is in plain sight? (TAP101, TAP201, TAP202, TAP301, TAP302)
- `differentiability`: does the target keep a differentiable path to its sources? (TAP302)
- `lifecycle`: how a tape is used, whether it escapes, whether it is released. (TAP102,
  TAP103)
- `significant_work`: does work that runs while a tape is held cost memory (a model run
  again, a helper that runs one, `yield`), or is it idle (updates, metrics, checks)?
  (TAP103)
- `toy_values`: does a tape record only values written out in the code and tiny (a guide's
  `tf.Variable(3.0)`, `tf.random.normal([7, 5])`)? (TAP103)
- `higher_order`: is a gradient taken inside its own block, differentiated again, and what
  does the call cost there? (TAP104)
- `reuse`: which call asks a spent non-persistent tape a second time? (TAP105)
- `unrelated`: which work in a block depends on nothing the tape watches? (TAP106)
- `watching`: is a source a plain tensor, did the tape watch it, what does a `watch` call
  watch? (TAP201, TAP202, TAP204)
- `late_watch`: does the target depend on a source only through values computed from it
  before the tape watched it? (TAP201)
- `keras_objects`: is an expression certainly a Keras model or layer, how was it made,
  does it hold Keras variables? (TAP203, TAP204, TAP303)
- `keras_composition`: the walk over what a Keras model or layer is made of, shared by
  the two questions below.
- `keras_state`: does such a model/layer certainly hold non-trainable variables (batch
  normalisation, frozen parts)? (TAP203)
- `keras_training`: does such a model/layer certainly compute something different in
  training (dropout, batch normalisation, a `call` that reads `training`)? (TAP303)
- `keras_builders`: which functions build a Keras model or layer, and what it holds, as a
  fact of their summaries for callers in other modules. (TAP203, TAP402)
- `keras_calls`: which calls of such models/layers, made while a trained tape records,
  behave differently in training and lack `training=`? (TAP303)
- `optimizers`: is the receiver of `.apply(...)` / `.apply_gradients(...)` a Keras
  optimizer, another library's, or unknown: which calls apply gradients? (TAP401, TAP402)
- `gradients`: where a gradient call's results go, what `apply_gradients` pairs, and is
  None handled on the way? (TAP401, TAP402)
- `identity`: do two expressions certainly denote different variable lists? (TAP402)
- `transforms`: which per-gradient transforms run unguarded over raw gradients? (TAP403)
- `test_code`: is a file or a function part of a test suite? (TAP401)
- `disconnection`: does a tape's block throw a model output away, the evidence TAP401 asks
  for in test code?
- `steps`: compiled functions, training steps and training loops. (TAP501, TAP502)
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
- `state_creation`: which constructions of training state does a repeated step rebuild
  while the same variables train, or create variables in compiled code? (TAP502)
"""

from tapelint.analysis.builder import build_model
from tapelint.analysis.model import FileModel, TapeCall, TapeInstance, Tri

__all__ = ["FileModel", "TapeCall", "TapeInstance", "Tri", "build_model"]
