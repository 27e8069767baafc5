"""tapelint as a release ships it: `python -m build` makes an sdist and a wheel from a copy of
the working tree, and the wheel, installed into a fresh virtual environment (its dependencies
from the package index, as `pip install tapelint` gets them), checks a file and reports the
version its metadata gives. The sdist builds the wheel (`build` makes the wheel from the
unpacked sdist) and holds what its tests need."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from tapelint.linter.registry import all_rules
from tapelint.validate.command import INSTALL_HINT

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
FIXTURE = "fixtures/TAP101/flag_loss_after_block.py"


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**environment, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from the tracked and untracked (not ignored) files."""
    work = tmp_path_factory.mktemp("packaging")
    listed = run("git", "ls-files", "-co", "--exclude-standard", "-z", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    source = work / "source"
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = run(sys.executable, "-m", "build", "--outdir", work / "dist", source)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return work / "dist"


def test_build_makes_one_sdist_and_one_wheel_of_this_version(dist: Path) -> None:
    assert sorted(p.name for p in dist.iterdir()) == [
        f"tapelint-{VERSION}-py3-none-any.whl",
        f"tapelint-{VERSION}.tar.gz",
    ]


def test_the_wheel_holds_every_rule_and_the_validator_site(dist: Path) -> None:
    [wheel] = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for rule in all_rules():
        module = Path(sys.modules[rule.__module__].__file__)
        assert f"tapelint/rules/{module.parent.name}/{module.name}" in names, rule.code
    assert "tapelint/validate/site/sitecustomize.py" in names
    assert not any(name.startswith(("rules/", "tests/", "fixtures/")) for name in names)
    info = f"tapelint-{VERSION}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "tapelint = tapelint.__main__:main" in entry_points
    assert "TAP = tapelint.integrations.flake8_plugin:TapelintChecker" in entry_points


def test_the_sdist_holds_the_docs_the_changelog_and_what_the_tests_need(dist: Path) -> None:
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for name in (
        "LICENSE",
        "CHANGELOG.md",
        "mkdocs.yml",
        ".pre-commit-hooks.yaml",
        "docs/index.md",
        "examples/quickstart.py",
        FIXTURE,
        "tests/conftest.py",
    ):
        assert name in names, name


def test_the_installed_wheel_checks_a_file_and_knows_its_version(
    dist: Path, tmp_path: Path
) -> None:
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    [wheel] = dist.glob("*.whl")
    installed = run(python, "-m", "pip", "install", "-q", wheel)
    assert installed.returncode == 0, installed.stderr
    # Run outside the checkout, whose own `tapelint/` would otherwise be imported.
    where = run(python, "-c", "import tapelint; print(tapelint.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(environment), where

    shutil.copy(ROOT / FIXTURE, tmp_path / "train.py")
    checked = run(
        environment / "bin" / "tapelint",
        "check",
        "--output-format",
        "json",
        "train.py",
        cwd=tmp_path,
    )
    assert checked.returncode == 1, checked.stderr
    assert [(d["code"], d["line"]) for d in json.loads(checked.stdout)] == [("TAP101", 16)]

    version = run(environment / "bin" / "tapelint", "--version", cwd=tmp_path)
    metadata = run(
        python, "-c", "import importlib.metadata as m; print(m.version('tapelint'))", cwd=tmp_path
    )
    assert metadata.stdout.strip() == VERSION
    assert version.stdout.strip() == f"tapelint {VERSION}"
    tensorflow = run(python, "-c", "import tensorflow", cwd=tmp_path)
    assert tensorflow.returncode != 0  # checking never needs it


def test_the_missing_tensorflow_hint_names_what_the_validate_extra_installs() -> None:
    [requirement] = PROJECT["optional-dependencies"]["validate"]
    package = re.match(r"[A-Za-z0-9_.-]+", requirement).group()
    assert f"(which installs `{package}`)" in INSTALL_HINT
