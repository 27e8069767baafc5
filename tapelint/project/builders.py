"""What a function of a module builds, when the module's first pass did not say.

Models are usually built in a module of their own (`models.py`: `def build_model(): return
keras.Sequential([...])`) and trained in another. A module with no trigger is never parsed
for the rules, so it has no summary; and in a module that has one, a builder that nothing
there calls was cut out before the parse. So when a name another module asks about is a
top-level function of such a module, and the module mentions Keras, that function is
parsed with what it refers to (the slicer, with the function's name as its one trigger)
and summarized for what it builds (`function_summaries.builder_summary`). Anything else
about it stays unknown, as it was.
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.analysis import build_model
from tapelint.analysis.function_summaries import builder_summary
from tapelint.analysis.summaries import FunctionSummary
from tapelint.project.modules import ModuleName
from tapelint.source import SyntaxProblem, relevant_source


def may_build(data: bytes, name: str) -> bool:
    """Whether module text `data` may define `name` as a builder of Keras models: a
    `def name(` at the start of a line (a top-level function), in a text that names Keras.
    A superset, cheap to test."""
    if not name.isidentifier() or b"keras" not in data:
        return False
    pattern = rb"^def[ \t]+" + re.escape(name.encode()) + rb"[ \t]*\("
    return re.search(pattern, data, re.MULTILINE) is not None


def built_by(text: str, module: ModuleName, name: str) -> FunctionSummary | None:
    """The summary of the top-level function `name` of module text `text`, when it builds
    a Keras model or layer; None otherwise, or when the module does not parse."""
    sparse = relevant_source(text, (name,))
    if isinstance(sparse, SyntaxProblem) or not sparse.text:
        return None
    try:
        parsed = cst.parse_module(sparse.text)
        model = build_model(
            parsed, source_text=text, module_name=module.name, is_package=module.is_package
        )
        if sparse.tree is not None:
            model.set_text_tree(sparse.tree)
        functions = [
            node
            for node in parsed.body
            if isinstance(node, cst.FunctionDef) and node.name.value == name
        ]
        return builder_summary(model, functions[0]) if len(functions) == 1 else None
    except Exception:  # an engine bug, deep nesting: the function stays unknown
        return None
