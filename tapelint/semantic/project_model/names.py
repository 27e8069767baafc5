"""Import aliases and qualified names, resolved from the module's own imports.

Only the few names tapelint asks about are resolved, so a table of aliases collected in one
cheap pass is enough; libcst's QualifiedNameProvider would cost several times the parse.

A name imported from a module of the project (`from mypkg import tf`) is what that module
binds it to, when that is a TensorFlow or Keras name (`tensorflow`, `keras.optimizers.Adam`,
`tensorflow.GradientTape`): the table is handed the project's answer
(`ProjectIndex.tensorflow_binding`, through `ImportTable(through_project=...)`). Any other
name stays as imported: what a project module binds that is not TensorFlow or Keras is not
known from its imports, and unknown is never reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

import libcst as cst

# Spellings that mean the same module; the key prefix is rewritten to the value.
_CANONICAL_PREFIXES = (
    ("tensorflow.compat.v2.", "tensorflow."),
    ("tensorflow.compat.v1.", "tensorflow."),
    ("tensorflow.keras.", "keras."),
    ("tensorflow.python.keras.", "keras."),
    ("tf_keras.", "keras."),
)


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a chain of Name/Attribute nodes, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def canonical(qualified: str) -> str:
    for prefix, replacement in _CANONICAL_PREFIXES:
        if qualified.startswith(prefix):
            return canonical(replacement + qualified[len(prefix) :])
    if qualified in ("tensorflow.keras", "tf_keras"):
        return "keras"
    return qualified


def is_tensorflow_or_keras(qualified: str) -> bool:
    """Whether a canonical name is TensorFlow's or Keras' (`tf_keras` is Keras)."""
    return is_tensorflow(qualified) or qualified == "keras" or qualified.startswith("keras.")


# The canonical TensorFlow or Keras name an absolute qualified name of the project stands
# for, if any (`ProjectIndex.tensorflow_binding`).
ProjectBinding = Callable[[str], str | None]


class ImportTable:
    """Local name -> fully qualified module or object name, from every import in the module.

    `through_project` (with the module's own name) resolves names imported from the
    project's modules to the TensorFlow or Keras names they are bound to there."""

    def __init__(
        self,
        through_project: ProjectBinding | None = None,
        *,
        module: str = "__main__",
        is_package: bool = False,
    ) -> None:
        self._aliases: dict[str, str] = {}
        # Modules imported with `*` (relative ones spelled with their leading dots).
        self.star_modules: list[str] = []
        self._through_project = through_project
        self._module = module
        self._is_package = is_package
        self._bound: dict[str, str | None] = {}  # raw name -> its TF/Keras binding, if any
        # node -> what `qualify` said of it, while the imports stay as they are (the model
        # asks the same call's name again for each question about it)
        self._qualified: dict[cst.BaseExpression, str | None] = {}

    def add_import(self, node: cst.Import) -> None:
        self._qualified.clear()
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._aliases[alias.asname.name.value] = full
            else:
                # `import a.b` binds `a`, and `a.b.x` then resolves through it.
                root = full.split(".", 1)[0]
                self._aliases[root] = root

    def add_import_from(self, node: cst.ImportFrom) -> None:
        """`from m import x` binds `x` to `m.x`; a relative import keeps its dots
        (`.utils.grad`), which only a module that knows its own name can resolve
        (`absolute`), and never matches a TensorFlow name."""
        self._qualified.clear()
        dots = "." * len(node.relative)
        module = dotted_name(node.module) if node.module is not None else ""
        if module is None:
            return
        prefix = f"{dots}{module}" if module else dots
        if isinstance(node.names, cst.ImportStar):
            self.star_modules.append(prefix)
            return
        separator = "." if module else ""
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            local = alias.name.value
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self._aliases[local] = f"{prefix}{separator}{alias.name.value}"

    def bind_star_tensorflow(self) -> None:
        """A file that star-imports and uses `tf` unbound gets it from the star import: in
        training code that is TensorFlow (`from project.utils import *`)."""
        if self.star_modules and "tf" not in self._aliases:
            self._aliases["tf"] = "tensorflow"
            self._qualified.clear()

    def aliases(self) -> dict[str, str]:
        """Every local name an import binds, with the qualified name it is bound to."""
        return dict(self._aliases)

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The canonical qualified name of an expression like `tf.keras.optimizers.Adam`."""
        if node in self._qualified:
            return self._qualified[node]
        qualified = self._qualify(node)
        self._qualified[node] = qualified
        return qualified

    def _qualify(self, node: cst.BaseExpression) -> str | None:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        target = self._aliases.get(root)
        if target is None:
            return None
        return self._canonical(f"{target}.{rest}" if rest else target)

    def local_alias_of(self, module: str) -> str | None:
        """A local name bound to exactly `module` (e.g. `tf` for tensorflow), if any."""
        for local, target in self._aliases.items():
            if self._canonical(target) == module or target == module:
                return local
        return None

    def _canonical(self, imported: str) -> str:
        """The canonical name of an imported name; one imported from the project is what
        the project binds it to, when that is TensorFlow or Keras."""
        qualified = canonical(imported)
        if self._through_project is None or is_tensorflow_or_keras(qualified):
            return qualified
        if imported not in self._bound:
            full = absolute(imported, self._module, is_package=self._is_package)
            self._bound[imported] = self._through_project(full)
        return self._bound[imported] or qualified


def absolute(qualified: str, module: str, *, is_package: bool) -> str:
    """A qualified name from an import of `module`, relative ones resolved (`.utils.grad`
    in `pkg.train` is `pkg.utils.grad`). An import that climbs above the top-level package
    keeps what is left of the name."""
    if not qualified.startswith("."):
        return qualified
    level = len(qualified) - len(qualified.lstrip("."))
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: max(len(base) - (level - 1), 0)]
    rest = qualified[level:]
    return ".".join([*base, rest] if rest else base)


def is_tensorflow(qualified: str | None) -> TypeGuard[str]:
    return qualified is not None and (
        qualified == "tensorflow" or qualified.startswith("tensorflow.")
    )


def is_gradient_tape(qualified: str | None) -> bool:
    return is_tensorflow(qualified) and qualified.rsplit(".", 1)[-1] == "GradientTape"


def is_numpy(qualified: str | None) -> bool:
    return qualified is not None and (qualified == "numpy" or qualified.startswith("numpy."))


def is_tf_function(qualified: str | None) -> bool:
    return qualified in ("tensorflow.function", "tensorflow.python.eager.def_function.function")
