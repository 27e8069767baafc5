"""Module names, import roots and import resolution (`tapelint.project.modules`), the bindings
of modules that are not analysed, views and renaming (`views`), and `Project`'s API for a
long-lived process."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from tapelint.linter.engine import FileAnalysis, Linter, ModuleContext
from tapelint.linter.registry import all_rules
from tapelint.project.imports import import_summary
from tapelint.project.modules import MAIN, ModuleLayout, ModuleName
from tapelint.project.views import renamed
from tapelint.run.workspace import Project
from tapelint.semantic.project_model import summaries
from tapelint.settings.config import Settings
from tests.cli_helpers import write
from tests.test_pipeline import FILTERED_GRADS, RAW_GRADS

LINTER = Linter([r for r in all_rules() if not r.preview])

CALLER = """\
from {module} import compute_grads


def step(model, optimizer, x):
    grads = compute_grads(model, x)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def layout(root: Path, excluded: tuple[str, ...] = ()) -> ModuleLayout:
    real = os.path.realpath(root)
    return ModuleLayout(real, lambda path: not any(part in excluded for part in Path(path).parts))


def real(root: Path, relative: str) -> str:
    return os.path.realpath(root / relative)


# ---------------------------------------------------------------------- module names
@pytest.mark.parametrize(
    ("files", "target", "name", "is_package"),
    [
        (["train.py"], "train.py", "train", False),
        (["scripts/run.py"], "scripts/run.py", "run", False),
        (
            ["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py"],
            "pkg/sub/m.py",
            "pkg.sub.m",
            False,
        ),
        (["pkg/__init__.py", "pkg/sub/__init__.py"], "pkg/sub/__init__.py", "pkg.sub", True),
        (["src/pkg/__init__.py", "src/pkg/m.py"], "src/pkg/m.py", "pkg.m", False),
        # A package below a directory without `__init__.py`: named from its own top.
        (["lib/pkg/__init__.py", "lib/pkg/m.py"], "lib/pkg/m.py", "pkg.m", False),
    ],
)
def test_module_names(tmp_path, files, target, name, is_package):
    for file in files:
        write(tmp_path, file, "")
    found = layout(tmp_path).module_of(real(tmp_path, target), b"x = 1\n")
    assert found == ModuleName(name, is_package)


def test_a_script_with_a_relative_import_is_named_as_part_of_a_namespace_package(tmp_path):
    write(tmp_path, "agents/dqn.py", "from .common import update\n")
    modules = layout(tmp_path)
    path = real(tmp_path, "agents/dqn.py")
    assert modules.module_of(path, b"from .common import update\n") == ModuleName("agents.dqn")
    assert modules.module_of(path, b"from common import update\n") == ModuleName("dqn")


def test_a_root_with_an_init_is_a_package_named_after_its_directory(tmp_path):
    root = tmp_path / "seed_rl"
    write(root, "__init__.py", "")
    write(root, "common/__init__.py", "")
    write(root, "common/utils.py", "")
    write(root, "agents/learner.py", "")
    modules = layout(root)
    utils = real(root, "common/utils.py")
    assert modules.module_of(utils) == ModuleName("seed_rl.common.utils")
    learner = real(root, "agents/learner.py")
    learner_roots = modules.roots_of(learner, modules.module_of(learner))
    assert modules.locate("seed_rl.common.utils", learner_roots) == utils


# ---------------------------------------------------------------------- resolution
def test_a_script_sees_its_own_directory_first(tmp_path):
    for directory in ("examples/a", "examples/b", ""):
        write(tmp_path, f"{directory}/utils.py".lstrip("/"), "")
        write(tmp_path, f"{directory}/train.py".lstrip("/"), "")
    modules = layout(tmp_path)
    for directory in ("examples/a", "examples/b"):
        train = real(tmp_path, f"{directory}/train.py")
        roots = modules.roots_of(train, ModuleName("train"))
        assert modules.locate("utils", roots) == real(tmp_path, f"{directory}/utils.py")
    train = real(tmp_path, "train.py")
    assert modules.locate("utils", modules.roots_of(train, ModuleName("train"))) == real(
        tmp_path, "utils.py"
    )


def test_package_modules_resolve_from_the_package_root_then_the_project(tmp_path):
    write(tmp_path, "utils.py", "")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/utils.py", "")
    write(tmp_path, "pkg/train.py", "")
    modules = layout(tmp_path)
    train = real(tmp_path, "pkg/train.py")
    roots = modules.roots_of(train, ModuleName("pkg.train"))
    assert roots[0] == os.path.realpath(tmp_path)
    # `import utils` in a package is the top-level one; its sibling only when nothing
    # else has that name (the module run as a script).
    assert modules.locate("utils", roots) == real(tmp_path, "utils.py")
    assert modules.locate("pkg.utils", roots) == real(tmp_path, "pkg/utils.py")
    assert modules.locate("pkg", roots) == real(tmp_path, "pkg/__init__.py")


