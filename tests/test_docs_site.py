"""The documentation site builds with `mkdocs build --strict` (a broken link or anchor, or a
page left out of the navigation, fails it), and its generated pages say what the code does:
one page per rule with the rule's own documentation, at the URL `Rule.docs_url()` gives, and a
command-line reference that lists every option."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from tapelint.cli import cli
from tapelint.findings.rule import DOCS_URL
from tapelint.linter.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site_dir


def text_of(page: Path) -> str:
    """The page's text without its tags (inline ones split no words), entities decoded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page.read_text("utf-8"))).split())


def words(markdown: str) -> str:
    """Inline Markdown reduced to what a reader sees (no backticks, no emphasis marks outside
    code), whitespace collapsed."""
    parts = markdown.split("`")
    seen = [part if i % 2 else part.replace("*", "") for i, part in enumerate(parts)]
    return " ".join("".join(seen).split())


def test_the_site_url_is_where_rule_links_point() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_url"] == DOCS_URL


@pytest.mark.parametrize("rule", all_rules(), ids=[r.code for r in all_rules()])
def test_every_rule_has_its_documentation_at_its_url(site: Path, rule) -> None:
    page = site / rule.docs_url().removeprefix(DOCS_URL) / "index.html"
    assert page.is_file(), f"no page for {rule.code} at {rule.docs_url()}"
    text = text_of(page)
    assert f"{rule.code} {rule.name}" in text
    why = rule.documentation().split("## Why is this bad?", 1)[1].split("\n## ", 1)[0]
    first_paragraph = words(why.strip().split("\n\n", 1)[0])
    assert first_paragraph in text


def test_the_rules_index_links_every_rule(site: Path) -> None:
    index = (site / "rules" / "index.html").read_text(encoding="utf-8")
    for rule in all_rules():
        assert f'href="{rule.code}/"' in index, rule.code


def test_the_command_line_page_lists_every_command_and_option(site: Path) -> None:
    text = text_of(site / "cli" / "index.html")
    for name, command in cli.commands.items():
        assert f"tapelint {name}" in text, name
        for parameter in command.params:
            if isinstance(parameter, click.Option) and not parameter.hidden:
                for option in parameter.opts:
                    assert option in text, f"tapelint {name} {option}"


def test_the_changelog_page_is_the_repository_changelog(site: Path) -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first_entry = next(line for line in changelog.splitlines() if line.startswith("- "))
    assert words(first_entry[2:])[:60] in text_of(site / "changelog" / "index.html")


def slug(heading: str) -> str:
    """A heading's anchor, as both GitHub and MkDocs make it for plain headings."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_links_only_to_files_and_headings_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", readme)
    local = [(path, anchor) for path, anchor in targets if "://" not in path]
    assert local, "the README links to no page of the docs"
    for path, anchor in local:
        assert (ROOT / path).exists(), path
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text("utf-8"), re.MULTILINE)
            assert anchor in {slug(h) for h in headings}, f"{path}#{anchor}"
