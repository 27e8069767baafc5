"""A copy of TensorFlow's or Keras's own source tree inside a project is not the project's
code: discovery skips it like an excluded directory. A project that carries one (a TinyML
book's examples ship inside a TensorFlow checkout) did not write it, and its tests exercise
gradient edge cases on purpose. The framework's own repository, whose package sits directly
in the root, is checked as any project (`tapelint.sources.discovery`).
"""

from __future__ import annotations

import os

# A TensorFlow source checkout's `tensorflow/` holds `python/` and the C++ and compiler
# trees; Keras 3's `keras/` (and `tf_keras/`) holds `src/` with its layers.
_FRAMEWORK_TREES = {
    "tensorflow": ("python", ("core", "compiler", "lite", "cc")),
    "keras": ("src", ("src/layers",)),
    "tf_keras": ("src", ("src/layers",)),
}


def vendored_framework(directory: str) -> bool:
    """Whether `directory` is the top package of TensorFlow's or Keras's own source tree
    (`tensorflow/` with `python/` and `core/`, `keras/` with `src/layers/`): a framework
    checkout, not code of the project that contains it."""
    tree = _FRAMEWORK_TREES.get(os.path.basename(directory))
    if tree is None:
        return False
    required, any_of = tree
    return os.path.isdir(os.path.join(directory, required)) and any(
        os.path.isdir(os.path.join(directory, part)) for part in any_of
    )
