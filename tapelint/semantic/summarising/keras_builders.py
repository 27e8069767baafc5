"""Which functions of a module build a Keras model or layer, as a fact for their callers.

A training script rarely builds its model itself: `model = build_model()` comes from
`models.py`. What that model holds is known only in `models.py`, so its summary says it:
a function whose every `return` gives a Keras object that `keras_objects` knows (a
constructor, a functional or `Sequential` model, an instance of a Keras subclass of the
module) builds one, and `keras_state` says which of its parts hold non-trainable
variables, once for `variables` and once for `weights` (Keras 3 lists a seed generator's
state in `variables` only). The callers' `KerasObjects` read the fact from the index.

A function whose returns depend on the arguments its callers pass is known only through
what `keras_objects` knows of its parameters (an annotation); parameters of a function
only its own file can call are read from that file's calls, as they are for its own
checks. Async functions return a coroutine, not a model, and build nothing here.
"""

from __future__ import annotations

import libcst as cst

from tapelint.semantic.file_model.model import FileModel
from tapelint.semantic.keras.keras_composition import CompositionSearch
from tapelint.semantic.keras.keras_objects import KerasObjects, returns_of, uses_legacy_keras
from tapelint.semantic.keras.keras_regularization import RegularizationLosses
from tapelint.semantic.keras.keras_state import NonTrainableState
from tapelint.semantic.keras.keras_training import TrainingSensitivity
from tapelint.semantic.project_model.summaries import Built


class Builders:
    """Answers, with memory, for one module."""

    def __init__(self, model: FileModel) -> None:
        self._keras = KerasObjects(model)
        self._legacy = uses_legacy_keras(model)
        self._in_variables = NonTrainableState(self._keras, "variables")
        self._in_weights = NonTrainableState(self._keras, "weights")
        self._regularized = RegularizationLosses(self._keras)
        self._training = TrainingSensitivity(self._keras)

    def built_by(self, function: cst.FunctionDef) -> Built | None:
        """What `function` builds, or None when it does not certainly return a Keras
        model or layer."""
        if function.asynchronous is not None:
            return None
        origins = self._keras.returned(function)
        if not origins:
            return None
        returned = [r.value for r in returns_of(function) if r.value is not None]
        return Built(
            is_model=any(origin.is_model for origin in origins),
            legacy=self._legacy,
            in_variables=_on_every_return(self._in_variables, returned),
            in_weights=_on_every_return(self._in_weights, returned),
            regularized=_on_every_return(self._regularized, returned),
            training_part=_on_every_return(self._training, returned),
        )

    def instance_of(self, node: cst.ClassDef) -> Built | None:
        """What an instance of class `node` is, when the class is certainly a Keras model
        or layer subclass; None otherwise."""
        origins = self._keras.instance_of(node)
        if not origins:
            return None
        return Built(
            is_model=any(origin.is_model for origin in origins),
            legacy=self._legacy,
            in_variables=self._in_variables.of_origins(origins),
            in_weights=self._in_weights.of_origins(origins),
            regularized=self._regularized.of_origins(origins),
            training_part=self._training.of_origins(origins),
            of_class=True,
        )


def _on_every_return(state: CompositionSearch, returned: list[cst.BaseExpression]) -> str | None:
    """A part with the property (non-trainable state, regularization losses) in what every
    `return` gives, or None."""
    found = [state.of(value) for value in returned]
    return found[0] if found and all(found) else None
