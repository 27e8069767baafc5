"""What the README and the docs claim, checked against the repository and a real run: the
README's length, links to files that exist, no citation of a file the repository does not
have, the Quick start's numbers against the validation it describes, and the documentation
addresses (`mkdocs serve` serves what the rule links name; TAPELINT_DOCS_URL moves them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# Pages docs/gen_pages.py generates at build time: links to them are links to the site.
GENERATED = {DOCS / "changelog.md", DOCS / "rules"}
LINK = re.compile(r"\]\(([^)\s]+)\)")
EXAMPLE = "examples/quickstart.py"


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    targets = (target.split("#", 1)[0] for target in LINK.findall(text))
    return [t for t in targets if t and not re.match(r"[a-z][a-z+.-]*:", t)]


def test_the_readme_is_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines"


def test_every_relative_link_points_to_a_file_that_exists() -> None:
    broken = []
    for page in PAGES:
        links = relative_links(page)
        for target in links:
            path = (page.parent / target).resolve()
            generated = any(path == g or g in path.parents for g in GENERATED)
            if not path.exists() and not generated:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert relative_links(README), "the README links to no file"
    assert not broken, broken


def test_no_page_cites_a_rules_md() -> None:
    citing = [p.name for p in PAGES if "RULES.md" in p.read_text(encoding="utf-8")]
    assert not citing, citing


def quoted_numbers(text: str) -> tuple[int, int]:
    """The optimizer steps and the optimizer's builds a text states."""
    steps = re.search(r"after (\d+) optimizer steps", text)
    builds = re.search(r"built (\d+) times", text)
    assert steps and builds, text
    return int(steps.group(1)), int(builds.group(1))


def test_the_quick_start_quotes_the_numbers_its_validation_prints() -> None:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    assert f"tapelint validate {EXAMPLE}" in section
    run = subprocess.run(
        [sys.executable, "-m", "tapelint", "validate", EXAMPLE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert quoted_numbers(" ".join(section.split())) == quoted_numbers(output)


def test_the_site_is_served_at_the_root_the_rule_links_name() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert urlparse(config["site_url"]).path == "/", config["site_url"]


def test_tapelint_docs_url_moves_the_rule_links(tmp_path: Path) -> None:
    (tmp_path / "step.py").write_text((ROOT / EXAMPLE).read_text(encoding="utf-8"))
    environment = {**os.environ, "TAPELINT_DOCS_URL": "http://127.0.0.1:8000"}
    run = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--output-format", "json", "step.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
    )
    findings = json.loads(run.stdout)
    assert findings, run.stderr
    for finding in findings:
        assert finding["url"] == f"http://127.0.0.1:8000/rules/{finding['code']}/", finding
