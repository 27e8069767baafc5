"""Code that builds a graph once rather than running steps, and code lifted out of the graph
being traced: places where creating variables is allowed.

- *Graph building*: a function traced once into a graph by TensorFlow Federated
  (`@tff.tf_computation`, `@tff.tensorflow.computation`, `@tff.federated_computation`, or
  the same called on a function) or by `tf.compat.v1.wrap_function(f, ...)`; code in the
  block of `with tf.Graph().as_default():` (or `with g.as_default():` where `g` is bound only
  to `tf.Graph()`); and the whole file when it calls
  `tf.compat.v1.disable_eager_execution()` or `disable_v2_behavior()`. There a Python loop
  adds operations to a graph, once, and a session runs the steps later; variables are
  created while the graph is built, which is what these contexts are for.
- *Lifted*: code in the block of `with tf.init_scope():`, which creates its variables
  outside the function being traced, on purpose. (TensorFlow 2.21 still refuses a second
  creation when the function is traced again; code that lifts variables usually guards the
  creation in a way the analysis cannot follow, such as a cache or an existence check in a
  helper, so the analysis trusts it.)
"""

from __future__ import annotations

import libcst as cst

from tapelint.semantic.calls.steps import with_items_around
from tapelint.semantic.file_model.expressions import argument_value, decorator_callee
from tapelint.semantic.file_model.model import CallSite, DefKind, FileModel, Scope

_FEDERATED = "tensorflow_federated."
_WRAP_FUNCTION = "tensorflow.wrap_function"
_GRAPH = "tensorflow.Graph"
_INIT_SCOPE = "tensorflow.init_scope"
_GRAPH_MODE_SWITCHES = frozenset(
    {"tensorflow.disable_eager_execution", "tensorflow.disable_v2_behavior"}
)


class GraphBuilding:
    """Which code of one file builds a graph once, and which is lifted by `init_scope`."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.graph_mode_file = False
        self._traced: set[cst.CSTNode] = set()  # functions traced once into a graph
        for site in model.calls:
            qualified = site.qualified or ""
            if qualified in _GRAPH_MODE_SWITCHES:
                self.graph_mode_file = True
            elif qualified == _WRAP_FUNCTION or qualified.startswith(_FEDERATED):
                wrapped = argument_value(site.node, 0, "fn")
                if isinstance(wrapped, cst.Lambda):
                    self._traced.add(wrapped)
                elif isinstance(wrapped, cst.Name):
                    self._traced.update(
                        d.stmt
                        for d in model.defs_of(wrapped)
                        if d.kind is DefKind.DEFINITION and isinstance(d.stmt, cst.FunctionDef)
                    )
        for scope in model.scopes:
            node = scope.node
            if isinstance(node, cst.FunctionDef) and any(
                (model.imports.qualify(decorator_callee(d.decorator)) or "").startswith(_FEDERATED)
                for d in node.decorators
            ):
                self._traced.add(node)

    def builds_graph(self, site: CallSite) -> bool:
        """Whether a call runs while a graph is built once (see the module docs)."""
        if self.graph_mode_file or self._in_traced_function(site.scope):
            return True
        return any(
            self._is_graph_default(item.item) for item in with_items_around(self.model, site.stmt)
        )

    def lifted(self, site: CallSite) -> bool:
        """Whether a call runs under `with tf.init_scope():`."""
        return any(
            isinstance(item.item, cst.Call)
            and self.model.imports.qualify(item.item.func) == _INIT_SCOPE
            for item in with_items_around(self.model, site.stmt)
        )

    def _in_traced_function(self, scope: Scope | None) -> bool:
        while scope is not None:
            if scope.node in self._traced:
                return True
            scope = scope.parent
        return False

    def _is_graph_default(self, expr: cst.BaseExpression) -> bool:
        """`tf.Graph().as_default()`, or `g.as_default()` with `g` bound only to `tf.Graph()`."""
        if not (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "as_default"
        ):
            return False
        graph = expr.func.value
        if isinstance(graph, cst.Call):
            return self.model.imports.qualify(graph.func) == _GRAPH
        if isinstance(graph, cst.Name):
            defs = self.model.defs_of(graph)
            return bool(defs) and all(
                d.kind is DefKind.ASSIGN
                and isinstance(d.value, cst.Call)
                and self.model.imports.qualify(d.value.func) == _GRAPH
                for d in defs
            )
        return False
