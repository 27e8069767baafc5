"""What a function of another module does to each gradient it is handed, when the module's
first pass did not say.

A helper that adds noise to a gradient or an accumulator class often sits in a module of
its own (`utils.py`: `def add_noise(g): return g + tf.random.normal(tf.shape(g))`), with no
trigger: it is never parsed for the rules and has no summary. A helper in a module that
has a trigger may have been cut out of its parse (nothing there refers to it). Such a
function matters only where a check hands it raw gradients, and that check says so: it
asks the index for the function's `transforms`, which it records as a question of its own
(`summaries.TRANSFORMS_OF`). For that question alone, the module that defines the asked
top-level name (a function, or a class for its methods) is parsed whole and summarized
(`engine.summarize_text`), and only the `transforms` facts of that name are kept, with,
for a class, the names its body binds and its bases (what the index's method look-up
follows, `ProjectIndex._method`: an accumulator's method reached through a subclass in
another module): what else the first pass left unknown stays unknown. Checking a training
repository, a module is read this way only for a helper that is handed a raw gradient list.
"""

from __future__ import annotations

import re

from tapelint.linter.engine import ModuleContext, summarize_text
from tapelint.parsing.slicer import Literals
from tapelint.project.modules import ModuleName
from tapelint.semantic.project_model.summaries import FunctionSummary, ModuleSummary


def defines(text: str, name: str) -> bool:
    """Whether module text `text` defines `name` at its top level, as a function or a class,
    in code (not in a string or a comment)."""
    definition = re.compile(rf"^(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", re.M)
    if definition.search(text) is None:
        return False
    return definition.search(Literals(text).blanked(text)) is not None


def transforms_of(text: str, path: str, module: ModuleName, name: str) -> ModuleSummary | None:
    """Module `module`'s summary holding only what the top-level function `name` of module
    text `text` (file `path` as reported), or the methods of class `name`, transform (for
    those that transform a parameter) and, for a class, what its body binds and its bases;
    None when there is none of that, or the text does not parse."""
    if not defines(text, name):
        return None
    try:
        summary = summarize_text(text, path, ModuleContext(module.name, module.is_package))
    except Exception:  # a syntax error, an engine bug: nothing is known, as before
        return None
    functions = {
        key: FunctionSummary(function.params, transforms=function.transforms)
        for key, function in summary.functions.items()
        if (key == name or key.startswith(f"{name}.")) and function.transforms
    }
    classes = {key: bound for key, bound in summary.classes.items() if key == name}
    if not functions and not classes:
        return None
    bases = {key: found for key, found in summary.bases.items() if key == name}
    return ModuleSummary(module.name, functions, bases=bases, classes=classes)
