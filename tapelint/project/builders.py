"""What a function of a module builds, when the module's first pass did not say.

Models are usually built in a module of their own (`models.py`: `def build_model(): return
keras.Sequential([...])`) and trained in another. A module with no trigger is never parsed
for the rules, so it has no summary; and in a module that has one, a builder that nothing
there calls was cut out before the parse. So when a name another module asks about is a
top-level function of such a module, and the module mentions Keras and a part with
non-trainable state (`keras_state.may_show_state`: what TAP203 and TAP402 ask of a
builder) or a regularizer (`keras_regularization.may_show_regularization`: what TAP304
asks; a module that names neither can show neither), that function is parsed with what it
refers to (the slicer, with the function's name as its one trigger) and, when that code
itself names such a part outside strings and comments, summarized for what it builds
(`function_summaries.builder_summary`). Anything else about it stays unknown, as it was.
(Checking Keras' own sources, parsing every function asked about that way cost three
times the whole index; most are ops, in modules or slices that name no such part.)
"""

from __future__ import annotations

import re

import libcst as cst

from tapelint.parsing.slicer import Literals, SyntaxProblem, relevant_source
from tapelint.project.modules import ModuleName
from tapelint.semantic import build_model
from tapelint.semantic.keras.keras_regularization import may_show_regularization
from tapelint.semantic.keras.keras_state import may_show_state
from tapelint.semantic.project_model.summaries import FunctionSummary
from tapelint.semantic.summarising.function_summaries import builder_summary

_TOP_LEVEL_DEF = re.compile(r"^(?:def|class)[ \t]+(\w+)[ \t]*[(:]", re.MULTILINE)


def possible_builders(data: bytes) -> frozenset[str]:
    """The functions module text `data` may define as builders of Keras models worth a
    summary: each `def name(` at the start of a line (a top-level function), in code (not
    strings or comments) that names Keras and a part with non-trainable state (what TAP203
    and TAP402 ask a builder about) or a regularizer (what TAP304 asks); none in any
    other. A superset, found without a parse
    (a library module that names `tf.keras.layers.Dropout` only in its docs has none)."""
    if b"keras" not in data or not _may_show_a_part(data):
        return frozenset()  # the words are not even in its prose
    text = data.decode("latin-1")  # the words looked for are ASCII; any byte decodes
    code = Literals(text).blanked(text)
    if "keras" not in code or not _may_show_a_part(code.encode("latin-1")):
        return frozenset()
    return frozenset(_TOP_LEVEL_DEF.findall(code))


def _may_show_a_part(data: bytes) -> bool:
    """A part a builder's summary would name: non-trainable state or a regularizer."""
    return may_show_state(data) or may_show_regularization(data)


def built_by(text: str, module: ModuleName, name: str) -> FunctionSummary | None:
    """The summary of the top-level function `name` of module text `text`, when it builds
    a Keras model or layer; None otherwise, or when the module does not parse."""
    sparse = relevant_source(text, (name,))
    if isinstance(sparse, SyntaxProblem) or not sparse.text:
        return None
    if not _may_show_a_part(Literals(sparse.text).blanked(sparse.text).encode()):
        return None  # neither it nor what it refers to names such a part: nothing to say
    try:
        parsed = cst.parse_module(sparse.text)
        model = build_model(
            parsed, source_text=text, module_name=module.name, is_package=module.is_package
        )
        if sparse.tree is not None:
            model.set_text_tree(sparse.tree)
        defined = [
            node
            for node in parsed.body
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == name
        ]
        return builder_summary(model, defined[0]) if len(defined) == 1 else None
    except Exception:  # an engine bug, deep nesting: the function stays unknown
        return None
