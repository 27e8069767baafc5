"""A node's children, read from its fields.

libcst's `CSTNode.children` finds the children by running a visitor that rebuilds the node
(`_visit_and_replace_children` constructs, validates and throws away a copy of it), which
made it the largest single cost of checking training code: over a dense corpus of training
scripts the analysis asked for the children of about 1.4 million nodes, and the rebuilt
copies took more time than libcst's parse.

`child_nodes` returns the same nodes in the same order without building anything. The
order is libcst's own: each node class's `_visit_and_replace_children` names the fields it
visits, in visiting order, as the string constants it passes to libcst's `visit_*` helpers
(`visit_required(self, "func", self.func, visitor)`), so the compiled function's constants
list them in that order (a field read earlier for a test, such as `ImportFrom.names`, is
still named in its place). The order is learnt once per class, on first use.
`tests/analysis/test_children.py` checks that it equals libcst's `children` on every node
of the fixtures and of a few large standard-library modules.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

# Field values that are not nodes: text, flags and libcst's "absent" sentinel.
_NOT_NODES = frozenset({str, bool, type(None), cst.MaybeSentinel})
_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children`, without rebuilding the node."""
    kind = node.__class__
    order = _ORDER.get(kind)
    if order is None:
        order = _ORDER[kind] = _visited_fields(kind)
    found: list[cst.CSTNode] = []
    for name in order:
        value = getattr(node, name)
        value_kind = value.__class__
        if value_kind is tuple or value_kind is list:
            found.extend(value)
        elif value_kind not in _NOT_NODES:
            found.append(value)
    return found


def _visited_fields(kind: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields `kind` visits, in the order it visits them."""
    fields = {field.name for field in dataclasses.fields(kind)}
    constants = kind._visit_and_replace_children.__code__.co_consts
    named = (c for c in constants if isinstance(c, str) and c in fields)
    return tuple(dict.fromkeys(named))
