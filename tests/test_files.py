"""Which files get checked: .gitignore, default excludes, explicit paths, symlinks, bad paths."""

from __future__ import annotations

import json
import os

import pytest

from tapelint.sources.discovery import SourceKind, discover
from tests.cli_helpers import CLEAN, LOSS_OUTSIDE, run_cli, run_subprocess, write


def checked(result) -> list[str]:
    return [path for path, _ in result.codes()]


def test_root_gitignore(project):
    write(project, ".gitignore", "ignored.py\ngenerated/\n# a comment\n*.tmp.py\n")
    for name in ["ignored.py", "generated/model.py", "sub/ignored.py", "x.tmp.py", "train.py"]:
        write(project, name, LOSS_OUTSIDE)
    assert checked(run_cli("check")) == ["train.py"]


def test_nested_gitignore_is_relative_to_its_own_directory(project):
    write(project, ".gitignore", "skip_*.py\n")
    write(project, "sub/.gitignore", "/local.py\n!skip_keep.py\nnested/\n")
    names = [
        "local.py",  # `/local.py` in sub/ is anchored to sub/
        "sub/local.py",
        "sub/deeper/local.py",
        "skip_me.py",
        "sub/skip_me.py",
        "sub/skip_keep.py",  # re-included by the deeper .gitignore
        "sub/nested/a.py",
        "nested/a.py",
    ]
    for name in names:
        write(project, name, LOSS_OUTSIDE)
    assert checked(run_cli("check")) == [
        "local.py",
        "nested/a.py",
        "sub/deeper/local.py",
        "sub/skip_keep.py",
    ]


def test_gitignore_above_a_checked_subdirectory_applies(project):
    write(project, ".gitignore", "sub/gen/\n")
    write(project, "sub/gen/a.py", LOSS_OUTSIDE)
    write(project, "sub/b.py", LOSS_OUTSIDE)
    assert checked(run_cli("check", "sub")) == ["sub/b.py"]


@pytest.mark.parametrize(
    "directory",
    [".git", ".venv", "venv", "__pycache__", ".tox", "build", "dist", "site-packages",
     "node_modules", ".mypy_cache", "_build", "pkg/build", "notebooks/.ipynb_checkpoints"],
)  # fmt: skip
def test_default_excludes(project, directory):
    write(project, f"{directory}/x.py", LOSS_OUTSIDE)
    write(project, "train.py", LOSS_OUTSIDE)
    assert checked(run_cli("check")) == ["train.py"]


def test_explicit_file_is_checked_even_when_excluded(project):
    write(project, ".gitignore", "ignored.py\n")
    write(project, "venv/x.py", LOSS_OUTSIDE)
    write(project, "ignored.py", LOSS_OUTSIDE)
    result = run_cli("check", "venv/x.py", "ignored.py")
    assert checked(result) == ["ignored.py", "venv/x.py"]


def test_force_exclude_applies_excludes_to_explicit_files(project):
    write(project, ".gitignore", "ignored.py\n")
    write(project, "venv/x.py", LOSS_OUTSIDE)
    write(project, "ignored.py", LOSS_OUTSIDE)
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "--force-exclude", "venv/x.py", "ignored.py", "train.py")
    assert checked(result) == ["train.py"]
    result = run_cli("check", "--force-exclude", "venv")
    assert (result.exit_code, result.stdout) == (0, "")


def test_explicit_excluded_directory_is_walked(project):
    write(project, "build/gen.py", LOSS_OUTSIDE)
    write(project, "build/__pycache__/x.py", LOSS_OUTSIDE)
    assert checked(run_cli("check", "build")) == ["build/gen.py"]


def test_explicit_file_with_another_suffix_is_checked_as_python(project):
    write(project, "train_script", LOSS_OUTSIDE)
    write(project, "notes.txt", LOSS_OUTSIDE)
    assert checked(run_cli("check", "train_script")) == ["train_script"]
    assert checked(run_cli("check")) == []


def test_paths_given_twice_are_checked_once(project):
    write(project, "sub/a.py", LOSS_OUTSIDE)
    result = run_cli("check", ".", "sub", "sub/a.py", "./sub/../sub/a.py", os.path.abspath("sub"))
    assert checked(result) == ["sub/a.py"]
    assert result.stderr == "Found 1 problem in 1 file.\n"


def test_nonexistent_path_is_reported_and_the_rest_checked(project):
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_cli("check", "missing.py", "train.py", "gone/")
    assert result.exit_code == 2
    assert checked(result) == ["train.py"]
    assert "error: missing.py: no such file or directory\n" in result.stderr
    assert "error: gone/: no such file or directory\n" in result.stderr
    # --exit-zero is about diagnostics, not about paths that do not exist.
    assert run_cli("check", "--exit-zero", "missing.py").exit_code == 2


def test_symlink_loop_does_not_hang(project):
    write(project, "pkg/train.py", LOSS_OUTSIDE)
    os.symlink("..", project / "pkg" / "up")
    os.symlink("loop.py", project / "loop.py")  # a file symlink to itself
    os.symlink(project / "pkg", project / "pkg" / "again")
    result = run_subprocess("check", cwd=project, timeout=60)
    assert result.codes() == [("loop.py", "TAP002"), ("pkg/train.py", "TAP101")]
    assert "loop.py:1:1: TAP002 cannot read: Too many levels of symbolic links" in result.stdout


