"""What does a module do with its gradient tapes? The tape model, and the questions every
rule may ask of it. It names no rule: a question asked by one family of rules only lives
with that family (`tapelint.rules.<family>._*.py`). No TensorFlow here.

`build_model` walks a parsed module once; the subpackages answer questions about it. They are
layers, listed from the bottom: a module imports from its own subpackage and from those
listed before it, never from one listed after it (`tests/analysis/test_package_docs.py`
checks it), so facts flow one way: the project's names, one file's model, calls, flow in a
block, Keras objects, where gradients go, a tape's life, and last the summaries a module
gives its callers.

- `project_model`: what a name is across modules and cells, and what functions do with
  gradients as data (summaries, the library table, the project index).
- `file_model`: the one walk over a module and the model it builds.
- `calls`: which function a call runs; steps and loops; tapes handed to helpers, and tapes
  helpers hand back.
- `flow`: watching, derivation and differentiable paths inside a tape's block.
- `keras`: Keras models and layers, what they hold and how they behave in training.
- `gradient_routes`: where gradients go: optimizers, transforms, None.
- `tape_life`: a tape's cost, the tapes functions hand back, gradients in plain sight.
- `summarising`: each function's summary for its callers, built from all of the above.
"""

from tapelint.semantic.file_model.builder import build_model
from tapelint.semantic.file_model.model import FileModel, TapeCall, TapeInstance, Tri

__all__ = ["FileModel", "TapeCall", "TapeInstance", "Tri", "build_model"]
