"""Which cell lines bring a file's code in (`%run`, `%load`, a copy `%load` made), read as
IPython reads their arguments, and how the files are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapelint.linter.notebooks.cell_files import (
    FileUse,
    NotebookFiles,
    file_uses,
    load_target,
    mentions_files,
    run_target,
)
from tapelint.sources.ipython_input import CellCode, cell_code


@pytest.mark.parametrize(
    ("arguments", "target"),
    [
        ("setup.py", "setup.py"),
        ("-i setup.py", "setup.py"),
        ("-t -N 3 utils/setup.py --epochs 2", "utils/setup.py"),
        ("-t -N3 setup", "setup"),
        ("'my setup.py'", "my setup.py"),
        ("-m package.setup", None),  # a module: not followed
        ("notebook.ipynb", None),
        ("script.ipy", None),
        ("$path", None),  # IPython expands it
        ("{name}.py", None),
        ("-x setup.py", None),  # an option %run does not have: the magic fails
        ("'unclosed", None),
        ("", None),
    ],
)
def test_run_target_reads_arguments_as_ipython_does(arguments: str, target: str | None) -> None:
    assert run_target(arguments) == target


@pytest.mark.parametrize(
    ("arguments", "target"),
    [
        ("helpers.py", "helpers.py"),
        ("-y helpers.py", "helpers.py"),
        ("-r 5-10 helpers.py", None),  # some lines only
        ("-s train_step helpers.py", None),
        ("", None),
    ],
)
def test_load_target_is_a_whole_file(arguments: str, target: str | None) -> None:
    assert load_target(arguments) == target


def uses(source: str) -> tuple[FileUse, ...]:
    lines = source.split("\n")
    code = cell_code(lines)
    assert isinstance(code, CellCode)
    return file_uses(lines, code)


def test_run_lines_at_the_top_level_of_a_cell() -> None:
    found = uses("%matplotlib inline\n%run setup.py\nif ready:\n    %run other.py\nx = 1")
    assert found == (FileUse("run", "setup.py", ordinal=1),)


def test_an_indented_cell_and_a_cell_magic_body_keep_their_run_lines() -> None:
    assert uses("  %run setup.py\n  x = 1") == (FileUse("run", "setup.py", ordinal=0),)
    assert uses("%%time\n%run setup.py") == (FileUse("run", "setup.py", ordinal=1),)


def test_load_counts_only_alone_in_its_cell() -> None:
    assert uses("# the helpers\n%load helpers.py\n") == (FileUse("load", "helpers.py", ordinal=0),)
    assert uses("%load helpers.py\nx = 1") == ()


def test_a_copy_load_made() -> None:
    assert uses("# %load helpers.py\nimport tensorflow as tf") == (FileUse("copy", "helpers.py"),)
    assert uses("# %load -r 1-5 helpers.py\nimport tensorflow as tf") == ()
    assert uses("#%load helpers.py\nx = 1") == ()  # not IPython's line


def test_mentions_files() -> None:
    assert mentions_files(b'"%run setup.py"') and mentions_files(b'"# %load x.py"')
    assert not mentions_files(b'"import setup"')
    # `%load_ext autoreload` is in many notebooks without a tape: it is not `%load`.
    assert not mentions_files(b'"%load_ext autoreload\\n", "%runs"')


def test_files_are_read_beside_the_notebook(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "setup.py").write_text("# -*- coding: utf-8 -*-\nx = 1\n")
    files = NotebookFiles.beside(str(tmp_path / "nb.ipynb"), "work/nb.ipynb")
    for written in ("lib/setup.py", "lib/setup"):
        loaded = files.read(written)
        assert loaded is not None
        assert (loaded.path, loaded.lines) == (
            "work/lib/setup.py",
            ("# -*- coding: utf-8 -*-", "x = 1"),
        )
        assert loaded.copied == ((2, "x = 1"),)  # %load leaves the coding cookie out
    assert files.read("lib/missing.py") is None
    assert files.read("~/setup.py") is None


def test_what_cannot_stand_in_a_notebook_is_prepared_or_refused(tmp_path: Path) -> None:
    (tmp_path / "future.py").write_text(
        "from __future__ import annotations\n# tapelint: noqa\nx = 1\n"
    )
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "big.py").write_text("x = 1\n" * 100)
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    files = NotebookFiles.beside(str(tmp_path / "nb.ipynb"), "nb.ipynb", max_size=100)
    future = files.read("future.py")
    assert future is not None and future.lines == ("", "", "x = 1")
    assert [files.read(name) for name in ("broken.py", "big.py", "latin.py")] == [None] * 3


def test_an_unsaved_buffer_stands_for_its_file(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("x = 1\n")
    real = str((tmp_path / "setup.py").resolve())
    files = NotebookFiles.beside(
        str(tmp_path / "nb.ipynb"), "nb.ipynb", buffers=((real, b"y = 2\n"),)
    )
    loaded = files.read("setup.py")
    assert loaded is not None and loaded.lines == ("y = 2",)
