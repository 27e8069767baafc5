"""`tapelint check` indexes the project, then checks each file with the index: helpers in other
modules are followed, the output depends neither on `--jobs`, nor on the order of the paths,
nor on the cache, a cached result goes stale when a module it used changes, and one file
checked alone (pre-commit, editors, flake8) is checked as in a run over its project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tapelint.linter.engine import Linter, ModuleContext
from tapelint.linter.registry import all_rules
from tapelint.project import imports as imports_module
from tapelint.run import parallel
from tapelint.semantic.project_model.summaries import ProjectIndex
from tests.cli_helpers import run_cli, write

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())

RAW_GRADS = """\
import tensorflow as tf


def compute_grads(model, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    return tape.gradient(loss, model.trainable_variables)
"""

FILTERED_GRADS = """\
import tensorflow as tf


def compute_grads(model, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    return [g for g in grads if g is not None]
"""

APPLY_ALL = """\
def apply_all(optimizer, grads, variables):
    optimizer.apply_gradients(zip(grads, variables))
"""

TRAIN = """\
import tensorflow as tf

from pkg import compute_grads
from pkg.update import apply_all


def step(model, optimizer, x):
    grads = compute_grads(model, x)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def step2(model, optimizer, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    apply_all(optimizer, grads, model.trainable_variables)
"""

EXAMPLE = """\
import tensorflow as tf

from utils import compute_grads


def step(model, optimizer, x):
    grads = compute_grads(model, x)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""

AGENT = """\
import tensorflow as tf

from agents.common import apply_all


class Agent:
    def learn(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(self.net(x))
        grads = tape.gradient(loss, self.net.trainable_variables)
        apply_all(self.optimizer, grads, self.net.trainable_variables)
"""

# (path, code) of what the project below reports, with where each finding rests.
EXPECTED = {
    ("agents/dqn.py", 11, "agents/common.py", 2),
    ("examples/a/train.py", 8, "examples/a/utils.py", 7),
    ("train.py", 9, "pkg/grads.py", 7),
    ("train.py", 16, "pkg/update.py", 2),
}


def make_project(root: Path) -> None:
    """A package with a re-exporting `__init__` and two helpers, a script using them, two
    example directories each with its own `utils` (one filters None, one does not), and a
    directory without `__init__.py` imported as a namespace package; plus plain files."""
    write(root, "pkg/__init__.py", "from .grads import compute_grads\n")
    write(root, "pkg/grads.py", RAW_GRADS)
    write(root, "pkg/update.py", APPLY_ALL)
    write(root, "train.py", TRAIN)
    write(root, "examples/a/utils.py", RAW_GRADS)
    write(root, "examples/a/train.py", EXAMPLE)
    write(root, "examples/b/utils.py", FILTERED_GRADS)
    write(root, "examples/b/train.py", EXAMPLE)
    write(root, "agents/common.py", APPLY_ALL)
    write(root, "agents/dqn.py", AGENT)
    write(root, "docs/conf.py", "project = 'x'\n")


def findings(stdout: str) -> set[tuple[str, int, str, int]]:
    return {
        (item["path"], item["line"], related["path"], related["line"])
        for item in json.loads(stdout)
        for related in item["related"]
    }


def check_json(*args: str) -> str:
    result = run_cli("check", "--output-format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def test_helpers_in_other_modules_are_followed(project):
    make_project(project)
    output = json.loads(check_json("--no-cache"))
    assert {(d["path"], d["code"]) for d in output} == {
        ("agents/dqn.py", "TAP401"),
        ("examples/a/train.py", "TAP401"),
        ("train.py", "TAP401"),
    }
    assert findings(json.dumps(output)) == EXPECTED
    step = next(d for d in output if (d["path"], d["line"]) == ("train.py", 9))
    assert "`tape.gradient` in `compute_grads` (pkg/grads.py:7)" in step["message"]
    assert step["related"] == [
        {
            "path": "pkg/grads.py",
            "line": 7,
            "column": 12,
            "message": "`tape.gradient` in `compute_grads`",
        }
    ]


def test_output_depends_neither_on_jobs_nor_on_path_order_nor_on_the_cache(
    project, pools, monkeypatch
):
    # Every pass of a parallel run in a pool, a file per call.
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_BYTES", (1, 1))
    make_project(project)
    reference = check_json("--no-cache", "--jobs", "1")
    assert findings(reference) == EXPECTED
    assert pools == []
    assert check_json("--no-cache", "--jobs", "2") == reference
    assert pools == [2, 2]  # both passes ran in a pool
    paths = ["train.py", "pkg", "agents", "examples", "docs"]
    assert check_json("--no-cache", *paths) == reference
    assert check_json("--no-cache", *reversed(paths)) == reference
    assert check_json() == reference  # cold cache
    assert check_json("--jobs", "1") == reference  # warm cache
    assert check_json("--jobs", "2", *reversed(paths)) == reference


def test_the_result_is_the_one_a_complete_index_gives(project):
    """Checking only the files whose asked names the project resolves, with a view built
    from those names, reports exactly what checking every file with an index of every
    module of the project reports."""
    make_project(project)
    linter = Linter([rule for rule in all_rules() if not rule.preview])
    modules = {
        "pkg/__init__.py": ModuleContext("pkg", is_package=True),
        "pkg/grads.py": ModuleContext("pkg.grads"),
        "pkg/update.py": ModuleContext("pkg.update"),
        "train.py": ModuleContext("train"),
        "agents/common.py": ModuleContext("agents.common"),
        "agents/dqn.py": ModuleContext("agents.dqn"),
    }
    data = {path: (project / path).read_bytes() for path in modules}
    summaries = [
        linter.analyze_bytes(data[path], path, context).summary for path, context in modules.items()
    ]
    # pkg/__init__.py has no trigger: the index gets its import bindings.
    summaries[0] = imports_module.import_summary(data["pkg/__init__.py"].decode(), _name("pkg"))
    complete = ProjectIndex([s for s in summaries if s is not None])
    expected = set()
    for path, context in modules.items():
        with_index = ModuleContext(context.name, context.is_package, complete)
        for d in linter.check_bytes(data[path], path, with_index):
            expected.add((d.path, d.start.line, d.code, d.message))
    paths = list(modules)
    output = json.loads(check_json("--no-cache", *paths))
    assert {(d["path"], d["line"], d["code"], d["message"]) for d in output} == expected
    assert len(expected) == 3


def _name(name: str):
    from tapelint.project.modules import ModuleName

    return ModuleName(name, is_package=True)


@pytest.mark.parametrize(
    "target", ["train.py", "examples/a/train.py", "examples/b/train.py", "agents/dqn.py"]
)
def test_one_file_alone_is_checked_as_in_a_run_over_the_project(project, target):
    make_project(project)
    whole = [d for d in json.loads(check_json("--no-cache")) if d["path"] == target]
    assert json.loads(check_json("--no-cache", target)) == whole
    stdin = run_cli_stdin(project, target)
    assert json.loads(stdin) == whole


def run_cli_stdin(project: Path, target: str) -> str:
    command = ["check", "--output-format", "json", "--no-cache", "--stdin-filename", target, "-"]
    process = subprocess.run(
        [sys.executable, "-m", "tapelint", *command],
        input=(project / target).read_bytes(),
        cwd=project,
        capture_output=True,
        check=False,
    )
    assert process.returncode in (0, 1), process.stderr
    return process.stdout.decode()


def test_a_file_checked_from_another_directory_resolves_in_its_own_project(project):
    make_project(project / "repo")
    write(project / "repo", "pyproject.toml", "[tool.tapelint]\n")
    os.chdir(project / "repo" / "examples")
    output = json.loads(check_json("--no-cache", "a/train.py"))
    assert [(d["path"], d["line"]) for d in output] == [("a/train.py", 8)]
    assert output[0]["related"][0]["path"] == "a/utils.py"


@pytest.fixture
def parses(monkeypatch):
    """The files analysed from their text, and the modules parsed for their imports."""
    seen: list[str] = []
    analyze = Linter.analyze_text
    bindings = imports_module.import_summary

    def counting(self, text, path, **options):
        seen.append(path)
        return analyze(self, text, path, **options)

    def counting_imports(text, module):
        seen.append(f"imports of {module.name}")
        return bindings(text, module)

    monkeypatch.setattr(Linter, "analyze_text", counting)
    monkeypatch.setattr(imports_module, "import_summary", counting_imports)
    monkeypatch.setattr("tapelint.run.workspace.import_summary", counting_imports)
    return seen


def test_an_unchanged_rerun_parses_nothing(project, parses):
    make_project(project)
    cold = check_json()
    assert "imports of pkg" in parses
    assert parses.count("train.py") == 2  # the first pass, then with the index
    parses.clear()
    assert check_json() == cold
    assert parses == []


def test_editing_a_helper_module_checks_its_dependents_again(project, parses):
    make_project(project)
    assert ("train.py", 9, "pkg/grads.py", 7) in findings(check_json())
    parses.clear()
    write(project, "pkg/grads.py", FILTERED_GRADS)
    after = findings(check_json())
    assert ("train.py", 9, "pkg/grads.py", 7) not in after
    assert ("train.py", 16, "pkg/update.py", 2) in after
    # The helper's own first pass and its dependent's second: nothing else is parsed (the
    # dependent's first pass, and every other file, come from the cache).
    assert sorted(parses) == ["pkg/grads.py", "train.py"]
    parses.clear()
    write(project, "pkg/grads.py", "\n" + RAW_GRADS)  # the helper's lines move down
    assert ("train.py", 9, "pkg/grads.py", 8) in findings(check_json())
    parses.clear()
    write(project, "pkg/grads.py", RAW_GRADS)
    assert ("train.py", 9, "pkg/grads.py", 7) in findings(check_json())
    assert parses == []  # both results of this content are still in the cache


HANDS_BACK = """\
import tensorflow as tf


def forward(model, x):
    with tf.GradientTape({persistent}) as tape:
        loss = tf.reduce_mean(model(x))
    return loss, tape
"""

TWO_CALLS = """\
from steps import forward


def step(model, x):
    loss, tape = forward(model, x)
    first = tape.gradient(loss, model.trainable_variables)
    second = tape.gradient(loss, model.trainable_variables)
    del tape
    return first, second
"""


def test_editing_a_helper_that_hands_back_its_tape_checks_its_callers_again(project, parses):
    write(project, "steps.py", HANDS_BACK.format(persistent=""))
    write(project, "train.py", TWO_CALLS)

    def codes() -> set[tuple[str, int, str]]:
        return {(d["path"], d["line"], d["code"]) for d in json.loads(check_json())}

    assert codes() == {("train.py", 7, "TAP105")}
    parses.clear()
    write(project, "steps.py", HANDS_BACK.format(persistent="persistent=True"))
    assert codes() == set()
    assert sorted(parses) == ["steps.py", "train.py"]  # the helper, then its caller again
    parses.clear()
    write(project, "steps.py", HANDS_BACK.format(persistent=""))
    assert codes() == {("train.py", 7, "TAP105")}
    assert parses == []  # both results of this content are still in the cache


def test_a_module_that_appears_is_seen_by_the_next_run(project):
    make_project(project)
    write(project, "scripts/run.py", EXAMPLE)
    assert not any(d["path"] == "scripts/run.py" for d in json.loads(check_json()))
    write(project, "scripts/utils.py", RAW_GRADS)
    found = [d for d in json.loads(check_json()) if d["path"] == "scripts/run.py"]
    assert [(d["line"], d["related"][0]["path"]) for d in found] == [(8, "scripts/utils.py")]


PACKAGE_INIT = """\
import tensorflow as tf

from .grads import compute_grads


def train(model, optimizer, x):
    grads = compute_grads(model, x)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_package_init_uses_its_submodules_helpers(project, parses):
    write(project, "pkg/__init__.py", PACKAGE_INIT)
    write(project, "pkg/grads.py", RAW_GRADS)
    assert findings(check_json()) == {("pkg/__init__.py", 8, "pkg/grads.py", 7)}
    write(project, "pkg/grads.py", FILTERED_GRADS)
    assert findings(check_json()) == set()


# ---------------------------------------------------------------------- notebooks
def notebook(*cells: str) -> str:
    document = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
            *(
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": source.splitlines(keepends=True),
                    "outputs": [],
                    "execution_count": None,
                }
                for source in cells
            ),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1)


def test_a_notebook_uses_the_projects_modules(project):
    make_project(project)
    write(
        project,
        "notebooks/train.ipynb",
        notebook(
            "import sys\nsys.path.append('..')\nfrom pkg import compute_grads\n",
            "grads = compute_grads(model, x)\n",
            "optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
        ),
    )
    write(project, "pyproject.toml", "[tool.tapelint]\n")
    output = json.loads(check_json("--no-cache", "notebooks"))
    assert [(d["cell"], d["line"], d["code"]) for d in output] == [(4, 1, "TAP401")]
    assert output[0]["related"][0]["path"] == "pkg/grads.py"


def test_related_places_in_a_notebook_name_their_cell(project):
    helper = (
        "import tensorflow as tf\n\n"
        "def update(optimizer, grads, variables):\n"
        "    optimizer.apply_gradients(zip(grads, variables))\n"
    )
    step = (
        "with tf.GradientTape() as tape:\n"
        "    loss = tf.reduce_mean(model(x))\n"
        "grads = tape.gradient(loss, model.trainable_variables)\n"
        "update(optimizer, grads, model.trainable_variables)\n"
    )
    write(project, "nb.ipynb", notebook(helper, "model = make()\n", step))
    output = json.loads(check_json("--no-cache"))
    assert [(d["cell"], d["line"], d["code"]) for d in output] == [(4, 4, "TAP401")]
    (related,) = output[0]["related"]
    assert (related["cell"], related["line"], related["column"]) == (2, 4, 5)
    assert "(cell 2:4)" in output[0]["message"]
    text = run_cli("check", "--no-cache", "nb.ipynb").stdout
    assert text.startswith("nb.ipynb:cell 4:4:1: TAP401 ")
    assert len(text.splitlines()) == 1


# ---------------------------------------------------------------------- SARIF
def test_sarif_carries_related_locations_and_validates(project):
    make_project(project)
    result = run_cli("check", "--no-cache", "--output-format", "sarif")
    log = json.loads(result.stdout)
    jsonschema.validate(log, SCHEMA)
    located = {
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            related["physicalLocation"]["artifactLocation"]["uri"],
            related["physicalLocation"]["region"]["startLine"],
        )
        for r in log["runs"][0]["results"]
        for related in r.get("relatedLocations", [])
    }
    assert located == EXPECTED
    step = next(
        r
        for r in log["runs"][0]["results"]
        if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    )
    assert step["relatedLocations"] == [
        {
            "id": 1,
            "physicalLocation": {
                "artifactLocation": {"uri": "pkg/grads.py", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 7, "startColumn": 12},
            },
            "message": {"text": "`tape.gradient` in `compute_grads`"},
        }
    ]


# ---------------------------------------------------------------------- a long-lived process
def test_a_language_server_keeps_one_project_and_sees_open_buffers(project):
    """What `tapelint server` does: one `Project` per project root, the text of open
    documents handed to it, each check through `run_stdin`, and `dependents` to know which
    open documents to check again when one changes."""
    from tapelint.run.runner import Options, run_stdin
    from tapelint.run.workspace import Project
    from tapelint.settings.config import Settings

    make_project(project)
    settings = Settings(root=project)
    workspace = Project(settings, watch_disk=True)
    train = (project / "train.py").read_bytes()

    def lines() -> list[int]:
        result = run_stdin(train, "train.py", settings, Options(), project=workspace)
        return [d.start.line for d in result.report.diagnostics]

    assert lines() == [9, 16]
    grads = os.path.realpath(project / "pkg" / "grads.py")
    assert workspace.dependents(grads) == {os.path.realpath(project / "train.py")}
    workspace.set_source(grads, FILTERED_GRADS.encode())  # edited in the editor, not saved
    assert lines() == [16]
    workspace.drop_source(grads)  # closed without saving
    assert lines() == [9, 16]
    write(project, "pkg/update.py", "def apply_all(optimizer, grads, variables):\n    pass\n")
    assert lines() == [9]  # saved by another program: seen on disk