def test_src_layout_and_namespace_directories(tmp_path):
    write(tmp_path, "src/pkg/__init__.py", "")
    write(tmp_path, "src/pkg/grads.py", "")
    write(tmp_path, "agents/common.py", "")
    write(tmp_path, "scripts/run.py", "")
    modules = layout(tmp_path)
    run = real(tmp_path, "scripts/run.py")
    roots = modules.roots_of(run, ModuleName("run"))
    assert modules.locate("pkg.grads", roots) == real(tmp_path, "src/pkg/grads.py")
    assert modules.locate("agents.common", roots) == real(tmp_path, "agents/common.py")
    assert modules.locate("agents", roots) is None  # a namespace package has no file


def test_only_the_projects_files_are_resolved(tmp_path):
    root = tmp_path / "project"
    write(root, "train.py", "")
    write(root, "venv/lib/helpers.py", "")
    write(tmp_path, "outside.py", "")
    modules = layout(root, excluded=("venv",))
    roots = (*modules.roots_of(real(root, "train.py"), ModuleName("train")), str(tmp_path))
    assert modules.locate("outside", roots) is None
    assert modules.locate("venv.lib.helpers", roots) is None
    modules.add_run_files([real(tmp_path, "outside.py")])  # a file being checked is
    assert modules.locate("outside", roots) == real(tmp_path, "outside.py")


def test_notebooks_and_unnamed_input_are_main_and_see_their_directory(tmp_path):
    write(tmp_path, "nb/utils.py", "")
    modules = layout(tmp_path)
    roots = modules.roots_of(real(tmp_path, "nb/analysis.ipynb"), ModuleName(MAIN))
    assert modules.locate("utils", roots) == real(tmp_path, "nb/utils.py")


# ---------------------------------------------------------------------- bindings, renaming
def test_import_bindings_of_a_module_without_a_trigger():
    text = (
        "import os.path\n"
        "import numpy as np\n"
        "from .grads import get_grads, apply as apply_all\n"
        "from . import update\n"
        "from .common import *\n"
        "try:\n    from .fast import kernel\nexcept ImportError:\n    kernel = None\n"
        "def f():\n    from .inner import hidden\n"
    )
    found = import_summary(text, ModuleName("pkg", is_package=True))
    assert found is not None
    assert found.aliases == {
        "os": "os",
        "np": "numpy",
        "get_grads": "pkg.grads.get_grads",
        "apply_all": "pkg.grads.apply",
        "update": "pkg.update",
        "kernel": "pkg.fast.kernel",
    }
    assert found.star_imports == ("pkg.common",)
    # A module that does not parse: what its imports bind when they can be read alone.
    assert import_summary("import os\ndef (:\n", ModuleName("broken")).aliases == {"os": "os"}
    assert import_summary("if x:\n    import os\ndef (:\n", ModuleName("broken")) is None


def _summary_of(text: str, module: str) -> summaries.ModuleSummary:
    analysis = LINTER.analyze_text(text, f"{module}.py", context=ModuleContext(module))
    assert analysis.summary is not None
    return analysis.summary


def test_renaming_rewrites_every_name_inside_the_module_and_nothing_else():
    text = (
        "import tensorflow as tf\nfrom utils import helper\nimport base\n\n\n"
        "class Agent(base.Learner):\n"
        "    def grads(self, x):\n"
        "        with tf.GradientTape() as tape:\n"
        "            loss = self.net(x)\n"
        "        return tape.gradient(loss, self.net.trainable_variables)\n\n"
        "    def both(self, x):\n"
        "        return self.grads(x), helper(x)\n\n"
        "    def hand_on(self, grads):\n"
        "        self.update(grads)\n\n"
        "    def update(self, grads):\n"
        "        self.opt.apply_gradients(zip(grads, self.net.trainable_variables))\n"
    )
    summary = _summary_of(text, "dqn")
    moved = renamed(summary, "dqn", "agents.dqn")
    assert moved.module == "agents.dqn"
    assert moved.bases == {"Agent": ("base.Learner",)}
    assert moved.aliases == summary.aliases  # other modules keep their names
    both = moved.functions["Agent.both"]
    targets = {call.target for _, flow in both.returns for call in flow.calls}
    assert targets == {"agents.dqn.Agent.grads", "utils.helper"}
    forwards = {f.target for f in moved.functions["Agent.hand_on"].forwards}
    assert forwards == {"agents.dqn.Agent.update"}
    # Sites are places, not names: `dqn.py` keeps its path.
    raw = moved.functions["Agent.grads"].returns[0][1].raw
    assert raw == summary.functions["Agent.grads"].returns[0][1].raw


