"""The tape model: what a module does with its gradient tapes. No rules and no TensorFlow here.

`build_model` walks a parsed module once; the query modules answer questions about it:
`recording` (was the target recorded?), `dataflow` (what derives from watched values and
reaches the target?), `lifecycle` (how many calls, escapes, release), `gradients` (where
gradients go and whether None is handled), `higher_order` (is a gradient taken inside its
own block differentiated again?), `reuse` (which call asks a spent non-persistent tape?) and
`unrelated` (which work in a block depends on nothing the tape watches?).
"""

from tapelint.analysis.builder import build_model
from tapelint.analysis.model import FileModel, TapeCall, TapeInstance, Tri

__all__ = ["FileModel", "TapeCall", "TapeInstance", "Tri", "build_model"]
