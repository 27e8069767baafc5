"""Rules keep their public identity, their documentation, and their place in the README."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tapelint.findings.diagnostics import Severity
from tapelint.linter.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent

# The catalogue's fixed identities (RULES.md): code -> (name, severity). Codes are public API.
CATALOGUE = {
    "TAP001": ("syntax-error", Severity.ERROR),
    "TAP002": ("unreadable-file", Severity.ERROR),
    "TAP101": ("loss-outside-tape", Severity.ERROR),
    "TAP102": ("unnecessary-persistent-tape", Severity.WARNING),
    "TAP103": ("persistent-tape-not-released", Severity.WARNING),
    "TAP104": ("gradient-inside-tape", Severity.WARNING),
    "TAP105": ("non-persistent-tape-reused", Severity.ERROR),
    "TAP106": ("unrelated-work-in-tape", Severity.WARNING),
    "TAP107": ("unused-tape", Severity.WARNING),
    "TAP201": ("unwatched-source", Severity.ERROR),
    "TAP202": ("watch-accessed-variables-off", Severity.ERROR),
    "TAP203": ("gradient-wrt-all-variables", Severity.WARNING),
    "TAP204": ("watch-keras-variables", Severity.ERROR),
    "TAP301": ("numpy-in-differentiable-path", Severity.ERROR),
    "TAP302": ("non-differentiable-op-in-path", Severity.ERROR),
    "TAP303": ("missing-training-flag", Severity.WARNING),
    "TAP304": ("regularization-losses-ignored", Severity.WARNING),
    "TAP401": ("unfiltered-apply-gradients", Severity.WARNING),
    "TAP402": ("gradient-variable-mismatch", Severity.ERROR),
    "TAP403": ("none-unsafe-gradient-transform", Severity.ERROR),
    "TAP404": ("optimizer-variables-changed", Severity.ERROR),
    "TAP501": ("tf-function-retracing", Severity.WARNING),
    "TAP502": ("state-created-in-step", Severity.ERROR),
    "TAP503": ("python-side-effect-in-tf-function", Severity.ERROR),
}

# Rules whose RULES.md default is `preview`: they run only when selected.
PREVIEW = {"TAP106", "TAP107", "TAP304", "TAP404", "TAP503"}

RULES = list(all_rules())


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_default_matches_the_catalogue(rule):
    assert rule.preview == (rule.code in PREVIEW)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_identity_matches_the_catalogue(rule):
    assert rule.code in CATALOGUE
    assert (rule.name, rule.severity) == CATALOGUE[rule.code]


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_documentation_has_the_required_sections(rule):
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "Use instead"):
        assert heading in doc, f"{rule.code} lacks {heading!r}"
    assert rule.summary()


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_that_builds_fixes_documents_their_safety(rule):
    source = Path(__import__(rule.__module__, fromlist=["_"]).__file__).read_text()
    if "FixIntent(" in source:
        assert "## Fix safety" in rule.documentation()


def test_one_rule_per_module():
    for path in sorted((ROOT / "rules").rglob("*.py")):
        if path.name.startswith("_"):
            continue  # a package, or a family's private analysis
        classes = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)]
        assert len(classes) == 1, f"{path.name} defines {len(classes)} classes"


def test_readme_lists_every_rule():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"| {rule.code} | {rule.name} |" in readme, f"{rule.code} missing from README"


def test_nothing_imports_tensorflow_outside_the_validator():
    for path in (ROOT / "tapelint").rglob("*.py"):
        if "validate" in path.relative_to(ROOT / "tapelint").parts:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "tensorflow" for n in names), path


def test_checking_never_imports_tensorflow():
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tapelint.linter.engine import Linter\n"
        "from tapelint.linter.registry import all_rules\n"
        "linter = Linter(all_rules())\n"
        f"for p in Path({str(ROOT / 'fixtures')!r}).rglob('*.py'):\n"
        "    linter.check_bytes(p.read_bytes(), str(p))\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
        "assert 'numpy' not in sys.modules, 'numpy was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_readme_first_example_output_is_what_tapelint_prints():
    import re
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command, output = re.search(
        r"```text\n\$ tapelint (check [^\n]+)\n(.*?)```", readme, re.DOTALL
    ).groups()
    result = subprocess.run(
        [sys.executable, "-m", "tapelint", *command.split(), "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.stdout == output
