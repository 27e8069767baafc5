"""The floor plan holds: the import contracts of pyproject.toml (`[tool.importlinter]`: no
package imports one above it, the semantic layer imports no rule, rule families are
independent of each other), checked by import-linter, and a semantic layer that names no rule.

import-linter reads a package from its folders, so it is run on the layout as installed:
`tapelint/` with `rules/` as `tapelint/rules/`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULE_CODE = re.compile(r"TAP\d{3}")


def _installed_layout(target: Path) -> Path:
    for folder in ("tapelint", "rules"):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if folder == "rules":
                relative = Path("tapelint") / relative
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / relative)
    return target


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    command = shutil.which("lint-imports")
    assert command, "import-linter is not installed; run: pip install -e '.[test]'"
    return subprocess.run(
        [command, str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_the_import_contracts_are_kept(tmp_path: Path) -> None:
    result = _lint_imports(_installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_an_import_against_the_floor_plan_breaks_a_contract(tmp_path: Path) -> None:
    tree = _installed_layout(tmp_path)
    (tree / "tapelint/semantic/upward.py").write_text("import tapelint.rules.updates._lengths\n")
    (tree / "tapelint/parsing/upward.py").write_text("import tapelint.linter.engine\n")
    (tree / "tapelint/rules/watching/across.py").write_text(
        "import tapelint.rules.tape_life._lifecycle\n"
    )
    result = _lint_imports(tree)
    assert result.returncode == 1
    assert "Contracts: 0 kept, 3 broken." in result.stdout, result.stdout[-4000:]


def _naming_rules(folder: Path) -> list[str]:
    return [
        f"{path.relative_to(folder.parent)}:{number}"
        for path in sorted(folder.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if RULE_CODE.search(line)
    ]


def test_the_semantic_layer_names_no_rule() -> None:
    """It answers questions about a module; which rule asks one is the rule's business (a
    question only one family asks lives in that family's package)."""
    assert _naming_rules(ROOT / "tapelint" / "semantic") == []


def test_a_rule_code_in_the_semantic_layer_is_seen(tmp_path: Path) -> None:
    folder = tmp_path / "semantic"
    folder.mkdir()
    (folder / "m.py").write_text('"""Where gradients go."""\n# what TAP401 asks\n')
    assert _naming_rules(folder) == ["semantic/m.py:2"]