def test_directory_symlinks_are_not_followed_and_file_symlinks_are_deduplicated(project):
    write(project, "real/train.py", LOSS_OUTSIDE)
    os.symlink("real", project / "alias_dir")
    os.symlink("real/train.py", project / "link.py")
    assert checked(run_cli("check")) == ["link.py"]
    # Named explicitly, a directory symlink is followed.
    assert checked(run_cli("check", "alias_dir")) == ["alias_dir/train.py"]


def test_directory_symlink_named_like_a_module_is_skipped(project):
    write(project, "real/train.py", LOSS_OUTSIDE)
    os.symlink("real", project / "pkg.py")
    result = run_cli("check")
    assert (result.exit_code, checked(result)) == (1, ["real/train.py"])


def test_fifo_is_unreadable_and_the_run_goes_on(project):
    os.mkfifo(project / "pipe.py")
    write(project, "train.py", LOSS_OUTSIDE)
    result = run_subprocess("check", cwd=project, timeout=60)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "pipe.py:1:1: TAP002 cannot read: not a regular file (a FIFO)"
    assert lines[1].startswith("train.py:8:12: TAP101 ")


def test_fifo_named_explicitly_is_unreadable(project):
    os.mkfifo(project / "pipe.py")
    result = run_subprocess("check", "pipe.py", cwd=project, timeout=60)
    assert (result.exit_code, result.codes()) == (1, [("pipe.py", "TAP002")])


def test_a_directory_named_like_a_module_is_walked(project):
    write(project, "odd.py/inner.py", LOSS_OUTSIDE)
    assert checked(run_cli("check")) == ["odd.py/inner.py"]


def test_unreadable_is_not_reported_when_tap002_is_ignored(project):
    os.mkfifo(project / "pipe.py")
    result = run_subprocess("check", "--ignore", "TAP002", cwd=project, timeout=60)
    assert (result.exit_code, result.stdout) == (0, "")


def test_notebooks_are_not_read_as_python(project):
    write(project, "nb.ipynb", "with tf.GradientTape() as tape\n")
    result = run_cli("check")
    assert result.exit_code == 1
    assert result.stdout.startswith("nb.ipynb:1:1: TAP002 not a notebook: invalid JSON")


def test_discover_yields_notebooks_as_notebooks(project):
    write(project, "nb.ipynb", "{}")
    write(project, "train.py", CLEAN)
    found = discover(["."], root=project, exclude=())
    assert [(f.path.name, f.kind) for f in found.files] == [
        ("nb.ipynb", SourceKind.NOTEBOOK),
        ("train.py", SourceKind.PYTHON),
    ]
    assert (found.missing, found.warnings) == ([], [])


def test_a_vendored_framework_source_tree_is_skipped(project):
    # A TensorFlow checkout carried inside a project, and a copy of Keras 3's source.
    for name in ["python/eager/backprop_test.py", "core/BUILD.py", "examples/train.py"]:
        write(project, f"chapter5/tf-checkout/tensorflow/{name}", LOSS_OUTSIDE)
    write(project, "third_party/keras/src/layers/core.py", LOSS_OUTSIDE)
    write(project, "third_party/keras/src/trainer.py", LOSS_OUTSIDE)
    # Look-alikes: the project's own `tensorflow/` backend package, a `keras/` package of
    # the project without Keras's `src/layers/`, and a framework repository checked itself.
    write(project, "backends/tensorflow/python/train.py", LOSS_OUTSIDE)
    write(project, "models/keras/src/train.py", LOSS_OUTSIDE)
    write(project, "train.py", LOSS_OUTSIDE)
    assert checked(run_cli("check")) == [
        "backends/tensorflow/python/train.py",
        "models/keras/src/train.py",
        "train.py",
    ]
    # Named on the command line, it is checked, as an excluded directory is.
    named = run_cli("check", "chapter5/tf-checkout/tensorflow/examples/train.py")
    assert checked(named) == ["chapter5/tf-checkout/tensorflow/examples/train.py"]


def test_the_framework_repository_itself_is_checked(project):
    write(project, "tensorflow/python/eager/backprop_test.py", LOSS_OUTSIDE)
    write(project, "tensorflow/core/BUILD.py", LOSS_OUTSIDE)
    assert checked(run_cli("check")) == [
        "tensorflow/core/BUILD.py",
        "tensorflow/python/eager/backprop_test.py",
    ]


def test_older_copies_of_a_file_are_skipped(project):
    for name in [
        "training.py",
        "training_BACKUP.py",  # beside the file it copies
        "train_old.py",  # ... whose original is not there: checked
        "nets/models.py",
        "nets/archive/models.py",  # a folder of old code under the package it copies
        "nets/archive/experiment.py",  # ... with nothing of that name above it: checked
        "old.py",  # a module called old
    ]:
        write(project, name, LOSS_OUTSIDE)
    assert checked(run_cli("check")) == [
        "nets/archive/experiment.py",
        "nets/models.py",
        "old.py",
        "train_old.py",
        "training.py",
    ]
    # Named on the command line, a copy is checked.
    assert checked(run_cli("check", "training_BACKUP.py")) == ["training_BACKUP.py"]


def test_notebook_copies_are_skipped(project):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": LOSS_OUTSIDE}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    for name in ["lesson.ipynb", "Copy of lesson.ipynb", "lesson (1).ipynb", "other (2).ipynb"]:
        write(project, name, notebook)
    assert checked(run_cli("check")) == ["lesson.ipynb", "other (2).ipynb"]
