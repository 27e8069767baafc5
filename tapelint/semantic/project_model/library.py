"""What well-known functions of other packages do with None gradients, as data.

Each entry is the `FunctionSummary` the function would have if it were part of the
project: which argument its return value passes through with every None kept
(`returns ... params`), which argument it applies as gradients without a check
(`applies`). A function that filters None, or whose result holds no gradients, needs no
entry: no fact means "not a raw gradient list". To teach tapelint another helper, add its
qualified name (as imported: `tensorflow.` for `tf.`, `keras.` for `tf.keras.`) and the
facts, checked against the function's source.
"""

from __future__ import annotations

from tapelint.semantic.project_model.summaries import WHOLE, Flow, FunctionSummary


def _passes_through(params: tuple[str, ...], part: str, param: int) -> FunctionSummary:
    return FunctionSummary(params=params, returns=((part, Flow(params=(param,))),))


LIBRARY: dict[str, FunctionSummary] = {
    # Clips by the global norm of the non-None entries and returns the list with each None
    # kept in its place: `(clipped, norm)`.
    "tensorflow.clip_by_global_norm": _passes_through(
        ("t_list", "clip_norm", "use_norm", "name"), "0", 0
    ),
    # TF-Agents: clips each gradient of the (gradient, variable) pairs and keeps the pairs
    # whose gradient is None as they are (tf_agents/utils/eager_utils.py).
    "tf_agents.utils.eager_utils.clip_gradient_norms": _passes_through(
        ("gradients_to_variables", "max_norm"), WHOLE, 0
    ),
    # Flattening and re-packing a structure keeps None leaves (tf.nest treats None as a
    # leaf of its own).
    "tensorflow.nest.flatten": _passes_through(("structure", "expand_composites"), WHOLE, 0),
    "tensorflow.nest.pack_sequence_as": _passes_through(
        ("structure", "flat_sequence", "expand_composites"), WHOLE, 1
    ),
}
