"""The pre-commit hook, through the real pre-commit: `pre-commit try-repo` against this
repository, and the two configuration snippets the documentation gives (a commit pin and a
release tag) against a clone of it.

pre-commit clones the repository (try-repo: at HEAD with the uncommitted changes, when there
are any; the snippets: at the committed HEAD), builds an environment and pip-installs tapelint
into it, so each run takes a while; the module keeps to four runs. Run from a clean clone this
tests exactly what users get.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import CLEAN, LOSS_OUTSIDE
from tests.fixture_markers import FIXTURES

ROOT = FIXTURES.parent


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


# A step whose gradients come from a helper of another module (`helpers.py`, not staged:
# the hook is given `step.py` alone and resolves its import in the repository).
STEP = """\
from helpers import compute_grads


def step(model, optimizer, x):
    grads = compute_grads(model, x)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's git repository with one bad file, one bad notebook, one good file, and a
    step that is bad because of a helper in another module."""
    repo = tmp_path_factory.mktemp("user_repo")
    git("init", "-q", cwd=repo)
    (repo / "helpers.py").write_text(CLEAN.replace("grads_of", "compute_grads"))
    (repo / "step.py").write_text(STEP)
    (repo / "bad.py").write_text(LOSS_OUTSIDE)
    shutil.copy(FIXTURES / "notebooks" / "flag_loss_in_next_cell.ipynb", repo / "nb.ipynb")
    (repo / "good.py").write_text(CLEAN)
    (repo / "README.md").write_text("with tf.GradientTape() as tape  (not code)\n")
    return repo


def try_repo(repo: Path, *staged: str) -> subprocess.CompletedProcess[str]:
    git("reset", "-q", cwd=repo)
    git("add", *staged, cwd=repo)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PRE_COMMIT")}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "tapelint", "--color=never"],
        cwd=repo,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_hook_fails_on_a_staged_bad_file_and_prints_the_findings(user_repo: Path) -> None:
    result = try_repo(user_repo, "bad.py", "nb.ipynb", "good.py", "README.md", "step.py")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "tapelint" in output and "Failed" in output
    assert "bad.py:8:12: TAP101 " in output
    assert "nb.ipynb:cell 4:2:9: TAP101 " in output
    assert "step.py:6:5: TAP401 " in output and "(helpers.py:7)" in output
    findings = [line for line in output.splitlines() if ": TAP" in line]
    assert len(findings) == 3, output  # good.py is clean, README.md is not Python


def test_hook_passes_on_a_staged_good_file(user_repo: Path) -> None:
    result = try_repo(user_repo, "good.py")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Passed" in output


# The configuration snippets the README and docs/integrations.md quote: one pinned to a
# commit (what works before a release), one to the release's tag.
SNIPPETS = ROOT / "docs" / "pre-commit"
PLACEHOLDER_URL = "https://github.com/OWNER/tapelint"


def test_both_snippets_are_quoted_verbatim_and_the_release_pins_this_version() -> None:
    # The README shows the snippet that works before a release; the integrations page both.
    quoted = {
        ROOT / "README.md": ("pinned-commit.yaml",),
        ROOT / "docs" / "integrations.md": ("pinned-commit.yaml", "release.yaml"),
    }
    for page, snippets in quoted.items():
        blocks = re.findall(r"```yaml\n(.*?)```", page.read_text("utf-8"), flags=re.DOTALL)
        for snippet in snippets:
            assert (SNIPPETS / snippet).read_text("utf-8") in blocks, (page.name, snippet)
    [release] = yaml.safe_load((SNIPPETS / "release.yaml").read_text("utf-8"))["repos"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    assert release["rev"] == f"v{version}"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this repository at HEAD standing for the one users get tapelint from, with
    the release's tag that a release will add."""
    clone = tmp_path_factory.mktemp("upstream") / "tapelint"
    git("clone", "-q", str(ROOT), str(clone), cwd=clone.parent)
    [release] = yaml.safe_load((SNIPPETS / "release.yaml").read_text("utf-8"))["repos"]
    git("tag", release["rev"], cwd=clone)
    return clone


@pytest.mark.parametrize("snippet", ["pinned-commit.yaml", "release.yaml"])
def test_snippet_runs_the_hook_with_the_real_pre_commit(
    snippet: str, upstream: Path, tmp_path: Path
) -> None:
    config = (SNIPPETS / snippet).read_text("utf-8").replace(PLACEHOLDER_URL, str(upstream))
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=upstream, capture_output=True, text=True, check=True
    ).stdout.strip()
    config = re.sub(r"rev: [0-9a-f]{40}", f"rev: {head}", config)
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "bad.py").write_text(LOSS_OUTSIDE)
    (repo / "good.py").write_text(CLEAN)
    git("add", ".", cwd=repo)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PRE_COMMIT")}
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color=never"],
        cwd=repo,
        env={**environment, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "bad.py:8:12: TAP101 " in output
    assert [line for line in output.splitlines() if ": TAP" in line] == [
        line for line in output.splitlines() if line.startswith("bad.py:8:12: TAP101 ")
    ]
