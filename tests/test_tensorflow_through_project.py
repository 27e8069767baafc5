"""TensorFlow and Keras reached through the project's own modules: what a module binds a name
to (`analysis.module_bindings`, `project.imports`), what the project index says a name is
(`ProjectIndex.binding`, `tensorflow_binding`), how a check takes it (`ImportTable`), and
that a run, a file checked alone and the cache agree on it."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest

from tapelint.project.imports import import_summary, line_start_imports
from tapelint.project.modules import ModuleName
from tapelint.semantic.project_model.module_bindings import module_bindings
from tapelint.semantic.project_model.names import ImportTable
from tapelint.semantic.project_model.summaries import MAX_LOOKUP_STEPS, ModuleSummary, ProjectIndex
from tests.cli_helpers import run_cli, write


def bindings(text: str, module: str = "pkg.compat", *, is_package: bool = False):
    tree = ast.parse(textwrap.dedent(text))
    return module_bindings(tree, module, is_package=is_package)


def summary(text: str, module: str, *, is_package: bool = False) -> ModuleSummary:
    found = import_summary(textwrap.dedent(text), ModuleName(module, is_package))
    assert found is not None
    return found


# ---------------------------------------------------------------------- what a module binds
def test_a_fallback_import_is_an_alternative_binding():
    found = bindings(
        """
        try:
            import tf_keras
        except ImportError:
            from tensorflow import keras as tf_keras
        """
    )
    assert found.aliases == {"tf_keras": "tensorflow.keras"}  # the last import, as before
    assert found.alternatives == {"tf_keras": ("tf_keras", "tensorflow.keras")}


@pytest.mark.parametrize(
    "fallback",
    ["tf = None", "tf = _Missing()", "def tf(): pass", "from . import stub as tf"],
)
def test_a_fallback_to_something_else_is_recorded_as_such(fallback):
    found = bindings(
        f"""
        try:
            import tensorflow as tf
        except ImportError:
            {fallback}
        """
    )
    assert found.alternatives["tf"][0] == "tensorflow"
    assert found.alternatives["tf"][1] in ("", "pkg.stub")


def test_assignments_of_imported_names_bind_them():
    found = bindings(
        """
        import tensorflow as tf
        from tensorflow import keras

        tf = tf.compat.v1
        Adam = keras.optimizers.Adam
        model = keras.Sequential()
        BATCH = 32
        """
    )
    assert found.alternatives == {
        "tf": ("tensorflow", "tensorflow.compat.v1"),
        "Adam": ("tensorflow.keras.optimizers.Adam",),
    }


def test_imports_in_functions_and_classes_are_not_bindings_of_the_module():
    found = bindings(
        """
        import numpy as np

        def load():
            import tensorflow as tf
            return tf

        class Backend:
            from tensorflow import keras
        """
    )
    assert found.aliases == {"np": "numpy"}
    assert found.alternatives == {}


@pytest.mark.parametrize(
    ("text", "exports"),
    [
        ("import tensorflow as tf\n", None),
        ("__all__ = ['tf', 'keras']\n", ("tf", "keras")),
        ("__all__ = ('tf',)\n__all__ += ['keras']\n", ("tf", "keras")),
        (
            "__all__ = ['tf']\n__all__.extend(['keras'])\n__all__.append('np')\n",
            ("tf", "keras", "np"),
        ),
        ("__all__ = []\n", ()),
        ("__all__ = names()\n", None),  # not known: every public name
        ("__all__ = ['tf']\n__all__ += helpers.__all__\n", None),
    ],
)
def test_all_is_what_a_star_import_binds(text, exports):
    assert bindings(text).exports == exports


# ---------------------------------------------------------------------- the fast path
@pytest.mark.parametrize(
    "text",
    [
        "import tensorflow as tf\ntf = tf.compat.v1\n",
        "import tensorflow as tf\nif OLD:\n    tf = None\n",
        "import tensorflow as tf\ntf, np = None, None\n",
        "from tensorflow import keras\nAdam = keras.optimizers.Adam\n",
        "import tensorflow as tf\n__all__ = ['tf']\n",
    ],
)
def test_the_imports_alone_are_not_enough_when_other_lines_bind(text):
    assert line_start_imports(text) is None
    assert summary(text, "pkg.compat") == ModuleSummary(
        "pkg.compat",
        aliases=bindings(text).aliases,
        alternatives=bindings(text).alternatives,
        exports=bindings(text).exports,
    )


@pytest.mark.parametrize(
    "text",
    [
        "import tensorflow as tf\ntf.get_logger().setLevel('ERROR')\nx = tf.constant(1)\n",
        "import numpy as np\n\n\ndef f(x):\n    y = x\n    return np.mean(y)\n",
    ],
)
def test_the_imports_alone_are_read_when_nothing_else_binds_them(text):
    assert line_start_imports(text) is not None


# ---------------------------------------------------------------------- the project's answer
PROJECT = [
    summary("from speech.backend import keras, tf\n", "speech", is_package=True),
    summary("from .core import *\n", "speech.backend", is_package=True),
    summary(
        "import numpy as np\nimport tensorflow as tf\nfrom tensorflow import keras\n"
        "import tensorflow as _tf\n__all__ = ['keras', 'tf']\n",
        "speech.backend.core",
    ),
    summary(
        "try:\n    import tf_keras\nexcept ImportError:\n"
        "    from tensorflow import keras as tf_keras\nAdam = tf_keras.optimizers.Adam\n",
        "speech.compat",
    ),
    summary(
        "try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = _Missing()\n",
        "speech.stub",
    ),
    summary(
        "try:\n    from tensorflow import keras\nexcept ImportError:\n"
        "    from speech import minikeras as keras\n",
        "speech.fallback",
    ),
    summary("from .cycle_b import tf\n", "speech.cycle_a"),
    summary("from .cycle_a import tf\n", "speech.cycle_b"),
    summary("from .internal import *\n", "speech.public"),
    summary("import tensorflow as _tf\nimport numpy as np\n", "speech.internal"),
]


@pytest.mark.parametrize(
    ("name", "bound"),
    [
        # Re-exports, a star import of the names `__all__` lists, and an alias.
        ("speech.tf", "tensorflow"),
        ("speech.tf.GradientTape", "tensorflow.GradientTape"),
        ("speech.keras.optimizers.Adam", "keras.optimizers.Adam"),
        # Every binding of a try/except agrees: Keras either way.
        ("speech.compat.tf_keras.optimizers.SGD", "keras.optimizers.SGD"),
        ("speech.compat.Adam", "keras.optimizers.Adam"),
        # A fallback to something else, a cycle: not known.
        ("speech.stub.tf.GradientTape", None),
        ("speech.fallback.keras.optimizers.Adam", None),
        ("speech.cycle_a.tf", None),
        # Not TensorFlow: a name `__all__` leaves out, a private one, another library.
        ("speech.backend.np", None),
        ("speech.public._tf", None),
        ("speech.public.np.mean", None),
        # Outside the project, or TensorFlow already: nothing to say.
        ("elsewhere.tf.GradientTape", None),
        ("tensorflow.GradientTape", None),
    ],
)
def test_what_a_name_of_the_project_stands_for(name, bound):
    assert ProjectIndex(PROJECT).tensorflow_binding(name) == bound


def test_what_the_project_binds_a_name_to_whatever_it_is():
    index = ProjectIndex(PROJECT)
    assert index.binding("speech.public.np.mean") == "numpy.mean"
    assert index.binding("speech.backend.np") == "speech.backend.np"  # not exported
    assert index.binding("speech.stub.tf") is None
    assert index.binding("elsewhere.tf") == "elsewhere.tf"


def test_the_names_followed_are_asked_and_tensorflow_names_are_not():
    index = ProjectIndex(PROJECT)
    index.tensorflow_binding("speech.tf.GradientTape")
    assert {"speech.tf.GradientTape", "speech.backend.tf.GradientTape"} <= index.asked
    assert "tensorflow.GradientTape" in index.asked  # where it ends: the index has no module
    asked = set(index.asked)
    index.tensorflow_binding("keras.optimizers.Adam")
    assert index.asked == asked


def test_the_checked_module_is_not_looked_into():
    """What the module being checked binds, its own imports say; the index holds an older
    summary of it, which must not answer."""
    view = ProjectIndex(PROJECT).with_module(ModuleSummary("speech.stub"))
    assert view.binding("speech.stub.tf") == "speech.stub.tf"
    assert view.tensorflow_binding("speech.stub.tf") is None


def test_many_alternatives_end_within_the_lookup_steps():
    """Each module binds `tf` and `tf2` in two ways each, through the next module: 2**40
    paths, of which the look-up follows MAX_LOOKUP_STEPS names."""
    modules = [
        summary(
            f"try:\n    from m{i + 1} import tf, tf2\nexcept ImportError:\n"
            f"    from m{i + 1} import tf2 as tf, tf as tf2\n",
            f"m{i}",
        )
        for i in range(40)
    ]
    assert modules[0].alternatives == {"tf": ("m1.tf", "m1.tf2"), "tf2": ("m1.tf2", "m1.tf")}
    index = ProjectIndex(modules)
    assert index.binding("m0.tf") is None
    assert len(index.asked) <= MAX_LOOKUP_STEPS


# ---------------------------------------------------------------------- the check takes it
def table(imports: str, through_project, module: str = "train") -> ImportTable:
    found = ImportTable(through_project, module=module, is_package=False)
    for statement in cst.parse_module(imports).body:
        for small in statement.body:
            if isinstance(small, cst.ImportFrom):
                found.add_import_from(small)
            elif isinstance(small, cst.Import):
                found.add_import(small)
    return found


def qualify(found: ImportTable, expression: str) -> str | None:
    return found.qualify(cst.parse_expression(expression))


def test_an_import_from_the_project_is_what_the_project_binds():
    index = ProjectIndex(PROJECT)
    imports = table(
        "from speech import tf, keras\nfrom speech.stub import tf as maybe\nimport speech\n"
        "from .compat import Adam\n",
        index.tensorflow_binding,
        module="speech.train",
    )
    assert qualify(imports, "tf.GradientTape") == "tensorflow.GradientTape"
    assert qualify(imports, "keras.layers.Dense") == "keras.layers.Dense"
    assert qualify(imports, "speech.tf.function") == "tensorflow.function"
    assert qualify(imports, "Adam") == "keras.optimizers.Adam"  # a relative import
    assert qualify(imports, "maybe.GradientTape") == "speech.stub.tf.GradientTape"
    assert imports.local_alias_of("tensorflow") == "tf"


def test_without_the_project_a_name_stays_as_imported():
    imports = table("from speech import tf\n", None)
    assert qualify(imports, "tf.GradientTape") == "speech.tf.GradientTape"
    assert imports.local_alias_of("tensorflow") is None


# ---------------------------------------------------------------------- runs
PACKAGE_INIT = "import tensorflow as tf\n"
STUBBED_INIT = "try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = None\n"
TRAIN = """\
from speech import tf