def test_renaming_knows_every_field_of_a_summary():
    """`renamed` rewrites names field by field: a new field of the summary classes must be
    added there (and here) or renamed modules would keep stale names."""
    fields = {
        cls.__name__: {f.name for f in dataclasses.fields(cls)}
        for cls in (
            summaries.ModuleSummary,
            summaries.FunctionSummary,
            summaries.Flow,
            summaries.CallResult,
            summaries.Forward,
            summaries.Applied,
            summaries.Spent,
            summaries.Site,
            summaries.Built,
            summaries.Transformed,
            summaries.HandedBack,
        )
    }
    assert fields == {
        "ModuleSummary": {
            "module",
            "functions",
            "aliases",
            "star_imports",
            "bases",
            "classes",  # local names of the module's classes: nothing to rename
            "alternatives",
            "exports",  # names of the module itself: nothing to rename
        },
        "FunctionSummary": {
            "params",
            "returns",
            "applies",
            "forwards",
            "spends",
            "builds",
            "transforms",  # parameters and sites: no names
            "hands_back",
        },
        "Flow": {"raw", "params", "calls", "opaque"},
        "CallResult": {"target", "part", "args"},
        "Forward": {"param", "target", "arg", "site"},
        "Applied": {"param", "site"},
        "Spent": {"param", "site"},
        "Site": {"path", "line", "column", "label", "cell"},
        # What a builder returns holds no qualified name: nothing in it to rename (the part
        # that reads `training` is a layer's or a class's plain name).
        "Built": {
            "is_model",
            "legacy",
            "in_variables",
            "in_weights",
            "regularized",
            "training_part",
            "of_class",
        },
        "Transformed": {"param", "each", "site"},
        # Nor does a tape a function hands back: its part, persistence, calls and site.
        "HandedBack": {"part", "persistent", "asked", "toy", "site"},
    }


def test_digest_changes_with_what_the_index_says_of_the_names():
    raw = _summary_of(RAW_GRADS, "utils")
    filtering = _summary_of(FILTERED_GRADS, "utils")
    names = ["utils.compute_grads", "utils.missing"]
    first = summaries.ProjectIndex([raw]).digest(names)
    assert first == summaries.ProjectIndex([raw]).digest(reversed(names))
    assert first != summaries.ProjectIndex([filtering]).digest(names)
    assert first != summaries.ProjectIndex([]).digest(names)
    index = summaries.ProjectIndex([raw])
    index.digest(names)
    assert index.asked == set()  # looking up for a digest is not asking


# ---------------------------------------------------------------------- Project
def _project(root: Path) -> Project:
    return Project(Settings(root=root), cwd=root, watch_disk=True)


def _first_pass(project: Project, path: str, text: str) -> tuple[ModuleName, FileAnalysis]:
    module = project.module_of(path, text.encode())
    context = ModuleContext(module.name, module.is_package)
    return module, LINTER.analyze_text(text, os.path.basename(path), context=context)


def _codes(project: Project, path: str, text: str) -> list[str]:
    module, analysis = _first_pass(project, path, text)
    view = project.recheck_view(path, module, analysis)
    if view is None:
        return [d.code for d in analysis.diagnostics]
    context = project.context(module, view)
    return [d.code for d in LINTER.analyze_text(text, "train.py", context=context).diagnostics]


def test_project_reads_modules_again_when_they_change(project):
    helper = write(project, "utils.py", RAW_GRADS)
    caller = CALLER.format(module="utils")
    train = real(project, "train.py")
    workspace = _project(project)
    assert _codes(workspace, train, caller) == ["TAP401"]
    assert workspace.dependents(real(project, "utils.py")) == {train}
    helper.write_text(FILTERED_GRADS + "\n")  # another size: seen without being told
    assert _codes(workspace, train, caller) == []
    workspace.set_source(real(project, "utils.py"), RAW_GRADS.encode())  # an open editor
    assert _codes(workspace, train, caller) == ["TAP401"]
    workspace.drop_source(real(project, "utils.py"))
    assert _codes(workspace, train, caller) == []


def test_project_sees_modules_created_after_it_looked(project):
    caller = CALLER.format(module="helpers")
    train = real(project, "train.py")
    workspace = _project(project)
    assert _codes(workspace, train, caller) == []
    write(project, "helpers.py", RAW_GRADS)
    workspace.changed(real(project, "helpers.py"))
    assert _codes(workspace, train, caller) == ["TAP401"]


@pytest.mark.parametrize(
    "source",
    [
        "import os\nfrom a.b import (\n    c,\n    d as e,\n)\nx = 1\n",
        "    from .utils import grads, \\\n        apply_update\nimportlib.reload(m)\n",
        "import_me = 1\nfrom x import import_y\nfrom x import *\n# import z\n",
        "def f():\n    import numpy as np\n    return np\nprint('import')\n",
        "from x import a  # import b\nfrom y import (c)\nimport p.q as r, s\n",
    ],
)
def test_import_statements_are_found_as_the_line_pattern_finds_them(source: str) -> None:
    from tapelint.run.workspace import _IMPORT_STATEMENT, _import_statements

    data = source.encode()
    assert list(_import_statements(data)) == _IMPORT_STATEMENT.findall(data)
    assert _IMPORT_STATEMENT.findall(data)  # every case has one


def test_import_statements_of_every_fixture_match_the_line_pattern() -> None:
    from tapelint.run.workspace import _IMPORT_STATEMENT, _import_statements
    from tests.fixture_markers import FIXTURES

    for path in sorted(FIXTURES.rglob("*.py")):
        data = path.read_bytes()
        assert list(_import_statements(data)) == _IMPORT_STATEMENT.findall(data), path