def step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
    loss = tf.reduce_mean(tf.square(pred - y))
    return tape.gradient(loss, model.trainable_variables)
"""


def test_an_edit_to_the_module_that_binds_tf_changes_the_cached_result(project, monkeypatch):
    monkeypatch.delenv("TAPELINT_NO_CACHE", raising=False)
    monkeypatch.setenv("TAPELINT_CACHE_DIR", str(project / ".cache"))
    write(project, "pyproject.toml", "[tool.tapelint]\nextend-exclude = ['.cache']\n")
    init = write(project, "speech/__init__.py", PACKAGE_INIT)
    write(project, "train.py", TRAIN)
    for _ in range(2):  # cold, then from the cache
        assert run_cli("check", "train.py").codes() == [("train.py", "TAP101")]
        assert run_cli("check", ".").codes() == [("train.py", "TAP101")]
    init.write_text(STUBBED_INIT)
    assert run_cli("check", "train.py").codes() == []
    assert run_cli("check", ".").codes() == []
    init.write_text(PACKAGE_INIT)
    assert run_cli("check", "train.py").codes() == [("train.py", "TAP101")]


def test_a_module_read_for_one_name_does_not_answer_for_another(project):
    """Whether a look-up reads a module's imports depends on the name only, never on what
    was read before: `tf` is read, `Adam` (which no line binds to an import) is not."""
    from tapelint.run.workspace import Project
    from tapelint.settings.config import Settings

    path = write(project, "speech/__init__.py", "import tensorflow as tf\nAdam = make()\n")
    workspace = Project(Settings(root=project), cwd=project)
    real = str(path.resolve())
    first = workspace._load(real, "Adam")
    assert first is not None and first[1] == ModuleSummary("speech")
    read = workspace._load(real, "tf")
    assert read is not None and read[1].aliases == {"tf": "tensorflow"}
    again = workspace._load(real, "Adam")
    assert again is not None and again[1] == ModuleSummary("speech")


def test_a_name_imported_only_in_a_function_is_not_one_of_the_module():
    text = "import numpy as np\n\ndef load():\n    import tensorflow as tf\n    return tf\n"
    found = module_bindings(ast.parse(text), "pkg.m", is_package=False, imported=["np", "tf"])
    assert found.alternatives == {"tf": ("",)}


HELPER = """\
from speech import tf


def compute_grads(model, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    return tape.gradient(loss, model.trainable_variables)
"""
CALLER = """\
import tensorflow as tf

from speech.grads import compute_grads

model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()


def fit(dataset):
    for x, y in dataset:
        grads = compute_grads(model, x, y)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_helper_that_gets_tf_from_the_project_has_the_facts_of_its_tapes(project, monkeypatch):
    """The caller never names `speech`: only the helper's summary, made with what the
    package binds `tf` to, says that its gradients are raw; editing the package's
    `__init__` changes that summary and, through it, the caller's cached result."""
    monkeypatch.delenv("TAPELINT_NO_CACHE", raising=False)
    monkeypatch.setenv("TAPELINT_CACHE_DIR", str(project / ".cache"))
    write(project, "pyproject.toml", "[tool.tapelint]\nextend-exclude = ['.cache']\n")
    init = write(project, "speech/__init__.py", PACKAGE_INIT)
    write(project, "speech/grads.py", HELPER)
    write(project, "train.py", CALLER)
    for _ in range(2):  # cold, then from the cache
        assert run_cli("check", "train.py").codes() == [("train.py", "TAP401")]
        assert run_cli("check", ".").codes() == [("train.py", "TAP401")]
    init.write_text(STUBBED_INIT)
    assert run_cli("check", "train.py").codes() == []
    assert run_cli("check", ".").codes() == []
    init.write_text(PACKAGE_INIT)
    assert run_cli("check", ".").codes() == [("train.py", "TAP401")]


def test_a_long_lived_project_knows_which_files_used_the_binding(project):
    from tapelint.linter.engine import Linter
    from tapelint.linter.registry import all_rules
    from tapelint.run.runner import check_in_project
    from tapelint.run.workspace import Project
    from tapelint.settings.config import Settings

    linter = Linter([r for r in all_rules() if not r.preview])
    init = write(project, "speech/__init__.py", PACKAGE_INIT)
    write(project, "speech/grads.py", HELPER)
    train = str(write(project, "train.py", CALLER).resolve())
    workspace = Project(Settings(root=project), cwd=project)

    def codes() -> list[str]:
        module = workspace.module_of(train, CALLER.encode())
        found, _ = check_in_project(
            lambda context: linter.analyze_text(CALLER, "train.py", context=context),
            train,
            module,
            workspace,
        )
        return [d.code for d in found]

    assert codes() == ["TAP401"]
    assert train in workspace.dependents(str(init.resolve()))
    workspace.set_source(str(init.resolve()), STUBBED_INIT.encode())  # an open editor
    assert codes() == []
    workspace.drop_source(str(init.resolve()))
    assert codes() == ["TAP401"]
